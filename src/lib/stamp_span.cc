// The record for each stamp of a multi-record stamp file (lib/stamp_span.h).
#include "lib/stamp_span.h"

#include <cstddef>
#include <cstdint>

#include "lib/stamp_convert.h"

namespace vclock::detail {

namespace {

// choose_stamp_record's answer where the records are ordered: in the run
// of the stamp's epoch, the first record that ended at or after it (a
// lower bound), the one before it bounding the window below.
stamp_record_window search_stamp_record(const stamp_records& r, const vclock_stamp_t& st) noexcept {
  stamp_record_window w;
  w.epoch = st.epoch;
  const stamp_record_run* run = nullptr;
  for (std::size_t j = 0; j < r.run_count; ++j) {
    if (r.runs[j].epoch == st.epoch) run = &r.runs[j];
  }
  if (run == nullptr) {  // as the walk: the newest record refuses it
    w.any_counter = true;
    w.index = r.count - 1;
    return w;
  }
  std::size_t lo = run->first;
  std::size_t hi = run->first + run->count;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (stamp_record_end(r, mid) < st.counter) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo > run->first) {
    w.has_lo = true;
    w.lo = stamp_record_end(r, lo - 1);
  }
  if (lo == run->first + run->count) {  // after every record of its epoch
    w.hi = ~std::uint64_t{0};
    w.index = lo - 1;
    return w;
  }
  w.hi = stamp_record_end(r, lo);
  w.index = lo;
  return w;
}

}  // namespace

stamp_record_window choose_stamp_record(const stamp_records& r, const vclock_stamp_t& st) noexcept {
  if (r.ordered) return search_stamp_record(r, st);
  stamp_record_window w;
  w.epoch = st.epoch;
  bool seen = false;
  std::size_t newest = 0;
  // The records in the order written: the first that ended at or after
  // the stamp was copied after it, so its history holds the stamp's line
  // unless that history no longer reaches back to it (an estimate then).
  // The earlier records of the epoch bound the stamps it converts below.
  for (std::size_t i = 0; i < r.count; ++i) {
    if (stamp_record_epoch(r, i) != st.epoch) continue;
    const std::uint64_t end = stamp_record_end(r, i);
    if (end >= st.counter) {
      w.hi = end;
      w.index = i;
      return w;
    }
    if (!w.has_lo || end > w.lo) w.lo = end;
    w.has_lo = true;
    seen = true;
    newest = i;
  }
  if (seen) {  // after every record of its epoch: the newest estimates
    w.hi = ~std::uint64_t{0};
    w.index = newest;
    return w;
  }
  // No record of its epoch: the newest record refuses it, as one would.
  w.any_counter = true;
  w.index = r.count - 1;
  return w;
}

int stamp_span_converter::convert(clock_kind k, const vclock_stamp_t* stamps, std::size_t n,
                                  std::int64_t* out, int* status) noexcept {
  int worst = 0;
  std::size_t i = 0;
  while (i < n) {
    if (!have_window_ || !window_.holds(stamps[i])) {
      window_ = choose_stamp_record(records_, stamps[i]);
      have_window_ = true;
    }
    std::size_t j = i + 1;
    while (j < n && window_.holds(stamps[j])) ++j;
    if (window_.index != loaded_) {
      const int r = load_stamp_record(records_, window_.index, s_);
      if (r != 0) return status != nullptr ? refuse_stamps(r, n, out, status) : r;
      loaded_ = window_.index;
    }
    const int r =
        convert_stamps(s_, k, stamps + i, j - i, out + i, status != nullptr ? status + i : nullptr);
    // As convert_stamps: the first refusal, else the worst status.
    if (worst >= 0 && (r < 0 || r > worst)) worst = r;
    i = j;
  }
  return worst;
}

}  // namespace vclock::detail
