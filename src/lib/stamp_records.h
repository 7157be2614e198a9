// A stamp file of several records (docs/stamps.md, "Offline"): each record
// is one snapshot's bytes as make_stamp_file writes them, whole and
// self-checking, and the records follow each other in the order they were
// written. Here the records are walked and checked; stamp_span.h chooses
// one for each stamp.
#ifndef VCLOCK_SRC_LIB_STAMP_RECORDS_H_
#define VCLOCK_SRC_LIB_STAMP_RECORDS_H_

#include <cstddef>
#include <cstdint>

#include "lib/history.h"

namespace vclock::detail {

// A bound on what a converter walks (16384 records: about 2 h at one
// record each 0.5 s, 59 MiB); a longer file is refused with -EFBIG.
inline constexpr std::size_t stamp_file_max_records = 16384;

// The records of one epoch that follow each other in a file.
struct stamp_record_run {
  std::uint64_t epoch = 0;
  std::size_t first = 0;
  std::size_t count = 0;
};
// Runs kept for a search: a file spans a few boots or counter epochs.
inline constexpr std::size_t stamp_record_runs_max = 8;

// The checked records of a file's bytes (not owned: the caller's copy,
// which must not change while these are used). `ordered`: the records of
// each epoch are one run, at most stamp_record_runs_max of them, and their
// ends do not decrease (what one appender at a time writes), so the
// record for a stamp is found by a binary search in its epoch's run;
// otherwise every record is walked (stamp_span.cc), with the same answer.
struct stamp_records {
  const unsigned char* bytes = nullptr;
  std::size_t count = 0;
  bool ordered = false;
  std::size_t run_count = 0;
  stamp_record_run runs[stamp_record_runs_max];
};

// Sets r.ordered and r.runs from r's records (check_stamp_records does).
void index_stamp_records(stamp_records& r) noexcept;

// Checks every whole record of `bytes`: 0 and `out`; or the first bad
// record's error (parse_stamp_file's -EBADMSG or -EPROTONOSUPPORT) for the
// whole file; -EBADMSG no whole record; -EFBIG more than
// stamp_file_max_records. A trailing part shorter than a record that
// begins as a record does (an append under way, or one cut short) is not
// a record and is left out; any other trailing part is -EBADMSG.
int check_stamp_records(const unsigned char* bytes, std::size_t n, stamp_records& out) noexcept;

// Record i's end (the counter read before its copy was taken) and epoch.
std::uint64_t stamp_record_end(const stamp_records& r, std::size_t i) noexcept;
std::uint64_t stamp_record_epoch(const stamp_records& r, std::size_t i) noexcept;

// Record i's snapshot, copied, not checked again: `r` from
// check_stamp_records over bytes nobody writes (stamp_file_map's copy).
// Returns 0.
int load_stamp_record(const stamp_records& r, std::size_t i, history_snapshot& s) noexcept;

}  // namespace vclock::detail

#endif  // VCLOCK_SRC_LIB_STAMP_RECORDS_H_
