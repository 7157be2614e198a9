// Conversion from a stamp file of several records (docs/stamps.md,
// "Offline"): each stamp with the first record written after it, whose
// history holds the line the stamp read while that history reaches back
// to it; a stamp after every record of its epoch with the newest of them
// (an estimate past its end, as from one snapshot).
#ifndef VCLOCK_SRC_LIB_STAMP_SPAN_H_
#define VCLOCK_SRC_LIB_STAMP_SPAN_H_

#include <cstddef>
#include <cstdint>

#include "lib/history.h"
#include "lib/stamp_records.h"
#include "vclock/vclock.h"

namespace vclock::detail {

// The stamps one record converts: those of `epoch` with a counter in
// (lo, hi] (no lower bound without has_lo), or every stamp of `epoch`.
struct stamp_record_window {
  std::uint64_t epoch = 0;
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  bool has_lo = false;
  bool any_counter = false;
  std::size_t index = 0;

  bool holds(const vclock_stamp_t& st) const noexcept {
    if (st.epoch != epoch) return false;
    return any_counter || ((!has_lo || st.counter > lo) && st.counter <= hi);
  }
};

// The record for `st` and the stamps it converts alike (`r` not empty): a
// binary search in the run of its epoch where r.ordered, else a walk over
// every record; the same answer either way.
stamp_record_window choose_stamp_record(const stamp_records& r, const vclock_stamp_t& st) noexcept;

// Converts stamps against checked records, run by run: the stamps that
// one record converts, in a row, go through convert_stamps together. Keeps
// the loaded record from call to call (one line at a time, `vclock stamps
// convert`). Status and `status` as convert_stamps.
class stamp_span_converter {
 public:
  explicit stamp_span_converter(const stamp_records& r) noexcept : records_(r) {}
  int convert(clock_kind k, const vclock_stamp_t* stamps, std::size_t n, std::int64_t* out,
              int* status = nullptr) noexcept;

 private:
  const stamp_records& records_;
  history_snapshot s_;
  std::size_t loaded_ = ~std::size_t{0};
  stamp_record_window window_;
  bool have_window_ = false;
};

}  // namespace vclock::detail

#endif  // VCLOCK_SRC_LIB_STAMP_SPAN_H_
