// Reading a small /proc or /sys file the way the library's constructor must:
// open and one read into the caller's fixed buffer, nothing allocated, no
// stdio (async-signal-safe system calls only).
#ifndef VCLOCK_SRC_LIB_SMALL_FILE_H_
#define VCLOCK_SRC_LIB_SMALL_FILE_H_

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>

namespace vclock {

// Up to `size` bytes of `path` into `out`; the number read, 0 if the file
// cannot be read. Not NUL-terminated.
inline std::size_t read_small_file(const char* path, char* out, std::size_t size) noexcept {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, out, size);
  close(fd);
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

}  // namespace vclock

#endif  // VCLOCK_SRC_LIB_SMALL_FILE_H_
