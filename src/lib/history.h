// The page's history of lines (page.h, stamp_history): the writer appends
// each line it publishes; a stamp's reader finds the line that was in
// force at the stamp's counter value and applies the fast path's own
// arithmetic to it (docs/stamps.md).
#ifndef VCLOCK_SRC_LIB_HISTORY_H_
#define VCLOCK_SRC_LIB_HISTORY_H_

#include <cstdint>

#include "vclock/detail/reader.h"
#include "vclock/page.h"

namespace vclock::detail {

// One line's parameters, as the history holds them.
struct history_line {
  std::uint64_t cycle_last = 0;
  std::uint64_t max_delta = 0;
  std::int64_t mono_ns = 0;
  std::int64_t realtime_ns = 0;
  std::int64_t boottime_ns = 0;
  std::int64_t raw_ns = 0;
  std::uint32_t mult = 0;
  std::uint32_t raw_mult = 0;
  unsigned shift = 0;
  std::int16_t tai_offset_s = 0;
  bool operator==(const history_line&) const = default;
};

history_line line_of(const clock_line& l) noexcept;

// The epoch word of a boot (boot id, page header) and a counter epoch.
std::uint64_t stamp_epoch(const std::uint8_t (&boot_id)[16], std::uint32_t counter_epoch) noexcept;

// The counter epochs of a page that one process keeps for itself (the
// in-process timekeeper's) have this bit set and the rest of their own:
// another process's page, or the parent's before a fork, has the same boot
// but other lines, so its stamps must get -ESTALE here, not a wrong time.
inline constexpr std::uint32_t private_counter_epoch = 0x80000000u;

// ---- Writer (the timekeeper; one thread).
class history_writer {
 public:
  explicit history_writer(stamp_history& h) noexcept : h_(h) {}

  // Takes over the page's history (start()): keeps its epoch when it is
  // this boot's (a restarted daemon), else begins a new one. (A counter
  // that went back meanwhile is seen by the first append.)
  void take_over(const std::uint8_t (&boot_id)[16]) noexcept;
  // The counter jumped: stamps read before now convert to an error.
  void next_counter_epoch() noexcept;
  // This page is one process's own (see private_counter_epoch): begins an
  // epoch marked with `salt`, a word of that process's.
  void begin_private_epoch(std::uint32_t salt) noexcept;
  // Before hot takes a new line (hot's seq odd): readers of the history
  // wait until append().
  void open() noexcept;
  // `next` is hot's line now (hot's seq even again), read `end` at the
  // update's end. `freeze`: the counter value at which the backup line
  // froze the previous line (the switch point), or none (`freeze_known`
  // false) when the previous line was stale or off.
  void append(const clock_line& next, std::uint64_t freeze, bool freeze_known,
              std::uint64_t end) noexcept;

 private:
  void begin_epoch(std::uint64_t epoch) noexcept;
  bool counter_went_back(std::uint64_t cycle_last) const noexcept;
  bool fits_slot(const history_line& next, std::uint64_t freeze, bool freeze_known,
                 std::uint64_t run, std::uint64_t& word) const noexcept;

  stamp_history& h_;
  history_line last_{};
  bool have_last_ = false;
  std::uint32_t since_key_ = 0;
};

// The line that follows `prev` at `delta` ticks with these mult changes:
// what an ordinary entry encodes (page.h).
history_line advance_line(const history_line& prev, std::uint32_t delta, std::int32_t mult_step,
                          std::int32_t raw_mult_step) noexcept;

// ---- Reader.
// A consistent copy of the history, taken while no update was under way
// (`open`: the writer was, or stayed, mid-update; where the newest line
// ends is then unknown).
struct history_snapshot {
  stamp_history h;
  bool open = false;
  // How far the newest line is known to run: a stamp file's end (the
  // counter read before its copy was taken). Past it, a later update the
  // copy does not hold may have taken over, so its stamps are estimates.
  std::uint64_t known_until = ~std::uint64_t{0};
  // How far a reader that asked the kernel may have been from the page's lines: the page's
  // lead_ns + lag_ns as of the copy (a stamp file's: 0). An extrapolated estimate's bound
  // adds it (docs/stamps.md).
  std::int64_t kernel_slack_ns = 0;
};
// False when the page has no history (no epoch).
bool take_snapshot(const page& p, history_snapshot& out) noexcept;

// The part of the history that holds a counter value: the line, and how
// far it goes.
struct history_segment {
  history_line line;
  std::uint64_t lo = 0;  // counters in [lo, hi) belong to this segment
  std::uint64_t hi = 0;
  std::uint64_t freeze = 0;   // counters past it get the line's time at it
  bool has_freeze = false;    // a later line exists and its freeze is known
  bool exact_ok = true;       // false: before the history, off, or newest while open
  std::int64_t slack_ns = 0;  // the snapshot's kernel_slack_ns
};

// Status values (vclock.h): 0 exact, VCLOCK_STAMP_ESTIMATE, or -errno.
inline constexpr int stamp_exact = 0;
inline constexpr int stamp_estimate = 1;

// The segment holding `counter`; false when the snapshot has no line.
bool find_segment(const history_snapshot& s, std::uint64_t counter, history_segment& out) noexcept;

struct stamp_time {
  int status = stamp_exact;
  std::int64_t ns = 0;
  std::int64_t bound_ns = 0;  // 0 when exact
};

stamp_time time_in_segment(const history_segment& seg, clock_kind k,
                           std::uint64_t counter) noexcept;

// Where a segment is exact for clock k, as the fast path's operands: a
// counter c with c - lo < span converts to base + delta_to_ns(c - cycle_last,
// mult, shift), the same sum as time_in_segment's. span 0: nowhere.
struct exact_range {
  std::uint64_t lo = 0;
  std::uint64_t span = 0;
  std::uint64_t cycle_last = 0;
  std::int64_t base = 0;
  std::uint32_t mult = 0;
  unsigned shift = 0;
};
exact_range exact_range_of(const history_segment& seg, clock_kind k) noexcept;

// A stamp's time: find_segment (unless `seg` already holds the counter:
// `have_seg`, kept between the stamps of a batch) and time_in_segment.
// Returns t.status, or -ESTALE (another epoch) or -ENODATA (epoch 0, or no
// line in the history).
int stamp_to_time(const history_snapshot& s, clock_kind k, std::uint64_t epoch,
                  std::uint64_t counter, history_segment& seg, bool& have_seg,
                  stamp_time& t) noexcept;

}  // namespace vclock::detail

#endif  // VCLOCK_SRC_LIB_HISTORY_H_
