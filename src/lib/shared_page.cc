// The reader's side of the shared page: checks, then a read-only mapping.
#include "lib/shared_page.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string_view>

#include "lib/small_file.h"

namespace vclock {
namespace {

constexpr mode_t group_or_other_write = S_IWGRP | S_IWOTH;

// Skips blanks; reads a signed decimal integer. False if there is none.
bool read_long(const char*& p, const char* end, long long& value) noexcept {
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  bool negative = false;
  if (p < end && (*p == '-' || *p == '+')) negative = *p++ == '-';
  if (p == end || *p < '0' || *p > '9') return false;
  long long v = 0;
  while (p < end && *p >= '0' && *p <= '9') {
    if (v > (INT64_MAX - 9) / 10) return false;
    v = v * 10 + (*p++ - '0');
  }
  value = negative ? -v : v;
  return true;
}

// Whether this process lives in a kernel time namespace that moves the
// clocks the page serves. Kernels without time namespaces have no such file.
bool in_offset_time_namespace() noexcept {
  char text[256];
  const std::size_t n = read_small_file("/proc/self/timens_offsets", text, sizeof(text));
  return time_namespace_offsets_clocks(text, n);
}

}  // namespace

const char* page_refusal_text(page_refusal r) noexcept {
  switch (r) {
    case page_refusal::none:
      return "";
    case page_refusal::not_found:
      return "no page (no daemon)";
    case page_refusal::open_failed:
      return "page cannot be opened (permissions, or a symbolic link)";
    case page_refusal::not_regular:
      return "page is not a regular file";
    case page_refusal::loose_mode:
      return "page is writable by group or others";
    case page_refusal::foreign_owner:
      return "page is owned by neither root nor its directory's owner";
    case page_refusal::loose_directory:
      return "page's directory is writable by group or others";
    case page_refusal::wrong_size:
      return "page has the wrong size";
    case page_refusal::read_failed:
      return "page header cannot be read";
    case page_refusal::bad_magic:
      return "not a vclock page (bad magic)";
    case page_refusal::other_abi:
      return "page has another ABI major version";
    case page_refusal::bad_header:
      return "page header is inconsistent";
    case page_refusal::other_boot:
      return "page is from another boot";
    case page_refusal::other_counter:
      return "page was written for another CPU";
    case page_refusal::no_boot_id:
      return "this boot's id cannot be read";
    case page_refusal::time_namespace:
      return "process is in a time namespace that offsets its clocks";
    case page_refusal::map_failed:
      return "page cannot be mapped";
  }
  return "unknown";
}

bool directory_of(const char* path, char* out, std::size_t size) noexcept {
  const char* slash = std::strrchr(path, '/');
  if (slash == nullptr) {
    if (size < 2) return false;
    out[0] = '.';
    out[1] = '\0';
    return true;
  }
  std::size_t n = static_cast<std::size_t>(slash - path);
  if (n == 0) n = 1;  // "/page": the root directory
  if (n + 1 > size) return false;
  std::memcpy(out, path, n);
  out[n] = '\0';
  return true;
}

page_refusal check_page_file(const struct stat& file, const struct stat& directory) noexcept {
  if (!S_ISREG(file.st_mode)) return page_refusal::not_regular;
  if ((file.st_mode & group_or_other_write) != 0) return page_refusal::loose_mode;
  if (file.st_uid != 0 && file.st_uid != directory.st_uid) return page_refusal::foreign_owner;
  if ((directory.st_mode & group_or_other_write) != 0) return page_refusal::loose_directory;
  if (file.st_size != static_cast<off_t>(page_bytes)) return page_refusal::wrong_size;
  return page_refusal::none;
}

page_refusal check_page_header(const void* bytes, std::size_t size,
                               const machine_identity& me) noexcept {
  if (size < sizeof(page_header)) return page_refusal::read_failed;
  page_header h;
  std::memcpy(&h, bytes, sizeof(h));
  if (h.magic != page_magic) return page_refusal::bad_magic;
  if (h.abi_major != page_abi_major) return page_refusal::other_abi;
  if (h.header_size != sizeof(page_header) || h.page_size != page_bytes) {
    return page_refusal::bad_header;
  }
  if (!me.have_boot_id) return page_refusal::no_boot_id;
  if (std::memcmp(h.boot_id, me.boot_id, sizeof(h.boot_id)) != 0) return page_refusal::other_boot;
  if (std::memcmp(h.counter_vendor, me.counter_vendor, sizeof(h.counter_vendor)) != 0 ||
      h.counter_signature != me.counter_signature) {
    return page_refusal::other_counter;
  }
  return page_refusal::none;
}

namespace {

// Calls line(name, seconds, nanoseconds) for each line "<clock name or id>
// <seconds> <nanoseconds>" of /proc/self/timens_offsets that has both
// numbers, in order; stops at the first line for which it returns true.
template <class Line>
void each_offset_line(const char* text, std::size_t length, Line&& line) {
  const char* p = text;
  const char* end = text + length;
  while (p < end) {
    const char* eol =
        static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
    if (eol == nullptr) eol = end;
    const char* q = p;
    while (q < eol && *q != ' ' && *q != '\t') ++q;  // the clock's name or id
    const std::string_view name(p, static_cast<std::size_t>(q - p));
    long long seconds = 0, nanoseconds = 0;
    if (read_long(q, eol, seconds) && read_long(q, eol, nanoseconds) &&
        line(name, seconds, nanoseconds)) {
      return;
    }
    if (eol == end) break;
    p = eol + 1;
  }
}

}  // namespace

time_namespace_offsets parse_time_namespace_offsets(const char* text, std::size_t length) noexcept {
  time_namespace_offsets offsets;
  each_offset_line(text, length, [&offsets](std::string_view name, long long s, long long ns) {
    std::int64_t total = 0;
    if (!__builtin_mul_overflow(s, 1'000'000'000LL, &total) &&
        !__builtin_add_overflow(total, ns, &total)) {
      if (name == "monotonic" || name == "1") offsets.monotonic_ns = total;
      if (name == "boottime" || name == "7") offsets.boottime_ns = total;
    }
    return false;
  });
  return offsets;
}

bool time_namespace_offsets_clocks(const char* text, std::size_t length) noexcept {
  bool offset = false;
  each_offset_line(text, length, [&offset](std::string_view, long long s, long long ns) {
    offset = s != 0 || ns != 0;
    return offset;
  });
  return offset;
}

attach_result attach_shared_page(const char* path, page* where, const machine_identity& me,
                                 bool in_own_frame) noexcept {
  attach_result result;
  const auto refuse = [&result](page_refusal r, int error) {
    result.refusal = r;
    result.error = error;
    return result;
  };
  char directory_path[4096];
  if (!directory_of(path, directory_path, sizeof(directory_path))) {
    return refuse(page_refusal::open_failed, ENAMETOOLONG);
  }
  const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return refuse(errno == ENOENT ? page_refusal::not_found : page_refusal::open_failed, errno);
  }
  struct stat file {};
  struct stat directory {};
  page_refusal r = page_refusal::none;
  if (fstat(fd, &file) != 0 || stat(directory_path, &directory) != 0) {
    r = page_refusal::open_failed;
  } else {
    r = check_page_file(file, directory);
  }
  if (r == page_refusal::none) {
    alignas(page_header) unsigned char header[sizeof(page_header)];
    const ssize_t n = pread(fd, header, sizeof(header), 0);
    r = n == static_cast<ssize_t>(sizeof(header)) ? check_page_header(header, sizeof(header), me)
                                                  : page_refusal::read_failed;
  }
  if (r == page_refusal::none && !in_own_frame && in_offset_time_namespace()) {
    r = page_refusal::time_namespace;
  }
  if (r != page_refusal::none) {
    const int error = errno;
    close(fd);
    return refuse(r, r == page_refusal::open_failed ? error : 0);
  }
  // Read-only: the kernel refuses any write, and mprotect() to writable,
  // since the file was opened O_RDONLY.
  void* mapped = mmap(where, page_bytes, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
  const int error = errno;
  close(fd);  // the mapping keeps the file
  if (mapped == MAP_FAILED) return refuse(page_refusal::map_failed, error);
  return result;
}

}  // namespace vclock
