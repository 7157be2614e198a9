// The two C++ runtime symbols the library's code references without ever
// using them here, defined so that the shim needs no libstdc++ (every
// program under the shim would otherwise load it; preload.map.in keeps these
// local, so they replace nothing of the program's):
//   operator delete (sized, and its unsized twin that GCC asks for): the deleting destructor of the
//   timekeeper's
//     time sources, which are placement-constructed in static storage and
//     never deleted;
//   __cxa_pure_virtual: a call through a half-constructed object, which
//     cannot happen.
// Either one being called is a bug: stop at once, as libstdc++ would.
#include <cstddef>

void operator delete(void*) noexcept { __builtin_trap(); }
void operator delete(void*, std::size_t) noexcept { __builtin_trap(); }

// The C++ ABI's name, which the compiler's vtables call.
// NOLINTNEXTLINE(bugprone-reserved-identifier,readability-identifier-naming)
extern "C" void __cxa_pure_virtual() { __builtin_trap(); }
