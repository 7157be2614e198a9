// The counter trust decision; see trust.h for the reasoning.
#include "lib/trust.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lib/small_file.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/arch/cpu_features.h"

namespace vclock {
namespace {

// The first line of a small /sys file into `out` (empty if unreadable).
void read_first_line(const char* path, char* out, std::size_t size) noexcept {
  std::size_t len = read_small_file(path, out, size - 1);
  while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == ' ')) --len;
  out[len] = '\0';
}

void set_note(trust_verdict& v, const char* text) noexcept {
  std::snprintf(v.note, sizeof(v.note), "%s", text);
}

bool env_is(const char* name, const char* value) noexcept {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}

}  // namespace

trust_verdict decide_trust() noexcept {
  trust_verdict v;
  read_first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", v.clocksource,
                  sizeof(v.clocksource));
  v.invariant_counter = arch::counter_is_invariant();
  if (env_is("VCLOCK_DISABLE", "1")) {
    v.reason = fallback_reason::disabled;
    set_note(v, "VCLOCK_DISABLE=1: every call goes to the kernel");
  } else if (!arch::has_counter) {
    v.reason = fallback_reason::unsupported_arch;
    set_note(v, "no user-readable counter on this architecture yet");
  } else if (env_is("VCLOCK_COUNTER", "distrust")) {
    v.reason = fallback_reason::disabled;
    set_note(v, "VCLOCK_COUNTER=distrust");
  } else if (env_is("VCLOCK_COUNTER", "trust")) {
    set_note(v, "VCLOCK_COUNTER=trust: counter trusted without CPUID checks");
  } else if (!v.invariant_counter) {
    v.reason = fallback_reason::no_invariant_tsc;
    set_note(v, "CPUID reports no invariant TSC (set VCLOCK_COUNTER=trust to override)");
  } else if (arch::trust_needs_kernel_clocksource &&
             std::strcmp(v.clocksource, arch::counter_clocksource) != 0) {
    if (arch::running_under_emulation()) {
      std::snprintf(v.note, sizeof(v.note),
                    "under emulation (qemu-user on a %s kernel): %s is the emulator's, and so is "
                    "every figure; trusted for testing only",
                    v.clocksource, arch::counter_name);
    } else {
      v.reason = fallback_reason::kernel_distrusts_counter;
      std::snprintf(v.note, sizeof(v.note),
                    "the kernel's clocksource is %s, not %s: it distrusts %s, and so does vclock",
                    v.clocksource, arch::counter_clocksource, arch::counter_name);
    }
  } else if (arch::trust_needs_kernel_clocksource) {
    std::snprintf(v.note, sizeof(v.note), "%s; the kernel's clocksource is %s too",
                  arch::counter_name, v.clocksource);
  } else if (std::strcmp(v.clocksource, "tsc") == 0) {
    set_note(v, "invariant TSC; the kernel's clocksource is tsc too");
  } else {
    std::snprintf(v.note, sizeof(v.note),
                  "invariant TSC; the kernel uses %s, so vclock checks the TSC against it every "
                  "tick and falls back on any disagreement (VCLOCK_COUNTER=distrust to never "
                  "use the TSC)",
                  v.clocksource);
  }
  return v;
}

}  // namespace vclock
