// Phrases for fallback_reason, shared by `vclock status` and vclockd's log.
#include "lib/fallback_reason_text.h"

namespace vclock {

const char* fallback_reason_text(fallback_reason r) noexcept {
  switch (r) {
    case fallback_reason::none:
      return "";
    case fallback_reason::not_started:
      return "not started";
    case fallback_reason::calibrating:
      return "calibrating";
    case fallback_reason::disabled:
      return "disabled";
    case fallback_reason::no_invariant_tsc:
      return "no invariant TSC";
    case fallback_reason::kernel_distrusts_counter:
      return "kernel distrusts the counter";
    case fallback_reason::counter_jumped:
      return "counter jumped";
    case fallback_reason::counter_rate_wrong:
      return "counter rate disagrees with the kernel";
    case fallback_reason::unsupported_arch:
      return "unsupported architecture";
    case fallback_reason::timekeeper_failed:
      return "timekeeper thread could not start";
    case fallback_reason::counter_too_slow:
      return "counter slower than 1 GHz (fixed shift 32)";
    case fallback_reason::daemon_stopped:
      return "vclockd stopped";
  }
  return "unknown";
}

}  // namespace vclock
