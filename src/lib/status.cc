// `vclock status`: what mode the page is in and how close it is to the kernel.
#include "lib/status.h"

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "lib/fallback_reason_text.h"
#include "lib/kernel_clock.h"
#include "lib/ordering.h"
#include "lib/runtime.h"
#include "lib/trust.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/arch/cpu_features.h"
#include "vclock/detail/reader.h"
#include "vclock/detail/seqlock.h"
#include "vclock/vclock.h"

namespace vclock {

namespace {

// vclock minus kernel for `clock`: the vclock read between two kernel reads,
// against their midpoint; the narrowest of 64 brackets.
std::int64_t offset_now(clockid_t clock) {
  std::int64_t best_width = INT64_MAX, best = 0;
  for (int i = 0; i < 64; ++i) {
    const std::int64_t k1 = kernel::now_ns(clock);
    const std::int64_t v = vclock_gettime_ns(clock);
    const std::int64_t k2 = kernel::now_ns(clock);
    if (k2 - k1 < best_width) {
      best_width = k2 - k1;
      best = v - (k1 + (k2 - k1) / 2);
    }
  }
  return best;
}

// Whether the hot line is past its window now: the test readers make
// (reader.h, read_careful), so that status says what they do. A counter a
// few ticks behind cycle_last (another CPU's) is not stale.
bool hot_line_stale(const page& p) {
  const std::uint64_t max_delta = detail::load(p.hot.max_delta);
  const std::uint64_t delta =
      arch::read_counter<arch::strongest_ordering>().value - detail::load(p.hot.cycle_last);
  if (static_cast<std::int64_t>(delta) < 0 && std::uint64_t{0} - delta <= detail::max_lag_ticks) {
    return false;
  }
  return delta >= max_delta;
}

}  // namespace

status_snapshot read_status(int wait_ms) {
  (void)vclock_gettime_ns(CLOCK_MONOTONIC);  // starts the timekeeper
  const page& p = *detail::host_page;
  // Wait for calibration, then for a few ticks, so the error figures come
  // from the discipline rather than from the first publish.
  for (int i = 0; i < wait_ms; ++i) {
    const auto r = static_cast<fallback_reason>(detail::load_relaxed(p.mode_reason));
    const bool calibrating = r == fallback_reason::calibrating || r == fallback_reason::not_started;
    if (!calibrating && (r != fallback_reason::none || detail::load_relaxed(p.updates) >= 4)) {
      break;
    }
    const timespec ms{0, 1'000'000};
    nanosleep(&ms, nullptr);
  }
  status_snapshot s;
  switch (detail::current_source()) {
    case detail::page_source::shared:
      s.source = "shared";
      break;
    case detail::page_source::in_process:
      s.source = "in-process";
      break;
    case detail::page_source::kernel:
      s.source = "kernel";
      break;
  }
  s.page = detail::page_path();
  const attach_result attach = detail::page_attach_outcome();
  if (attach.refusal != page_refusal::none && attach.refusal != page_refusal::not_found) {
    s.page_refused = page_refusal_text(attach.refusal);
    if (attach.error != 0) s.page_refused += std::string(": ") + std::strerror(attach.error);
  }
  const timens_join_result joined = detail::namespace_outcome();
  if (detail::joined_namespace != nullptr) s.ns = detail::namespace_file();
  if (joined.refusal != timens_refusal::none) {
    s.ns_refused =
        std::string(detail::namespace_file()) + ": " + timens_refusal_text(joined.refusal);
    if (joined.error != 0) s.ns_refused += std::string(": ") + std::strerror(joined.error);
  }
  s.timens_monotonic_ns = detail::frame_offset_ns[static_cast<int>(ns_family::monotonic)];
  s.timens_boottime_ns = detail::frame_offset_ns[static_cast<int>(ns_family::boottime)];
  if (detail::current_source() == detail::page_source::shared) {
    s.daemon_pid = detail::load_relaxed(p.header.writer_pid);
  }
  s.page_abi = std::to_string(detail::load_relaxed(p.header.abi_major)) + "." +
               std::to_string(detail::load_relaxed(p.header.abi_minor));
  const trust_verdict v = decide_trust();
  s.kernel_clocksource = v.clocksource;
  s.trust_note = v.note;
  s.invariant_counter = v.invariant_counter;
  s.counter = arch::counter_name;
  s.emulated = arch::running_under_emulation();
  s.ordering = arch::ordering_name(chosen_ordering());
  s.has_vdso = kernel::has_vdso();
  const auto reason = static_cast<fallback_reason>(detail::load_relaxed(p.mode_reason));
  s.counter_mode = reason == fallback_reason::none && detail::load(p.hot.max_delta) != 0;
  s.reason = fallback_reason_text(reason);
  s.page_stale = s.counter_mode && hot_line_stale(p);
  // From the page, which the in-process timekeeper and vclockd both keep.
  s.tick_ns = detail::load_relaxed(p.tick_ns);
  s.counter_hz = static_cast<double>(detail::load_relaxed(p.counter_hz));
  s.error_mono_ns = detail::load_relaxed(p.last_error_mono_ns);
  s.error_raw_ns = detail::load_relaxed(p.last_error_raw_ns);
  s.bracket_ns = detail::load_relaxed(p.last_bracket_ns);
  s.freq_ppb = detail::load_relaxed(p.freq_ppb);
  s.updates = detail::load_relaxed(p.updates);
  if (s.updates > 0) {
    s.update_age_ns = kernel::now_ns(CLOCK_MONOTONIC) - detail::load_relaxed(p.last_update_mono_ns);
  }
  if (s.page_stale) {
    s.counter_mode = false;
    const char* writer = detail::current_source() == detail::page_source::shared
                             ? "vclockd"
                             : "the timekeeper thread";
    s.reason = std::string("page stale: ") + writer + " has not updated it for " +
               std::to_string(std::max<std::int64_t>(s.update_age_ns, 0) / 1'000'000) + " ms";
  }
  vclock_bounds b{};
  vclock_now_bounded(CLOCK_REALTIME, &b);
  s.sync_status = b.status;
  if (b.earliest_ns != INT64_MIN && b.latest_ns != INT64_MAX) {
    s.bound_ns = (b.latest_ns - b.earliest_ns) / 2;
  }
  // A stale page vouches for nothing (API.md: UNKNOWN when the page is
  // stale), also if its writer went on between the two reads above.
  if (s.page_stale) {
    s.sync_status = VCLOCK_SYNC_UNKNOWN;
    s.bound_ns = -1;
  }
  s.offset_realtime_ns = offset_now(CLOCK_REALTIME);
  s.offset_monotonic_ns = offset_now(CLOCK_MONOTONIC);
  s.offset_raw_ns = offset_now(CLOCK_MONOTONIC_RAW);
  s.offset_boottime_ns = offset_now(CLOCK_BOOTTIME);
  s.offset_tai_ns = offset_now(CLOCK_TAI);
  return s;
}

}  // namespace vclock
