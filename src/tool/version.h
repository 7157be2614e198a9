// The one line both executables print for --version: the CMake project
// version (VCLOCK_VERSION, a compile definition of the executables) and
// the page ABI they write and read, which is what decides whether a
// vclockd and a library of different releases work together.
#ifndef VCLOCK_SRC_TOOL_VERSION_H_
#define VCLOCK_SRC_TOOL_VERSION_H_

#include <string>
#include <string_view>

#include "vclock/page.h"

#ifndef VCLOCK_VERSION
#  error "VCLOCK_VERSION: the executable's target must define it (CMakeLists.txt)"
#endif

namespace vclock::tool {

inline std::string version_line(std::string_view program) {
  return std::string(program) + " " + VCLOCK_VERSION + " (page ABI " +
         std::to_string(page_abi_major) + "." + std::to_string(page_abi_minor) + ")\n";
}

}  // namespace vclock::tool

#endif  // VCLOCK_SRC_TOOL_VERSION_H_
