// The counter trust decision; see trust.h for the reasoning.
#include "trust.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "vclock/detail/arch.h"

#if defined(__x86_64__)
#  include <cpuid.h>
#endif

namespace vclock {
namespace {

std::string read_first_line(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[128] = {};
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return {};
  std::string s(buf, static_cast<std::size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool cpu_has_invariant_counter() noexcept {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  // The cast: GCC's cpuid.h returns unsigned, clang's int.
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) < 0x80000007u) return false;
  __cpuid(0x80000007u, a, b, c, d);
  return (d & (1u << 8)) != 0;  // Advanced Power Management: invariant TSC
#else
  return false;
#endif
}

bool env_is(const char* name, const char* value) noexcept {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}

}  // namespace

trust_verdict decide_trust() noexcept {
  trust_verdict v;
  v.clocksource =
      read_first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  v.invariant_counter = cpu_has_invariant_counter();
  if (env_is("VCLOCK_DISABLE", "1")) {
    v.reason = fallback_reason::disabled;
    v.note = "VCLOCK_DISABLE=1: every call goes to the kernel";
  } else if (!arch::has_counter) {
    v.reason = fallback_reason::unsupported_arch;
    v.note = "no user-readable counter on this architecture yet";
  } else if (env_is("VCLOCK_COUNTER", "distrust")) {
    v.reason = fallback_reason::disabled;
    v.note = "VCLOCK_COUNTER=distrust";
  } else if (env_is("VCLOCK_COUNTER", "trust")) {
    v.note = "VCLOCK_COUNTER=trust: counter trusted without CPUID checks";
  } else if (!v.invariant_counter) {
    v.reason = fallback_reason::no_invariant_tsc;
    v.note = "CPUID reports no invariant TSC (set VCLOCK_COUNTER=trust to override)";
  } else if (v.clocksource == "tsc") {
    v.note = "invariant TSC; the kernel's clocksource is tsc too";
  } else {
    v.note = "invariant TSC; the kernel uses " + v.clocksource +
             ", so vclock checks the TSC against it every tick and falls back on any "
             "disagreement (VCLOCK_COUNTER=distrust to never use the TSC)";
  }
  return v;
}

}  // namespace vclock
