// The vclock vDSO image: the four functions a program finds through
// AT_SYSINFO_EHDR, with the shim's semantics, freestanding (no libc, no
// relocation, no writable data of its own). See docs/vdso.md.
//
// Calling convention: the kernel's __vdso_* functions, which return 0 or
// -errno and never touch errno (glibc, musl and Go set errno themselves).
#include <time.h>

#include <cstdint>

#include "vclock/detail/arch.h"
#include "vclock/detail/ns_reader.h"
#include "vclock/detail/reader.h"
#include "vclock/ns_page.h"
#include "vclock/page.h"
#include "vdso/image_config.h"

struct timeval;
struct timezone;

extern "C" {
// The image's own ELF header, placed by the linker: its address is the load
// base, reached PC-relative (no relocation).
extern const char
    __ehdr_start[];  // NOLINT(bugprone-reserved-identifier,readability-identifier-naming):
                     // the linker names it
}

namespace vclock::vdso {
namespace {

namespace d = vclock::detail;
using arch::counter_ordering;
using d::clock_kind;

// syscall numbers, x86-64 (the image builds on x86-64 only for now).
constexpr long sys_gettimeofday = 96;
constexpr long sys_time = 201;
constexpr long sys_clock_gettime = 228;
constexpr long sys_clock_getres = 229;

[[gnu::always_inline]] inline long raw_syscall2(long nr, long a, long b) noexcept {
  long ret = 0;
  asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b) : "rcx", "r11", "memory");
  return ret;
}

[[gnu::always_inline]] inline config_page* the_config() noexcept {
  // __ehdr_start is hidden and defined by the linker: a lea, PC-relative.
  // The empty asm hides its provenance from the compiler, which would see a
  // write before the start of an object.
  auto base = reinterpret_cast<std::uintptr_t>(__ehdr_start);
  asm("" : "+r"(base));
  return reinterpret_cast<config_page*>(base - config_page_size);
}

// The config, or null while the installer has not published it.
[[gnu::always_inline]] inline const image_config* active_config() noexcept {
  const image_config& c = the_config()->config;
  if (__atomic_load_n(&c.magic, __ATOMIC_ACQUIRE) != config_magic) return nullptr;
  return &c;
}

// A relaxed load and store, not a locked add: a statistic may miss a count
// when two threads race on it, and in exchange the call costs no locked
// instruction, which would cost more than the rest of a served call.
[[gnu::always_inline]] inline void count(std::uint64_t* counter) noexcept {
  __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

using gettime_fn = int (*)(clockid_t, timespec*);
using gettimeofday_fn = int (*)(timeval*, struct timezone*);
using time_fn = long (*)(long*);
using getres_fn = int (*)(clockid_t, timespec*);

// The kernel's answer (its vDSO, else the system call), -errno on failure.
int kernel_gettime(const image_config* c, clockid_t clock, timespec* ts) noexcept {
  if (c != nullptr && c->kernel_clock_gettime != 0) {
    return reinterpret_cast<gettime_fn>(c->kernel_clock_gettime)(clock, ts);
  }
  return static_cast<int>(raw_syscall2(sys_clock_gettime, clock,
                                       static_cast<long>(reinterpret_cast<std::uintptr_t>(ts))));
}

// The kernel's time of a page clock in ns, for the careful path.
std::int64_t kernel_ns(const image_config* c, clockid_t clock) noexcept {
  timespec ts{};
  kernel_gettime(c, clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * d::ns_per_s + ts.tv_nsec;
}

template <clock_kind K, counter_ordering O>
std::int64_t host_ns_ordered(const image_config* c, const page& p) noexcept {
  const auto counter = [] { return arch::read_counter<O>(); };
  const auto careful = [c, &p] {
    return d::read_careful<K>(
        p, [] { return arch::read_counter<arch::strongest_ordering>(); },
        [c] { return kernel_ns(c, d::kernel_clock_of(K)); });
  };
  if constexpr (d::is_coarse(K)) {
    return d::read_coarse<K, d::as_ns>(p, careful);
  } else {
    return d::read_fast<K, d::as_ns>(p, counter, careful);
  }
}

// Host time of clock K in ns: the page through the configured ordering, or
// the kernel when there is no page.
template <clock_kind K>
std::int64_t host_ns(const image_config* c) noexcept {
  if (c->host_page == 0) return kernel_ns(c, d::kernel_clock_of(K));
  const page& p = *reinterpret_cast<const page*>(c->host_page);
  switch (static_cast<counter_ordering>(c->ordering)) {
    case counter_ordering::none:
      return host_ns_ordered<K, counter_ordering::none>(c, p);
    case counter_ordering::lfence:
      return host_ns_ordered<K, counter_ordering::lfence>(c, p);
    case counter_ordering::rdtscp:
      return host_ns_ordered<K, counter_ordering::rdtscp>(c, p);
    case counter_ordering::mfence:
    default:
      return host_ns_ordered<K, counter_ordering::mfence>(c, p);
  }
}

// Clock K's time in ns, virtual when a namespace page is mapped.
template <clock_kind K>
[[gnu::noinline]] std::int64_t clock_ns(const image_config* c) noexcept {
  if (c->ns_page == 0) return host_ns<K>(c);
  const ns_page& np = *reinterpret_cast<const ns_page*>(c->ns_page);
  for (;;) {
    const d::ns_view v = d::load_ns_view(np, d::family_of(K));
    const std::int64_t h = host_ns<K>(c);
    if (d::still_current(np, v)) return d::to_virtual(v, h);
  }
}

// Whether the image serves `clock` (a page or a namespace is mapped and the
// clock is one of the page's), and its time in ns if so. Inlined into each
// entry point, as GCC did before kind_of(): out of line it is a call and a
// store of `ns` on every read.
[[gnu::always_inline]] inline bool served_ns(const image_config* c, clockid_t clock,
                                             std::int64_t& ns) noexcept {
  if (c == nullptr || (c->host_page == 0 && c->ns_page == 0)) return false;
  const d::served_kind k = d::kind_of(clock);
  if (!k.served) return false;
  ns = d::with_kind(k.kind, [c]<clock_kind K>() { return clock_ns<K>(c); });
  return true;
}

// Virtual times may be negative (a large negative offset): floor division.
[[gnu::always_inline]] inline timespec to_timespec(std::int64_t ns) noexcept {
  std::int64_t sec = ns / d::ns_per_s;
  std::int64_t nsec = ns % d::ns_per_s;
  if (nsec < 0) {
    nsec += d::ns_per_s;
    --sec;
  }
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(sec);
  ts.tv_nsec = static_cast<long>(nsec);
  return ts;
}

// The hot path: MONOTONIC or REALTIME from the host page, no namespace, a
// timespec to fill. Shaped as the library's gettime<O> (src/lib/api.cc):
// inlined into the entry point, as_timespec (the page's base split before
// the counter read, one conditional carry after it: no division by 1e9
// after the counter read), and no call, so no stack frame. The ordering is
// the config's, tested per call (the library binds it once, by ifunc): a
// branch that is always predicted. False whenever try_read_fast()
// cannot answer: the caller goes to the general path, which reads the page
// again (read_fast(), then its careful path), as a call that had taken the
// general path from the start would.
template <clock_kind K, counter_ordering O>
[[gnu::always_inline]] inline bool try_host_fast(const page& p, timespec* ts) noexcept {
  timespec r;
  if (!d::try_read_fast<K, d::as_timespec>(
          p, [] { return arch::read_counter<O>(); }, r)) {
    return false;
  }
  *ts = r;
  return true;
}

template <clock_kind K>
[[gnu::always_inline]] inline bool try_host_fast(const image_config* c, timespec* ts) noexcept {
  const page& p = *reinterpret_cast<const page*>(c->host_page);
  // Tests, not a switch: the installer's usual choices first.
  const auto o = static_cast<counter_ordering>(c->ordering);
  if (o == counter_ordering::lfence) return try_host_fast<K, counter_ordering::lfence>(p, ts);
  if (o == counter_ordering::rdtscp) return try_host_fast<K, counter_ordering::rdtscp>(p, ts);
  if (o == counter_ordering::none) return try_host_fast<K, counter_ordering::none>(p, ts);
  return try_host_fast<K, counter_ordering::mfence>(p, ts);
}

// Whether the hot path may serve this call: a config, a host page, no
// namespace page (a virtual clock needs its time in ns, host_ns()'s path).
[[gnu::always_inline]] inline bool host_only(const image_config* c) noexcept {
  return c != nullptr && c->ns_page == 0 && c->host_page != 0;
}

struct timeval_layout {  // struct timeval on x86-64, without <sys/time.h>
  long tv_sec;
  long tv_usec;
};

// Every call the hot path does not answer: other clocks, a namespace, no
// page, a null pointer, the page's unusual cases. Out of line, reached by a
// tail jump: its frame and its calls are not the hot path's. It loads the
// config again rather than take it from the hot path, which then keeps
// only `ts` live across the counter read, as the library's does: no
// callee-saved register, no stack frame.
[[gnu::noinline]] int gettime_general(clockid_t clock, timespec* ts) noexcept {
  const image_config* c = active_config();
  std::int64_t ns = 0;
  // A null pointer goes to the kernel, which answers EFAULT (or EINVAL).
  if (ts != nullptr && served_ns(c, clock, ns)) {
    *ts = to_timespec(ns);
    count(&the_config()->stats.served);
    return 0;
  }
  if (c != nullptr) count(&the_config()->stats.fallback);
  return kernel_gettime(c, clock, ts);
}

// gettimeofday's every other call: a timezone asked for, a namespace, no
// page, the page's unusual cases. Out of line, as gettime_general().
[[gnu::noinline]] int gettimeofday_general(timeval* tv, struct timezone* tz) noexcept {
  const image_config* c = active_config();
  std::int64_t ns = 0;
  if (tv != nullptr && served_ns(c, CLOCK_REALTIME, ns)) {
    // The timezone is the kernel's to give: ask it for that alone.
    if (tz != nullptr) {
      const int r =
          c->kernel_gettimeofday != 0
              ? reinterpret_cast<gettimeofday_fn>(c->kernel_gettimeofday)(nullptr, tz)
              : static_cast<int>(raw_syscall2(
                    sys_gettimeofday, 0, static_cast<long>(reinterpret_cast<std::uintptr_t>(tz))));
      if (r != 0) return r;
    }
    const timespec ts = to_timespec(ns);
    auto* out = reinterpret_cast<timeval_layout*>(tv);
    out->tv_sec = ts.tv_sec;
    out->tv_usec = ts.tv_nsec / 1000;
    count(&the_config()->stats.served);
    return 0;
  }
  if (c != nullptr) count(&the_config()->stats.fallback);
  if (c != nullptr && c->kernel_gettimeofday != 0) {
    return reinterpret_cast<gettimeofday_fn>(c->kernel_gettimeofday)(tv, tz);
  }
  return static_cast<int>(raw_syscall2(sys_gettimeofday,
                                       static_cast<long>(reinterpret_cast<std::uintptr_t>(tv)),
                                       static_cast<long>(reinterpret_cast<std::uintptr_t>(tz))));
}

}  // namespace
}  // namespace vclock::vdso

using namespace vclock::vdso;  // NOLINT(google-build-using-namespace)

extern "C" {

// MONOTONIC first (the commonest), then REALTIME, as the library's
// gettime<O>: each its own inlined copy of the hot path.
[[gnu::visibility("default")]] int vclock_vdso_clock_gettime(clockid_t clock, timespec* ts) {
  const image_config* c = active_config();
  if (host_only(c) && ts != nullptr) [[likely]] {
    if (clock == CLOCK_MONOTONIC) [[likely]] {
      if (try_host_fast<clock_kind::monotonic>(c, ts)) [[likely]] {
        count(&the_config()->stats.served);
        return 0;
      }
      return gettime_general(CLOCK_MONOTONIC, ts);
    }
    if (clock == CLOCK_REALTIME) {
      if (try_host_fast<clock_kind::realtime>(c, ts)) [[likely]] {
        count(&the_config()->stats.served);
        return 0;
      }
      return gettime_general(CLOCK_REALTIME, ts);
    }
  }
  return gettime_general(clock, ts);
}

// REALTIME's hot path, without a timezone (the kernel's to give, asked
// for on the general path).
[[gnu::visibility("default")]] int vclock_vdso_gettimeofday(timeval* tv, struct timezone* tz) {
  const image_config* c = active_config();
  if (host_only(c) && tv != nullptr && tz == nullptr) [[likely]] {
    timespec r;
    if (try_host_fast<clock_kind::realtime>(c, &r)) [[likely]] {
      auto* out = reinterpret_cast<timeval_layout*>(tv);
      out->tv_sec = r.tv_sec;
      out->tv_usec = r.tv_nsec / 1000;
      count(&the_config()->stats.served);
      return 0;
    }
    return gettimeofday_general(tv, nullptr);  // keeps `tz` dead across the counter read
  }
  return gettimeofday_general(tv, tz);
}

[[gnu::visibility("default")]] long vclock_vdso_time(long* t) {
  const image_config* c = active_config();
  std::int64_t ns = 0;
  if (served_ns(c, CLOCK_REALTIME_COARSE, ns)) {
    const long s = static_cast<long>(to_timespec(ns).tv_sec);
    if (t != nullptr) *t = s;
    count(&the_config()->stats.served);
    return s;
  }
  if (c != nullptr) count(&the_config()->stats.fallback);
  if (c != nullptr && c->kernel_time != 0) return reinterpret_cast<time_fn>(c->kernel_time)(t);
  return raw_syscall2(sys_time, static_cast<long>(reinterpret_cast<std::uintptr_t>(t)), 0);
}

// The kernel's resolutions: vclock's clocks have the kernel's granularity.
[[gnu::visibility("default")]] int vclock_vdso_clock_getres(clockid_t clock, timespec* res) {
  const image_config* c = active_config();
  if (c != nullptr && c->kernel_clock_getres != 0) {
    return reinterpret_cast<getres_fn>(c->kernel_clock_getres)(clock, res);
  }
  return static_cast<int>(raw_syscall2(sys_clock_getres, clock,
                                       static_cast<long>(reinterpret_cast<std::uintptr_t>(res))));
}

}  // extern "C"

// The exported names: each function under the kernel's two names
// (arch/x86/entry/vdso/vdso.lds.S). Assembler aliases: <time.h> already
// declares the plain names with libc's signatures.
asm(R"(
        .globl __vdso_clock_gettime, clock_gettime, __vdso_gettimeofday, gettimeofday
        .globl __vdso_time, time, __vdso_clock_getres, clock_getres
        .type __vdso_clock_gettime, @function
        .type clock_gettime, @function
        .type __vdso_gettimeofday, @function
        .type gettimeofday, @function
        .type __vdso_time, @function
        .type time, @function
        .type __vdso_clock_getres, @function
        .type clock_getres, @function
        .set __vdso_clock_gettime, vclock_vdso_clock_gettime
        .set clock_gettime, vclock_vdso_clock_gettime
        .set __vdso_gettimeofday, vclock_vdso_gettimeofday
        .set gettimeofday, vclock_vdso_gettimeofday
        .set __vdso_time, vclock_vdso_time
        .set time, vclock_vdso_time
        .set __vdso_clock_getres, vclock_vdso_clock_getres
        .set clock_getres, vclock_vdso_clock_getres
)");
