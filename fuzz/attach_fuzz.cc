// vclock_fuzz_attach: a libFuzzer target for the checks a process makes before
// it maps the page that vclockd publishes (src/lib/shared_page.h and
// src/lib/page_identity.h). Built by fuzz/CMakeLists.txt, run by
// tools/fuzz.sh; fuzz/README.md has the figures.
//
// The first byte of an input picks what the rest (the payload) feeds:
//   0 header     check_page_header(payload) against five identities
//   1 timens     time_namespace_offsets_clocks(payload), as raw text
//   2 timens-fmt the same on lines written in the kernel's own formats
//   3 bootid     parse_boot_id(payload), raw, against a reference parser
//   4 bootid-fmt the same on a UUID formatted from the payload's bytes
//   5 stat       check_page_file() on struct stat fields taken from payload
//   6 attach     attach_shared_page() end to end, on a real file (slow)
// (byte % 7, so every byte value means something). Each mode checks its
// function against a model of what it must answer: a refusal must name a
// fault the input really has, and "none" only when it has none. A broken
// invariant aborts, which libFuzzer reports as a crash with the input.
//
// With VCLOCK_FUZZ_WRITE_SEEDS=<dir> in the environment, the binary writes
// the seed corpus (valid pages for this machine and their near misses) into
// <dir> and exits.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "lib/page_identity.h"
#include "lib/shared_page.h"
#include "vclock/page.h"

namespace {

using vclock::machine_identity;
using vclock::page_header;
using vclock::page_refusal;

// The header's layout as a foreign reader sees it (include/vclock/page.h).
constexpr std::size_t header_bytes = 128;
constexpr std::size_t page_size = 4096;
constexpr std::size_t boot_id_offset = 32;
constexpr std::size_t vendor_offset = 48;
constexpr std::size_t signature_offset = 64;
static_assert(sizeof(page_header) == header_bytes && vclock::page_bytes == page_size);
static_assert(offsetof(page_header, boot_id) == boot_id_offset);
static_assert(offsetof(page_header, counter_vendor) == vendor_offset);
static_assert(offsetof(page_header, counter_signature) == signature_offset);

enum mode : unsigned {
  mode_header = 0,
  mode_timens = 1,
  mode_timens_format = 2,
  mode_boot_id = 3,
  mode_boot_id_format = 4,
  mode_stat = 5,
  mode_attach = 6,
  mode_count = 7,
};

[[noreturn]] void violated(const char* what, const char* file, int line) {
  std::fprintf(stderr, "vclock_fuzz_attach: invariant broken: %s (%s:%d)\n", what, file, line);
  std::abort();
}
#define FUZZ_CHECK(condition) \
  ((condition) ? static_cast<void>(0) : violated(#condition, __FILE__, __LINE__))

// An exact-size heap copy: AddressSanitizer then reports a read one byte past
// the end, which a read into a larger buffer (as the library's own callers
// do) would hide.
std::unique_ptr<char[]> exact_copy(const void* bytes, std::size_t size) {
  std::unique_ptr<char[]> copy(new char[size]);
  if (size != 0) std::memcpy(copy.get(), bytes, size);
  return copy;
}

// Reads a little-endian field of `width` bytes at `offset`; zero past `size`.
std::uint64_t field(const std::uint8_t* p, std::size_t size, std::size_t offset,
                    std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i) {
    const std::uint64_t byte = offset + i < size ? p[offset + i] : 0;
    v |= byte << (8 * i);
  }
  return v;
}

// --- The model: which faults an input has ----------------------------------

// A set of page_refusal values.
struct faults {
  std::uint64_t bits = 0;
  void add(page_refusal r) { bits |= std::uint64_t{1} << static_cast<unsigned>(r); }
  bool has(page_refusal r) const {
    return static_cast<unsigned>(r) < 64 && ((bits >> static_cast<unsigned>(r)) & 1) != 0;
  }
  bool empty() const { return bits == 0; }
};

// The one invariant of every check: "none" exactly when the input has no
// fault, and otherwise one of the faults it has (whichever the check meets
// first; the order is the implementation's to choose).
void check_answer(page_refusal answer, const faults& expected) {
  FUZZ_CHECK(static_cast<unsigned>(answer) <= static_cast<unsigned>(page_refusal::map_failed));
  if (expected.empty()) {
    FUZZ_CHECK(answer == page_refusal::none);
  } else {
    FUZZ_CHECK(answer != page_refusal::none);
    FUZZ_CHECK(expected.has(answer));
  }
}

// What is wrong with a header of `size` bytes, for a reader that is `me`.
faults header_faults(const std::uint8_t* bytes, std::size_t size, const machine_identity& me) {
  faults f;
  if (size < header_bytes) {
    f.add(page_refusal::read_failed);
    return f;
  }
  if (field(bytes, size, 0, 8) != vclock::page_magic) f.add(page_refusal::bad_magic);
  if (field(bytes, size, 8, 2) != vclock::page_abi_major) f.add(page_refusal::other_abi);
  if (field(bytes, size, 12, 4) != header_bytes || field(bytes, size, 16, 4) != page_size) {
    f.add(page_refusal::bad_header);
  }
  if (!me.have_boot_id) f.add(page_refusal::no_boot_id);
  if (std::memcmp(bytes + boot_id_offset, me.boot_id, 16) != 0) f.add(page_refusal::other_boot);
  if (std::memcmp(bytes + vendor_offset, me.counter_vendor, 16) != 0 ||
      field(bytes, size, signature_offset, 4) != me.counter_signature) {
    f.add(page_refusal::other_counter);
  }
  return f;
}

// What is wrong with a page file and its directory (check_page_file).
faults file_faults(const struct stat& file, const struct stat& directory) {
  faults f;
  constexpr mode_t loose = S_IWGRP | S_IWOTH;
  if ((file.st_mode & S_IFMT) != S_IFREG) f.add(page_refusal::not_regular);
  if ((file.st_mode & loose) != 0) f.add(page_refusal::loose_mode);
  if (file.st_uid != 0 && file.st_uid != directory.st_uid) f.add(page_refusal::foreign_owner);
  if ((directory.st_mode & loose) != 0) f.add(page_refusal::loose_directory);
  if (file.st_size != static_cast<off_t>(page_size)) f.add(page_refusal::wrong_size);
  return f;
}

// /proc/sys/kernel/random/boot_id's text, parsed without the library.
bool reference_boot_id(const char* text, std::size_t length, std::uint8_t out[16]) {
  if (length == 37 && text[36] == '\n') length = 36;
  if (length != 36) return false;
  char digits[32];
  std::size_t n = 0;
  for (std::size_t i = 0; i < 36; ++i) {
    const bool dash_here = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash_here != (text[i] == '-')) return false;
    if (!dash_here) digits[n++] = text[i];
  }
  for (std::size_t i = 0; i < 16; ++i) {
    unsigned value = 0;
    for (std::size_t j = 0; j < 2; ++j) {
      const char c = digits[2 * i + j];
      unsigned d = 0;
      if (c >= '0' && c <= '9') {
        d = static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<unsigned>(c - 'a') + 10;
      } else if (c >= 'A' && c <= 'F') {
        d = static_cast<unsigned>(c - 'A') + 10;
      } else {
        return false;
      }
      value = value * 16 + d;
    }
    out[i] = static_cast<std::uint8_t>(value);
  }
  return true;
}

// --- Identities --------------------------------------------------------------

machine_identity this_machine;    // read_machine_identity(), once
machine_identity fixed_identity;  // a made-up Intel machine, the same everywhere
bool in_offset_time_namespace = false;

machine_identity make_fixed_identity() {
  machine_identity id;
  id.have_boot_id = true;
  const std::uint8_t boot[16] = {0x85, 0x40, 0xe9, 0x15, 0x2c, 0x71, 0x49, 0x85,
                                 0xbb, 0x4c, 0x31, 0xa8, 0x81, 0x33, 0x81, 0xf2};
  std::memcpy(id.boot_id, boot, sizeof(boot));
  std::memcpy(id.counter_vendor, "GenuineIntel", 12);
  id.counter_signature = 0x000906ea;
  id.counter_nominal_hz = 3'000'000'000;
  return id;
}

// An identity taken from the header's own fields (so that "same boot, same
// CPU" is reachable without guessing 16 random bytes): the boot id always,
// the counter's vendor and signature only when `whole`, else this machine's.
machine_identity echo_identity(const std::uint8_t* bytes, std::size_t size, bool whole) {
  machine_identity id = this_machine;
  id.have_boot_id = true;
  for (std::size_t i = 0; i < 16; ++i) {
    id.boot_id[i] = static_cast<std::uint8_t>(field(bytes, size, boot_id_offset + i, 1));
  }
  if (whole) {
    for (std::size_t i = 0; i < 16; ++i) {
      id.counter_vendor[i] = static_cast<char>(field(bytes, size, vendor_offset + i, 1));
    }
    id.counter_signature = static_cast<std::uint32_t>(field(bytes, size, signature_offset, 4));
  }
  return id;
}

// --- The modes ---------------------------------------------------------------

void fuzz_header(const std::uint8_t* p, std::size_t size) {
  machine_identity ids[5] = {fixed_identity, this_machine, echo_identity(p, size, true),
                             echo_identity(p, size, false), this_machine};
  ids[4].have_boot_id = false;
  for (const machine_identity& me : ids) {
    const page_refusal r = vclock::check_page_header(p, size, me);
    check_answer(r, header_faults(p, size, me));
    if (r == page_refusal::none) {  // the invariant, spelled out
      page_header h;
      std::memcpy(&h, p, sizeof(h));
      FUZZ_CHECK(h.magic == vclock::page_magic && h.abi_major == vclock::page_abi_major);
      FUZZ_CHECK(h.header_size == header_bytes && h.page_size == page_size);
      FUZZ_CHECK(me.have_boot_id && std::memcmp(h.boot_id, me.boot_id, 16) == 0);
      FUZZ_CHECK(std::memcmp(h.counter_vendor, me.counter_vendor, 16) == 0);
      FUZZ_CHECK(h.counter_signature == me.counter_signature);
    }
  }
}

bool offsets_clocks(const char* text, std::size_t length) {
  const std::unique_ptr<char[]> copy = exact_copy(text, length);
  return vclock::time_namespace_offsets_clocks(copy.get(), length);
}

void fuzz_timens(const std::uint8_t* p, std::size_t size) {
  const char* text = reinterpret_cast<const char*>(p);
  const bool offset = offsets_clocks(text, size);
  // An offset is a number that is not zero: there is a digit 1-9 somewhere.
  bool nonzero_digit = false;
  for (std::size_t i = 0; i < size; ++i) nonzero_digit |= text[i] >= '1' && text[i] <= '9';
  FUZZ_CHECK(!offset || nonzero_digit);
  // Lines are independent: the text offsets the clocks exactly when its
  // first line or the rest does.
  const void* newline = std::memchr(text, '\n', size);
  if (newline != nullptr) {
    const std::size_t first = static_cast<std::size_t>(static_cast<const char*>(newline) - text);
    const bool head = offsets_clocks(text, first);
    const bool tail = offsets_clocks(text + first + 1, size - first - 1);
    FUZZ_CHECK(offset == (head || tail));
  }
}

// Up to four lines as a kernel writes them: "%-10s %10lld %9ld\n" with the
// clock's name (Linux 5.6 on), or "%d %lld %ld\n" with its id (what a user
// may write to the file), with offsets in the kernel's ranges.
void fuzz_timens_format(const std::uint8_t* p, std::size_t size) {
  constexpr long long max_seconds = INT64_MAX / 1'000'000'000;  // KTIME_SEC_MAX
  const std::uint64_t shape = field(p, size, 0, 1);
  const std::size_t lines = shape % 5;
  const bool final_newline = (shape & 0x10) == 0;
  std::string text;
  bool expected = false;
  for (std::size_t l = 0; l < lines; ++l) {
    const std::size_t at = 1 + 13 * l;
    const std::uint64_t how = field(p, size, at, 1);
    long long seconds = static_cast<long long>(field(p, size, at + 1, 8) %
                                               static_cast<std::uint64_t>(max_seconds + 1));
    if ((how & 4) != 0) seconds = -seconds;
    if ((how & 8) != 0) seconds = 0;
    long nanoseconds = static_cast<long>(field(p, size, at + 9, 4) % 1'000'000'000);
    if ((how & 16) != 0) nanoseconds = 0;
    const bool monotonic = (how & 2) != 0;
    char line[96];
    const int n = (how & 1) != 0
                      ? std::snprintf(line, sizeof(line), "%d %lld %ld\n", monotonic ? 1 : 7,
                                      seconds, nanoseconds)
                      : std::snprintf(line, sizeof(line), "%-10s %10lld %9ld\n",
                                      monotonic ? "monotonic" : "boottime", seconds, nanoseconds);
    FUZZ_CHECK(n > 0 && static_cast<std::size_t>(n) < sizeof(line));
    text.append(line, static_cast<std::size_t>(n));
    expected |= seconds != 0 || nanoseconds != 0;
  }
  if (!final_newline && !text.empty()) text.pop_back();
  FUZZ_CHECK(offsets_clocks(text.data(), text.size()) == expected);
}

// parse_boot_id against the reference parser; true when it parsed.
bool compare_boot_id(const char* text, std::size_t length) {
  const std::unique_ptr<char[]> copy = exact_copy(text, length);
  const std::unique_ptr<std::uint8_t[]> out(new std::uint8_t[16]);  // exact: 16, no more
  std::uint8_t expected[16];
  const bool parsed =
      vclock::parse_boot_id(copy.get(), static_cast<std::uint32_t>(length), out.get());
  FUZZ_CHECK(parsed == reference_boot_id(text, length, expected));
  if (parsed) FUZZ_CHECK(std::memcmp(out.get(), expected, 16) == 0);
  return parsed;
}

void fuzz_boot_id(const std::uint8_t* p, std::size_t size) {
  compare_boot_id(reinterpret_cast<const char*>(p), size);
}

// A UUID formatted from payload bytes 0-15 (byte 16: upper case, newline,
// one character replaced by byte 18 at position byte 17 % 40).
void fuzz_boot_id_format(const std::uint8_t* p, std::size_t size) {
  std::uint8_t id[16];
  for (std::size_t i = 0; i < 16; ++i) id[i] = static_cast<std::uint8_t>(field(p, size, i, 1));
  const std::uint64_t how = field(p, size, 16, 1);
  const char* format = (how & 1) != 0
                           ? "%02X%02X%02X%02X-%02X%02X-%02X%02X-%02X%02X-%02X%02X%02X%02X%02X%02X"
                           : "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x";
  char text[40];
  const int n =
      std::snprintf(text, sizeof(text), format, id[0], id[1], id[2], id[3], id[4], id[5], id[6],
                    id[7], id[8], id[9], id[10], id[11], id[12], id[13], id[14], id[15]);
  FUZZ_CHECK(n == 36);
  std::size_t length = 36;
  if ((how & 2) != 0) text[length++] = '\n';
  const bool corrupt = (how & 4) != 0;
  if (corrupt) {
    const std::size_t at = field(p, size, 17, 1) % length;
    text[at] = static_cast<char>(field(p, size, 18, 1));
  }
  const bool parsed = compare_boot_id(text, length);
  if (!corrupt) {
    std::uint8_t out[16];
    FUZZ_CHECK(parsed && vclock::parse_boot_id(text, static_cast<std::uint32_t>(length), out));
    FUZZ_CHECK(std::memcmp(out, id, 16) == 0);
  }
}

// struct stat fields from the payload, little-endian: file st_mode (4),
// st_uid (4), st_size (8), directory st_mode (4), st_uid (4).
void fuzz_stat(const std::uint8_t* p, std::size_t size) {
  struct stat file {};
  struct stat directory {};
  file.st_mode = static_cast<mode_t>(field(p, size, 0, 4));
  file.st_uid = static_cast<uid_t>(field(p, size, 4, 4));
  file.st_size = static_cast<off_t>(field(p, size, 8, 8));
  directory.st_mode = static_cast<mode_t>(field(p, size, 16, 4));
  directory.st_uid = static_cast<uid_t>(field(p, size, 20, 4));
  check_answer(vclock::check_page_file(file, directory), file_faults(file, directory));
}

// --- attach_shared_page(), end to end -----------------------------------------

// A private directory (mode 0755 or 0775, ours) holding the page file, a
// symbolic link to it, a FIFO and a subdirectory.
std::string scratch;

void remove_scratch() {
  if (scratch.empty()) return;
  chmod(scratch.c_str(), 0755);
  for (const char* name : {"/page", "/link", "/fifo"}) unlink((scratch + name).c_str());
  rmdir((scratch + "/subdir").c_str());
  rmdir(scratch.c_str());
}

void make_scratch() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/vclock-fuzz-attach.XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (mkdtemp(name.data()) == nullptr) {
    std::perror("vclock_fuzz_attach: mkdtemp");
    std::exit(2);
  }
  scratch = name.data();
  std::atexit(remove_scratch);
  const bool ok = chmod(scratch.c_str(), 0755) == 0 &&
                  symlink("page", (scratch + "/link").c_str()) == 0 &&
                  mkfifo((scratch + "/fifo").c_str(), 0644) == 0 &&
                  mkdir((scratch + "/subdir").c_str(), 0755) == 0;
  if (!ok) {
    std::perror("vclock_fuzz_attach: scratch directory");
    std::exit(2);
  }
}

void write_page_file(const std::uint8_t* content, std::size_t size, mode_t mode) {
  const std::string path = scratch + "/page";
  unlink(path.c_str());
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  FUZZ_CHECK(fd >= 0);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = write(fd, content + done, size - done);
    FUZZ_CHECK(n > 0);
    done += static_cast<std::size_t>(n);
  }
  FUZZ_CHECK(fchmod(fd, mode) == 0);
  FUZZ_CHECK(close(fd) == 0);
}

// Payload byte 0: bits 0-2 the path (0-3 the page file, 4 a symbolic link to
// it, 5 nothing, 6 a directory, 7 a FIFO), bits 3-4 the file's mode (0644,
// 0444, 0664, 0646), bit 5 the directory's (0755, 0775), bits 6-7 the
// identity (this machine, fixed, echo, echo of the boot id only). Byte 1,
// bit 0: the file's content is the rest padded with zeros, or cut, to one
// page (so short inputs reach the header checks). The rest: the content.
void fuzz_attach(const std::uint8_t* p, std::size_t size) {
  const std::uint64_t how = field(p, size, 0, 1);
  const std::uint64_t how2 = field(p, size, 1, 1);
  const std::uint8_t* content = size > 2 ? p + 2 : p + size;
  std::size_t content_size = size > 2 ? size - 2 : 0;
  std::vector<std::uint8_t> padded;
  if ((how2 & 1) != 0) {
    padded.assign(page_size, 0);
    std::memcpy(padded.data(), content, content_size < page_size ? content_size : page_size);
    content = padded.data();
    content_size = page_size;
  }
  const unsigned kind = how & 7;
  static constexpr mode_t file_modes[4] = {0644, 0444, 0664, 0646};
  const mode_t file_mode = file_modes[(how >> 3) & 3];
  const mode_t directory_mode = (how & 0x20) != 0 ? 0775 : 0755;
  machine_identity me;
  switch ((how >> 6) & 3) {
    case 0:
      me = this_machine;
      break;
    case 1:
      me = fixed_identity;
      break;
    default:
      me = echo_identity(content, content_size, ((how >> 6) & 3) == 2);
      break;
  }

  write_page_file(content, content_size, file_mode);
  FUZZ_CHECK(chmod(scratch.c_str(), directory_mode) == 0);
  static const char* const names[8] = {"/page", "/page",   "/page",   "/page",
                                       "/link", "/absent", "/subdir", "/fifo"};
  const std::string path = scratch + names[kind];

  faults expected;
  int expected_error = -1;  // -1: any
  if (kind == 4) {
    expected.add(page_refusal::open_failed);  // O_NOFOLLOW
    expected_error = ELOOP;
  } else if (kind == 5) {
    expected.add(page_refusal::not_found);
    expected_error = ENOENT;
  } else {
    struct stat file {};
    FUZZ_CHECK(stat(path.c_str(), &file) == 0);
    struct stat directory {};
    FUZZ_CHECK(stat(scratch.c_str(), &directory) == 0);
    expected = file_faults(file, directory);
    if (kind < 4) {
      const faults header = header_faults(content, content_size, me);
      expected.bits |= header.bits;
      if (header.empty() && in_offset_time_namespace) expected.add(page_refusal::time_namespace);
    }
  }

  // The target: one page-aligned anonymous page, filled with a pattern.
  void* where =
      mmap(nullptr, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  FUZZ_CHECK(where != MAP_FAILED);
  std::memset(where, 0xa5, page_size);
  const vclock::attach_result r =
      vclock::attach_shared_page(path.c_str(), static_cast<vclock::page*>(where), me);
  check_answer(r.refusal, expected);
  if (expected_error != -1) FUZZ_CHECK(r.error == expected_error);

  // Every byte of the target is readable either way (no SIGBUS): the file
  // after an attach, the untouched pattern after a refusal.
  const volatile std::uint8_t* bytes = static_cast<const volatile std::uint8_t*>(where);
  if (r.refusal == page_refusal::none) {
    FUZZ_CHECK(content_size == page_size);
    for (std::size_t i = 0; i < page_size; ++i) FUZZ_CHECK(bytes[i] == content[i]);
  } else {
    for (std::size_t i = 0; i < page_size; ++i) FUZZ_CHECK(bytes[i] == 0xa5);
  }
  FUZZ_CHECK(munmap(where, page_size) == 0);
}

// --- Seeds -------------------------------------------------------------------

std::vector<std::uint8_t> header_of(const machine_identity& id) {
  page_header h;
  vclock::write_header(h, id, vclock::page_flag_shared);
  std::vector<std::uint8_t> bytes(sizeof(h));
  std::memcpy(bytes.data(), &h, sizeof(h));
  return bytes;
}

void write_seed(const char* directory, const char* name, unsigned mode,
                const std::vector<std::uint8_t>& payload) {
  const std::string path = std::string(directory) + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::perror(path.c_str());
    std::exit(2);
  }
  const unsigned char first = static_cast<unsigned char>(mode);
  const bool ok = std::fwrite(&first, 1, 1, f) == 1 &&
                  std::fwrite(payload.data(), 1, payload.size(), f) == payload.size();
  if (std::fclose(f) != 0 || !ok) {
    std::perror(path.c_str());
    std::exit(2);
  }
}

void write_seed(const char* directory, const char* name, unsigned mode, const std::string& text) {
  write_seed(directory, name, mode, std::vector<std::uint8_t>(text.begin(), text.end()));
}

void set(std::vector<std::uint8_t>& bytes, std::size_t offset, std::uint64_t value,
         std::size_t width) {
  for (std::size_t i = 0; i < width; ++i) {
    bytes[offset + i] = static_cast<std::uint8_t>(value >> (8 * i));
  }
}

void write_seeds(const char* d) {
  if (mkdir(d, 0755) != 0 && errno != EEXIST) {
    std::perror(d);
    std::exit(2);
  }
  const std::vector<std::uint8_t> mine = header_of(this_machine);
  std::vector<std::uint8_t> page = mine;
  page.resize(page_size, 0);
  std::uint32_t state = 0x12345678;  // garbage, the same on every machine
  std::vector<std::uint8_t> garbage(300);
  for (std::uint8_t& b : garbage) {
    state = state * 1664525 + 1013904223;
    b = static_cast<std::uint8_t>(state >> 24);
  }

  write_seed(d, "header-this-machine", mode_header, mine);
  write_seed(d, "header-page-this-machine", mode_header, page);
  write_seed(d, "header-fixed-identity", mode_header, header_of(fixed_identity));
  write_seed(d, "header-truncated", mode_header,
             std::vector<std::uint8_t>(mine.begin(), mine.end() - 1));
  write_seed(d, "header-empty", mode_header, std::vector<std::uint8_t>());
  write_seed(d, "header-garbage", mode_header, garbage);
  std::vector<std::uint8_t> h = mine;
  set(h, 0, vclock::page_magic ^ 0xff, 8);
  write_seed(d, "header-bad-magic", mode_header, h);
  h = mine;
  set(h, 8, vclock::page_abi_major - 1u, 2);
  write_seed(d, "header-older-abi", mode_header, h);
  set(h, 8, vclock::page_abi_major + 1u, 2);
  write_seed(d, "header-newer-abi", mode_header, h);
  h = mine;
  set(h, 12, 64, 4);
  write_seed(d, "header-bad-header-size", mode_header, h);
  h = mine;
  set(h, 16, 2 * page_size, 4);
  write_seed(d, "header-bad-page-size", mode_header, h);
  h = mine;
  h[boot_id_offset + 15] ^= 1;
  write_seed(d, "header-other-boot", mode_header, h);
  h = mine;
  std::memcpy(h.data() + vendor_offset, "AuthenticAMD\0\0\0\0", 16);
  write_seed(d, "header-other-vendor", mode_header, h);
  h = mine;
  set(h, signature_offset, this_machine.counter_signature + 1, 4);
  write_seed(d, "header-other-signature", mode_header, h);

  write_seed(d, "timens-none", mode_timens,
             "monotonic           0         0\nboottime            0         0\n");
  write_seed(d, "timens-monotonic", mode_timens,
             "monotonic       86400         0\nboottime            0         0\n");
  write_seed(d, "timens-boottime-ns", mode_timens,
             "monotonic           0         0\nboottime            0         1");
  write_seed(d, "timens-ids", mode_timens, "1 0 0\n7 -5 0\n");
  write_seed(d, "timens-odd", mode_timens,
             "monotonic\t+0\t-0\n\n \t-\nboottime 9223372036854775807 1");
  write_seed(d, "timens-format", mode_timens_format,
             std::vector<std::uint8_t>{2, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                       8, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0});

  char text[64];
  std::snprintf(text, sizeof(text),
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n",
                this_machine.boot_id[0], this_machine.boot_id[1], this_machine.boot_id[2],
                this_machine.boot_id[3], this_machine.boot_id[4], this_machine.boot_id[5],
                this_machine.boot_id[6], this_machine.boot_id[7], this_machine.boot_id[8],
                this_machine.boot_id[9], this_machine.boot_id[10], this_machine.boot_id[11],
                this_machine.boot_id[12], this_machine.boot_id[13], this_machine.boot_id[14],
                this_machine.boot_id[15]);
  const std::string boot(text);
  write_seed(d, "bootid-newline", mode_boot_id, boot);
  write_seed(d, "bootid-bare", mode_boot_id, boot.substr(0, 36));
  write_seed(d, "bootid-short", mode_boot_id, boot.substr(0, 35));
  write_seed(d, "bootid-upper", mode_boot_id, "8540E915-2C71-4985-BB4C-31A8813381F2");
  write_seed(d, "bootid-no-dash", mode_boot_id, "8540e915a2c71-4985-bb4c-31a8813381f2\n");
  write_seed(d, "bootid-format", mode_boot_id_format,
             std::vector<std::uint8_t>(this_machine.boot_id, this_machine.boot_id + 16));

  std::vector<std::uint8_t> st(24, 0);
  set(st, 0, S_IFREG | 0644, 4);
  set(st, 4, 1000, 4);
  set(st, 8, page_size, 8);
  set(st, 16, S_IFDIR | 0755, 4);
  set(st, 20, 1000, 4);
  write_seed(d, "stat-good", mode_stat, st);
  set(st, 4, 0, 4);
  set(st, 16, S_IFDIR | 01777, 4);
  write_seed(d, "stat-root-in-tmp", mode_stat, st);

  // attach: byte 0 path/modes/identity, byte 1 padding, then the content.
  const auto attach = [&](const char* name, std::uint8_t how, std::uint8_t how2,
                          const std::vector<std::uint8_t>& content) {
    std::vector<std::uint8_t> payload{how, how2};
    payload.insert(payload.end(), content.begin(), content.end());
    write_seed(d, name, mode_attach, payload);
  };
  attach("attach-this-machine", 0, 0, page);
  attach("attach-this-machine-padded", 0, 1, mine);
  attach("attach-fixed-identity", 1 << 6, 1, header_of(fixed_identity));
  attach("attach-echo", 2 << 6, 1, garbage);
  attach("attach-short-file", 0, 0, mine);
  attach("attach-empty-file", 0, 0, {});
  attach("attach-symlink", 4, 1, mine);
  attach("attach-absent", 5, 1, mine);
  attach("attach-directory", 6, 1, mine);
  attach("attach-fifo", 7, 1, mine);
  attach("attach-loose-file", 2 << 3, 1, mine);
  attach("attach-loose-directory", 0x20, 1, mine);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  this_machine = vclock::read_machine_identity();
  fixed_identity = make_fixed_identity();
  if (const char* seeds = std::getenv("VCLOCK_FUZZ_WRITE_SEEDS")) {
    write_seeds(seeds);
    std::exit(0);
  }
  char text[256];
  const int fd = open("/proc/self/timens_offsets", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    const ssize_t n = read(fd, text, sizeof(text));
    close(fd);
    in_offset_time_namespace =
        n > 0 && vclock::time_namespace_offsets_clocks(text, static_cast<std::size_t>(n));
  }
  make_scratch();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t* payload = data + 1;
  const std::size_t payload_size = size - 1;
  switch (data[0] % mode_count) {
    case mode_header:
      fuzz_header(payload, payload_size);
      break;
    case mode_timens:
      fuzz_timens(payload, payload_size);
      break;
    case mode_timens_format:
      fuzz_timens_format(payload, payload_size);
      break;
    case mode_boot_id:
      fuzz_boot_id(payload, payload_size);
      break;
    case mode_boot_id_format:
      fuzz_boot_id_format(payload, payload_size);
      break;
    case mode_stat:
      fuzz_stat(payload, payload_size);
      break;
    default:
      fuzz_attach(payload, payload_size);
      break;
  }
  return 0;
}
