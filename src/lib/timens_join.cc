// The reader's side of a namespace page: name, checks, read-only mapping.
#include "lib/timens_join.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "lib/shared_page.h"

namespace vclock {
namespace {

// stat(2) of the directory that holds `path`.
bool stat_directory_of(const char* path, struct stat& out) noexcept {
  char directory[4096];
  return directory_of(path, directory, sizeof(directory)) && stat(directory, &out) == 0;
}

}  // namespace

const char* timens_refusal_text(timens_refusal r) noexcept {
  switch (r) {
    case timens_refusal::none:
      return "";
    case timens_refusal::bad_name:
      return "namespace is neither a name nor an absolute path";
    case timens_refusal::not_found:
      return "no such namespace";
    case timens_refusal::open_failed:
      return "namespace cannot be opened (permissions, or a symbolic link)";
    case timens_refusal::not_regular:
      return "namespace is not a regular file";
    case timens_refusal::loose_mode:
      return "namespace is writable by group or others";
    case timens_refusal::foreign_owner:
      return "namespace is owned by neither root, this user, nor its directory's owner";
    case timens_refusal::loose_directory:
      return "namespace's directory is writable by group or others";
    case timens_refusal::wrong_size:
      return "namespace file has the wrong size";
    case timens_refusal::read_failed:
      return "namespace header cannot be read";
    case timens_refusal::bad_magic:
      return "not a vclock namespace (bad magic)";
    case timens_refusal::other_abi:
      return "namespace has another ABI major version";
    case timens_refusal::bad_header:
      return "namespace header is inconsistent";
    case timens_refusal::map_failed:
      return "namespace cannot be mapped";
  }
  return "unknown";
}

bool valid_timens_name(const char* name) noexcept {
  const std::size_t n = std::strlen(name);
  if (n == 0 || n > 63 || name[0] == '.') return false;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool user_timens_directory(char* out, std::size_t size) noexcept {
  const char* runtime = secure_getenv("XDG_RUNTIME_DIR");
  if (runtime == nullptr || runtime[0] != '/') return false;
  const int n = std::snprintf(out, size, "%s/vclock/ns", runtime);
  return n >= 0 && static_cast<std::size_t>(n) < size;
}

bool system_timens_directory(char* out, std::size_t size) noexcept {
  const auto fits = [size](int n) { return n > 0 && static_cast<std::size_t>(n) < size; };
  const char* page = secure_getenv(page_env);
  const char* slash = page != nullptr && page[0] == '/' ? std::strrchr(page, '/') : nullptr;
  if (slash == nullptr) return fits(std::snprintf(out, size, "%s", default_system_ns_directory));
  // "/page" is in the root directory: "/ns", not "//ns".
  return fits(std::snprintf(out, size, "%.*s/ns", static_cast<int>(slash - page), page));
}

bool timens_path_of(const char* spec, const char* user_directory, const char* system_directory,
                    char* out, std::size_t size) noexcept {
  const auto fits = [size](int n) { return n > 0 && static_cast<std::size_t>(n) < size; };
  if (spec[0] == '/') return fits(std::snprintf(out, size, "%s", spec));
  if (!valid_timens_name(spec)) return false;
  if (user_directory != nullptr && user_directory[0] == '/' &&
      fits(std::snprintf(out, size, "%s/%s", user_directory, spec))) {
    struct stat st {};
    if (lstat(out, &st) == 0) return true;
  }
  return fits(std::snprintf(out, size, "%s/%s", system_directory, spec));
}

timens_refusal check_timens_file(const struct stat& file, const struct stat& directory,
                                 uid_t euid) noexcept {
  if (!S_ISREG(file.st_mode)) return timens_refusal::not_regular;
  if ((file.st_mode & (S_IWGRP | S_IWOTH)) != 0) return timens_refusal::loose_mode;
  if (file.st_uid != 0 && file.st_uid != euid) {
    // The host page's rule: its directory's owner publishes it (vclockd's
    // user), if nobody else could have put it there.
    if (file.st_uid != directory.st_uid) return timens_refusal::foreign_owner;
    if ((directory.st_mode & (S_IWGRP | S_IWOTH)) != 0) return timens_refusal::loose_directory;
  }
  if (file.st_size != static_cast<off_t>(ns_page_bytes)) return timens_refusal::wrong_size;
  return timens_refusal::none;
}

timens_refusal check_timens_header(const void* bytes, std::size_t size) noexcept {
  if (size < sizeof(ns_header)) return timens_refusal::read_failed;
  ns_header h;
  std::memcpy(&h, bytes, sizeof(h));
  if (h.magic != ns_page_magic) return timens_refusal::bad_magic;
  if (h.abi_major != ns_abi_major) return timens_refusal::other_abi;
  if (h.header_size != sizeof(ns_header) || h.page_size != ns_page_bytes) {
    return timens_refusal::bad_header;
  }
  return timens_refusal::none;
}

void write_timens_header(ns_header& h, const char* name) noexcept {
  h = ns_header{};
  h.magic = ns_page_magic;
  h.abi_major = ns_abi_major;
  h.abi_minor = ns_abi_minor;
  h.header_size = sizeof(ns_header);
  h.page_size = ns_page_bytes;
  h.creator_uid = static_cast<std::uint32_t>(geteuid());
  // A plain copy, not snprintf: a fork child handler writes one (kernel_frame.cc).
  for (std::size_t i = 0; i + 1 < sizeof(h.name) && name[i] != '\0'; ++i) h.name[i] = name[i];
}

timens_join_result join_timens_page(const char* path, ns_page* where) noexcept {
  timens_join_result result;
  const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    result.refusal = errno == ENOENT ? timens_refusal::not_found : timens_refusal::open_failed;
    result.error = errno;
    return result;
  }
  struct stat file {};
  struct stat directory {};
  timens_refusal r = fstat(fd, &file) == 0 && stat_directory_of(path, directory)
                         ? check_timens_file(file, directory, geteuid())
                         : timens_refusal::open_failed;
  if (r == timens_refusal::none) {
    alignas(ns_header) unsigned char header[sizeof(ns_header)];
    const ssize_t n = pread(fd, header, sizeof(header), 0);
    r = n == static_cast<ssize_t>(sizeof(header)) ? check_timens_header(header, sizeof(header))
                                                  : timens_refusal::read_failed;
  }
  if (r == timens_refusal::none) {
    void* mapped = mmap(where, ns_page_bytes, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
    if (mapped == MAP_FAILED) {
      r = timens_refusal::map_failed;
      result.error = errno;
    }
  }
  close(fd);  // the mapping keeps the file
  result.refusal = r;
  return result;
}

}  // namespace vclock
