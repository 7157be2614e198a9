// A snapshot of the timekeeper's state for `vclock status` and the bench
// header. Not part of the public API: the CLI links the library directly.
#ifndef VCLOCK_SRC_LIB_STATUS_H_
#define VCLOCK_SRC_LIB_STATUS_H_

#include <cstdint>
#include <string>

namespace vclock {

struct status_snapshot {
  std::string source;           // "shared" (vclockd's page), "in-process" or "kernel"
  std::string page;             // the shared page's path that was tried ("" if off)
  std::string page_refused;     // why a page that was found was not used ("" otherwise)
  std::int64_t daemon_pid = 0;  // the shared page's writer (0 if none)
  std::string ns;               // the namespace file joined (VCLOCK_NS; "" if none)
  std::string ns_refused;       // why VCLOCK_NS was not joined ("" otherwise)
  // A kernel time namespace's offsets that this process adds to the
  // daemon's page (kernel_frame.h); both 0 when it adds none.
  std::int64_t timens_monotonic_ns = 0;
  std::int64_t timens_boottime_ns = 0;
  std::string page_abi;  // "3.0": the page's ABI major.minor
  // What readers do now: counter_mode is true only while the page is in
  // counter mode and fresh. A page whose writer stopped updating it (past
  // its window, hot.max_delta) is stale: readers ask the kernel, so it is
  // reported as fallback, with the writer and the page's age in `reason`.
  bool counter_mode = false;       // readers answer from the counter
  bool page_stale = false;         // the page is in counter mode, but past its window
  std::string reason;              // why not (empty in counter mode)
  std::string counter;             // "tsc"
  std::string ordering;            // "lfence;rdtsc", ... (the ordered entry points)
  std::string kernel_clocksource;  // /sys/.../current_clocksource
  std::string trust_note;          // why the counter is (not) trusted
  bool invariant_counter = false;  // CPUID invariant TSC
  // A user-mode emulator (qemu-user) runs this program: the counter and
  // every figure measured are the emulator's, not the hardware's.
  bool emulated = false;
  bool has_vdso = false;
  double counter_hz = 0;            // calibrated
  std::int64_t tick_ns = 0;         // timekeeper period
  std::int64_t update_age_ns = -1;  // kernel MONOTONIC now - last publish
  std::int64_t error_mono_ns = 0;   // last measured vclock - kernel MONOTONIC
  std::int64_t error_raw_ns = 0;    // last measured vclock - kernel MONOTONIC_RAW
  std::int64_t bracket_ns = 0;      // width of the last kernel sample
  std::int64_t freq_ppb = 0;        // MONOTONIC rate vs the calibrated counter
  std::uint64_t updates = 0;
  int sync_status = 0;         // VCLOCK_SYNC_* of vclock_now_bounded(REALTIME) now
  std::int64_t bound_ns = -1;  // its half-width (-1: unbounded)
  // vclock minus kernel, measured now by bracketing (vclock read between two
  // kernel reads; the offset is to the midpoint). Fine clocks only.
  std::int64_t offset_realtime_ns = 0;
  std::int64_t offset_monotonic_ns = 0;
  std::int64_t offset_raw_ns = 0;
  std::int64_t offset_boottime_ns = 0;
  std::int64_t offset_tai_ns = 0;
};

// Starts the timekeeper if needed, waits up to `wait_ms` for it to leave
// calibration, and returns a snapshot. Not for the hot path.
status_snapshot read_status(int wait_ms);

}  // namespace vclock

#endif  // VCLOCK_SRC_LIB_STATUS_H_
