// The kernel's own error bound (adjtimex), as a bound_sample.
#include "lib/kernel_bound.h"

namespace vclock {

namespace {
// The kernel grows maxerror by MAXFREQ, 500 ppm, per second between NTP
// updates: the drift this source declares.
constexpr std::int64_t kernel_drift_ppb = 500'000;
// adjtimex reports in whole microseconds.
constexpr std::int64_t kernel_quantum_ns = 1'000;
// Re-read every tick; one second without a reading voids it.
constexpr std::int64_t kernel_valid_ns = 1'000'000'000;
}  // namespace

bound_sample kernel_bound_of(int state, const struct timex& t) noexcept {
  bound_sample b;
  b.source = bound_source_kind::kernel;
  if (state < 0 || t.maxerror < 0) return b;  // unknown
  b.status = (state == TIME_ERROR || (t.status & STA_UNSYNC) != 0) ? sync_status::unsynced
                                                                   : sync_status::synced;
  b.error_ns = static_cast<std::int64_t>(t.maxerror) * 1000;
  b.drift_ppb = kernel_drift_ppb;
  b.quantum_ns = kernel_quantum_ns;
  b.valid_ns = kernel_valid_ns;
  return b;
}

bound_sample read_kernel_bound() noexcept {
  struct timex t {};
  const int state = adjtimex(&t);  // modes 0: read only
  return kernel_bound_of(state, t);
}

}  // namespace vclock
