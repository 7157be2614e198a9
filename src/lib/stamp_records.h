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

// The checked records of a file's bytes (not owned: the caller's copy,
// which must not change while these are used).
struct stamp_records {
  const unsigned char* bytes = nullptr;
  std::size_t count = 0;
};

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
