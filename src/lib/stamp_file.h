// The stamp file (docs/stamps.md, "Offline"): a copy of the page's history
// of lines that converts stamps later, in another process or on another
// machine, exactly as the page did. The bytes are parsed and made here, in
// memory; stamp_file.cc adds the file I/O and the C calls.
#ifndef VCLOCK_SRC_LIB_STAMP_FILE_H_
#define VCLOCK_SRC_LIB_STAMP_FILE_H_

#include <cstddef>
#include <cstdint>

#include "lib/history.h"
#include "lib/stamp_records.h"
#include "vclock/page.h"

namespace vclock::detail {

// The header in front of the history, in the writer's byte order (the
// version field read back as 1 only in the same order: little-endian, as
// both architectures the page runs on).
struct stamp_file_header {
  char magic[8];                // stamp_file_magic
  std::uint32_t version;        // stamp_file_version
  std::uint32_t history_bytes;  // sizeof(stamp_history)
  std::uint16_t abi_major;      // the writer's page ABI
  std::uint16_t abi_minor;
  std::uint32_t flags;        // stamp_file_open, no other bit
  std::uint64_t checksum;     // FNV-1a 64 of the whole file, this field taken as 0
  std::uint64_t end_counter;  // history_snapshot::known_until
  std::uint64_t reserved;     // 0
};
static_assert(sizeof(stamp_file_header) == 48);

inline constexpr char stamp_file_magic[8] = {'V', 'C', 'S', 'T', 'A', 'M', 'P', 0};
inline constexpr std::uint32_t stamp_file_version = 1;
// The snapshot was open: where the newest line ends was not known.
inline constexpr std::uint32_t stamp_file_open = 1;
inline constexpr std::size_t stamp_file_bytes = sizeof(stamp_file_header) + sizeof(stamp_history);

// FNV-1a 64: any one changed byte changes it (each step is a bijection of
// the state), and it needs no table.
std::uint64_t stamp_file_checksum(const unsigned char* bytes, std::size_t n) noexcept;

// The file's bytes for the snapshot `s`.
void make_stamp_file(const history_snapshot& s, unsigned char (&out)[stamp_file_bytes]) noexcept;

// The snapshot in `bytes`: 0; -EPROTONOSUPPORT a stamp file of another
// version or page ABI major, or whose lines need another architecture's
// fixed shift; -EBADMSG anything else that is not a whole,
// intact stamp file whose history keeps page.h's invariants.
int parse_stamp_file(const unsigned char* bytes, std::size_t n, history_snapshot& s) noexcept;

// The snapshot in the stamp_file_bytes at `bytes`, copied and not checked:
// only for bytes parse_stamp_file accepted and nobody has written since
// (a record of stamp_file_map's own copy).
void unpack_stamp_file(const unsigned char* bytes, history_snapshot& s) noexcept;

// The same through a file: 0 or -errno (parse_stamp_file's, or the I/O's).
// read_stamp_file reads a file of one record, through stamp_file_map (so
// as every conversion reads it); a file of several is -EBADMSG.
int write_stamp_file(const char* path, const history_snapshot& s) noexcept;
int read_stamp_file(const char* path, history_snapshot& s) noexcept;

// One record written after the file's whole records (a new file: the
// first): 0 or -errno; -EBADMSG a file that does not begin as a stamp
// file (left as it was); -EFBIG stamp_file_max_records there already.
// One appender at a time: two would write over each other's record.
int append_stamp_file(const char* path, const history_snapshot& s) noexcept;

// A stamp file of one or more records, read into memory of its own (an
// anonymous mapping, not the heap; never the file mapped: one truncated
// meanwhile would raise SIGBUS) and checked (check_stamp_records): open()
// 0 or -errno, -EFBIG before reading a file of too many records. A file
// that shrank while it was read is converted as the bytes read: what
// check_stamp_records says of a file of that length.
class stamp_file_map {
 public:
  stamp_file_map() noexcept = default;
  stamp_file_map(const stamp_file_map&) = delete;
  stamp_file_map& operator=(const stamp_file_map&) = delete;
  ~stamp_file_map();
  int open(const char* path) noexcept;
  const stamp_records& records() const noexcept { return records_; }

 private:
  unsigned char* bytes_ = nullptr;
  std::size_t size_ = 0;
  stamp_records records_;
};

}  // namespace vclock::detail

#endif  // VCLOCK_SRC_LIB_STAMP_FILE_H_
