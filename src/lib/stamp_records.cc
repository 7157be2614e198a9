// The records of a stamp file (lib/stamp_records.h): walked in place, in
// the caller's copy of the file, so that a long file costs no heap.
#include "lib/stamp_records.h"

#include <errno.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lib/stamp_file.h"

namespace vclock::detail {
namespace {

constexpr std::size_t end_at = offsetof(stamp_file_header, end_counter);
constexpr std::size_t epoch_at = sizeof(stamp_file_header) + offsetof(stamp_history, header.epoch);

std::uint64_t word_at(const unsigned char* p) noexcept {
  std::uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

int check_stamp_records(const unsigned char* bytes, std::size_t n, stamp_records& out) noexcept {
  const std::size_t count = n / stamp_file_bytes;
  const std::size_t tail = n % stamp_file_bytes;
  if (count > stamp_file_max_records) return -EFBIG;
  if (count == 0) return -EBADMSG;
  // A record is written in order, so a torn one begins with the magic.
  if (tail != 0) {
    const std::size_t m = tail < sizeof stamp_file_magic ? tail : sizeof stamp_file_magic;
    if (std::memcmp(bytes + count * stamp_file_bytes, stamp_file_magic, m) != 0) return -EBADMSG;
  }
  // One snapshot's room, reused: 3.5 KiB on the stack.
  history_snapshot s;
  for (std::size_t i = 0; i < count; ++i) {
    const int r = parse_stamp_file(bytes + i * stamp_file_bytes, stamp_file_bytes, s);
    if (r != 0) return r;
  }
  out.bytes = bytes;
  out.count = count;
  index_stamp_records(out);
  return 0;
}

void index_stamp_records(stamp_records& r) noexcept {
  r.ordered = false;
  r.run_count = 0;
  for (std::size_t i = 0; i < r.count; ++i) {
    const std::uint64_t epoch = stamp_record_epoch(r, i);
    if (r.run_count > 0 && r.runs[r.run_count - 1].epoch == epoch) {
      if (stamp_record_end(r, i) < stamp_record_end(r, i - 1)) return;
      ++r.runs[r.run_count - 1].count;
      continue;
    }
    for (std::size_t j = 0; j < r.run_count; ++j) {
      if (r.runs[j].epoch == epoch) return;  // an epoch back again
    }
    if (r.run_count == stamp_record_runs_max) return;
    r.runs[r.run_count++] = stamp_record_run{epoch, i, 1};
  }
  r.ordered = true;
}

std::uint64_t stamp_record_end(const stamp_records& r, std::size_t i) noexcept {
  return word_at(r.bytes + i * stamp_file_bytes + end_at);
}

std::uint64_t stamp_record_epoch(const stamp_records& r, std::size_t i) noexcept {
  return word_at(r.bytes + i * stamp_file_bytes + epoch_at);
}

int load_stamp_record(const stamp_records& r, std::size_t i, history_snapshot& s) noexcept {
  // Checked by check_stamp_records, in bytes that are the caller's own
  // (stamp_file_map's copy, not a mapping of the file): a copy only. A
  // conversion that jumps between records loads one at nearly every stamp,
  // and a check is a checksum of the whole record.
  unpack_stamp_file(r.bytes + i * stamp_file_bytes, s);
  return 0;
}

}  // namespace vclock::detail
