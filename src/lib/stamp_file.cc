// Offline stamp conversion (docs/stamps.md, "Offline"): the history of
// lines written to a file, and stamps converted with it later, anywhere.
// The file holds the page's history in page.h's own layout (one format,
// one arithmetic: find_segment reads a loaded file as it reads the page),
// behind a header that says what it is and a checksum, so that a damaged
// file is refused rather than converted wrongly.
#include "lib/stamp_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lib/runtime.h"
#include "lib/stamp_convert.h"
#include "lib/stamp_records.h"
#include "lib/stamp_span.h"
#include "vclock/detail/arch.h"
#include "vclock/vclock.h"

namespace vclock::detail {
namespace {

static_assert(std::endian::native == std::endian::little, "the file is little-endian (docs)");

constexpr std::size_t checksum_at = offsetof(stamp_file_header, checksum);

// A slot word's fields (page.h): a key's mark and position.
constexpr bool is_key_word(std::uint64_t word) noexcept {
  return ((word >> 36) & 0xffffu) == history_key_mark;
}
constexpr std::uint64_t key_pos_of(std::uint64_t word) noexcept { return word >> 52; }

// The history as it goes into a file: the fields a snapshot holds, every
// other byte (seq, open, reserved) zero.
void copy_history(const stamp_history& from, stamp_history& to) noexcept {
  std::memset(&to, 0, sizeof to);
  to.header.slot_count = history_slots;
  to.header.key_count = history_keys;
  to.header.epoch = from.header.epoch;
  to.header.entries = from.header.entries;
  to.header.first_entry = from.header.first_entry;
  to.header.keys = from.header.keys;
  for (std::uint32_t i = 0; i < history_keys; ++i) {
    const history_key& f = from.keys[i];
    history_key& t = to.keys[i];
    t.cycle_last = f.cycle_last;
    t.max_delta = f.max_delta;
    t.mono_ns = f.mono_ns;
    t.realtime_ns = f.realtime_ns;
    t.boottime_ns = f.boottime_ns;
    t.raw_ns = f.raw_ns;
    t.mult = f.mult;
    t.raw_mult = f.raw_mult;
    t.begin = f.begin;
    t.shift = f.shift;
    t.tai_offset_s = f.tai_offset_s;
  }
  std::memcpy(to.slots, from.slots, sizeof to.slots);
}

// What find_segment and the arithmetic rely on: header fields as the
// writer sets them, and every entry it can read (the held entries of this
// epoch) naming a key that exists, with a shift this machine's arithmetic
// gives the writer's answer with. 0, -EBADMSG, or -EPROTONOSUPPORT: a
// line of another architecture's shift.
int keeps_invariants(const stamp_history& h) noexcept {
  const history_header& hh = h.header;
  if (hh.slot_count != history_slots || hh.key_count != history_keys) return -EBADMSG;
  if (hh.seq != 0 || hh.open != 0 || hh.epoch == 0 || hh.first_entry > hh.entries) {
    return -EBADMSG;
  }
  for (const std::uint8_t b : hh.reserved) {
    if (b != 0) return -EBADMSG;
  }
  const std::uint64_t held = hh.entries > history_slots ? hh.entries - history_slots : 0;
  for (std::uint64_t e = held > hh.first_entry ? held : hh.first_entry; e < hh.entries; ++e) {
    const std::uint64_t word = h.slots[e % history_slots];
    if (!is_key_word(word)) continue;
    if (key_pos_of(word) >= history_keys) return -EBADMSG;
    const history_key& k = h.keys[key_pos_of(word)];
    if (k.shift >= 64) return -EBADMSG;
    // A counter-mode line where the shift is fixed (x86-64): the reader
    // uses the fixed one, so the file must agree with it.
    if (arch::fixed_shift != 0 && k.max_delta != 0 && k.shift != arch::fixed_shift) {
      return -EPROTONOSUPPORT;
    }
  }
  return 0;
}

int close_keeping(int fd, int err) noexcept {
  if (::close(fd) != 0 && err == 0) err = -errno;
  return err;
}

// Writes the n bytes at p to fd (short writes and EINTR resumed), then
// closes it: 0, or the first -errno (-EIO for a write that wrote nothing).
int write_all_and_close(int fd, const unsigned char* p, std::size_t n) noexcept {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return close_keeping(fd, -errno);
    if (w == 0) return close_keeping(fd, -EIO);
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return close_keeping(fd, 0);
}

}  // namespace

std::uint64_t stamp_file_checksum(const unsigned char* bytes, std::size_t n) noexcept {
  std::uint64_t hash = 0xcbf29ce484222325u;
  for (std::size_t i = 0; i < n; ++i) {
    const bool in_field = i >= checksum_at && i < checksum_at + sizeof(std::uint64_t);
    hash = (hash ^ (in_field ? 0u : bytes[i])) * 0x100000001b3u;
  }
  return hash;
}

void make_stamp_file(const history_snapshot& s, unsigned char (&out)[stamp_file_bytes]) noexcept {
  stamp_file_header fh{};
  std::memcpy(fh.magic, stamp_file_magic, sizeof fh.magic);
  fh.version = stamp_file_version;
  fh.history_bytes = sizeof(stamp_history);
  fh.abi_major = page_abi_major;
  fh.abi_minor = page_abi_minor;
  fh.flags = s.open ? stamp_file_open : 0;
  fh.end_counter = s.known_until;
  std::memcpy(out, &fh, sizeof fh);
  // The history on the stack: 3.5 KiB, once per export.
  stamp_history h;
  copy_history(s.h, h);
  std::memcpy(out + sizeof fh, &h, sizeof h);
  fh.checksum = stamp_file_checksum(out, stamp_file_bytes);
  std::memcpy(out + checksum_at, &fh.checksum, sizeof fh.checksum);
}

int parse_stamp_file(const unsigned char* bytes, std::size_t n, history_snapshot& s) noexcept {
  stamp_file_header fh{};
  if (n < sizeof fh) return -EBADMSG;
  std::memcpy(&fh, bytes, sizeof fh);
  if (std::memcmp(fh.magic, stamp_file_magic, sizeof fh.magic) != 0) return -EBADMSG;
  if (n != stamp_file_bytes) return -EBADMSG;  // truncated, or bytes after it
  if (stamp_file_checksum(bytes, n) != fh.checksum) return -EBADMSG;
  // Intact, and of another format: say so, not "damaged".
  if (fh.version != stamp_file_version || fh.abi_major != page_abi_major) return -EPROTONOSUPPORT;
  if (fh.history_bytes != sizeof(stamp_history) || (fh.flags & ~stamp_file_open) != 0 ||
      fh.reserved != 0) {
    return -EBADMSG;
  }
  unpack_stamp_file(bytes, s);
  return keeps_invariants(s.h);
}

void unpack_stamp_file(const unsigned char* bytes, history_snapshot& s) noexcept {
  stamp_file_header fh{};
  std::memcpy(&fh, bytes, sizeof fh);
  std::memcpy(&s.h, bytes + sizeof fh, sizeof s.h);
  s.open = (fh.flags & stamp_file_open) != 0;
  s.known_until = fh.end_counter;
}

int write_stamp_file(const char* path, const history_snapshot& s) noexcept {
  unsigned char bytes[stamp_file_bytes];
  make_stamp_file(s, bytes);
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -errno;
  return write_all_and_close(fd, bytes, sizeof bytes);
}

int read_stamp_file(const char* path, history_snapshot& s) noexcept {
  stamp_file_map file;
  const int r = file.open(path);
  if (r != 0) return r;
  if (file.records().count != 1) return -EBADMSG;
  return load_stamp_record(file.records(), 0, s);
}

int append_stamp_file(const char* path, const history_snapshot& s) noexcept {
  unsigned char bytes[stamp_file_bytes];
  make_stamp_file(s, bytes);
  const int fd = ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return -errno;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return close_keeping(fd, -errno);
  const auto size = static_cast<std::size_t>(st.st_size);
  // Not a stamp file (a mistyped path): left as it is. Its first bytes
  // only: a record is checked whole by whoever reads it.
  if (size > 0) {
    unsigned char magic[sizeof stamp_file_magic];
    const std::size_t want = size < sizeof magic ? size : sizeof magic;
    ssize_t r = 0;
    do {
      r = ::read(fd, magic, want);
    } while (r < 0 && errno == EINTR);
    if (r < 0) return close_keeping(fd, -errno);
    if (static_cast<std::size_t>(r) != want || std::memcmp(magic, stamp_file_magic, want) != 0) {
      return close_keeping(fd, -EBADMSG);
    }
  }
  // The record goes after the last whole one: over the torn part of an
  // append that was cut short, which readers leave out until then.
  const std::size_t whole = size / stamp_file_bytes;
  if (whole >= stamp_file_max_records) return close_keeping(fd, -EFBIG);
  if (::lseek(fd, static_cast<off_t>(whole * stamp_file_bytes), SEEK_SET) < 0) {
    return close_keeping(fd, -errno);
  }
  return write_all_and_close(fd, bytes, sizeof bytes);
}

stamp_file_map::~stamp_file_map() {
  if (bytes_ != nullptr) ::munmap(bytes_, size_);
}

int stamp_file_map::open(const char* path) noexcept {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return close_keeping(fd, -errno);
  if (S_ISDIR(st.st_mode)) return close_keeping(fd, -EISDIR);  // as read(2) says
  const auto size = static_cast<std::size_t>(st.st_size);
  // Counted before the copy: a file too long is refused unread.
  if (size / stamp_file_bytes > stamp_file_max_records) return close_keeping(fd, -EFBIG);
  if (size < stamp_file_bytes) return close_keeping(fd, -EBADMSG);
  // A copy, not a mapping of the file: a mapping's pages past a file
  // truncated meanwhile raise SIGBUS when touched, and its other pages
  // change under the checks when the file is rewritten. Anonymous memory
  // (not the heap: no malloc in the library, README's signal safety),
  // filled with pread and owned until the destructor.
  void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return close_keeping(fd, -errno);
  bytes_ = static_cast<unsigned char*>(m);
  size_ = size;
  // A file that shrank since fstat reads short: its bytes are the file,
  // as if it had been that long (a torn last record is left out, no
  // whole record is -EBADMSG: check_stamp_records). One that grew is read
  // to the length fstat gave: the records after it are not read.
  std::size_t got = 0;
  while (got < size) {
    const ssize_t r = ::pread(fd, bytes_ + got, size - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return close_keeping(fd, -errno);
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  const int err = close_keeping(fd, 0);
  if (err != 0) return err;
  return check_stamp_records(bytes_, got, records_);
}

}  // namespace vclock::detail

namespace d = vclock::detail;

namespace {

// The snapshot an export writes: its end read before the copy, so that a
// stamp at or before it read a line the copy holds (a later one may have
// read a newer line).
int export_snapshot(d::history_snapshot& s) noexcept {
  d::ensure_started();
  if (d::joined_namespace != nullptr) return -EAGAIN;  // virtual time: as the live conversion
  for (int tries = 0; tries < 3; ++tries) {
    const vclock_stamp_t end = vclock_stamp();
    if (!d::take_snapshot(d::the_page, s)) return -ENODATA;
    if (end.epoch != s.h.header.epoch) continue;  // a new counter epoch began in between
    s.known_until = end.counter;
    return 0;
  }
  return -EAGAIN;
}

}  // namespace

extern "C" {

// A cold call: a copy of the history and one file written.
VCLOCK_API int vclock_stamps_export(const char* path) noexcept {
  if (path == nullptr) return -EINVAL;
  d::history_snapshot s;
  const int r = export_snapshot(s);
  if (r != 0) return r;
  return d::write_stamp_file(path, s);
}

// As cold: a copy of the history and one record written after the others.
VCLOCK_API int vclock_stamps_export_append(const char* path) noexcept {
  if (path == nullptr) return -EINVAL;
  d::history_snapshot s;
  const int r = export_snapshot(s);
  if (r != 0) return r;
  return d::append_stamp_file(path, s);
}

VCLOCK_API int vclock_stamp_convert_file(const char* path, clockid_t clock,
                                         const vclock_stamp_t* stamps, size_t n,
                                         int64_t* out) noexcept {
  if (path == nullptr || (n != 0 && (stamps == nullptr || out == nullptr))) return -EINVAL;
  d::clock_kind k{};
  if (!d::stamp_clock_kind(clock, k)) return -EINVAL;
  d::stamp_file_map file;
  const int r = file.open(path);
  if (r != 0) return r;
  d::stamp_span_converter c(file.records());
  return c.convert(k, stamps, n, out);
}

VCLOCK_API int vclock_stamp_convert_file_each(const char* path, clockid_t clock,
                                              const vclock_stamp_t* stamps, size_t n, int64_t* out,
                                              int* status) noexcept {
  if (path == nullptr || (n != 0 && (stamps == nullptr || out == nullptr || status == nullptr))) {
    return -EINVAL;
  }
  d::clock_kind k{};
  if (!d::stamp_clock_kind(clock, k)) return -EINVAL;
  d::stamp_file_map file;
  const int r = file.open(path);
  if (r != 0) return d::refuse_stamps(r, n, out, status);
  d::stamp_span_converter c(file.records());
  return c.convert(k, stamps, n, out, status);
}

}  // extern "C"
