// Entering a kernel time namespace (kernel_timens.h). The offsets can be
// written only between unshare() and the first process entering the
// namespace; execve() then enters it (the caller's next step), since Linux
// moves a process to its time_for_children namespace when it gets a new mm.
#include "timens/kernel_timens.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "vclock/detail/reader.h"

namespace vclock::timens {
namespace {

bool write_file(const char* path, const std::string& text, std::string& error) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  const bool ok =
      fd >= 0 && write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int saved = errno;
  if (fd >= 0) close(fd);
  if (!ok) error = std::string(path) + ": " + std::strerror(saved);
  errno = saved;
  return ok;
}

// "SECONDS NANOSECONDS" with the nanoseconds in [0, 1e9), as the kernel
// reads them (a negative offset has negative seconds).
std::string seconds_and_ns(std::int64_t ns) {
  std::int64_t s = ns / detail::ns_per_s;
  std::int64_t rest = ns % detail::ns_per_s;
  if (rest < 0) {
    rest += detail::ns_per_s;
    --s;
  }
  char text[64];
  std::snprintf(text, sizeof(text), "%lld %lld", static_cast<long long>(s),
                static_cast<long long>(rest));
  return text;
}

}  // namespace

bool enter_kernel_time_namespace(std::int64_t monotonic_ns, std::int64_t boottime_ns,
                                 std::string& error) {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (unshare(CLONE_NEWTIME) != 0) {
    const int first = errno;
    if (first != EPERM || uid == 0) {
      error = std::string("cannot create a kernel time namespace: ") + std::strerror(first);
      return false;
    }
    if (unshare(CLONE_NEWUSER | CLONE_NEWTIME) != 0) {
      error = std::string(
                  "cannot create a kernel time namespace (not root, and no user "
                  "namespace either: ") +
              std::strerror(errno) + ")";
      return false;
    }
    // The same ids inside as outside: files keep their owners.
    if (!write_file("/proc/self/setgroups", "deny", error) ||
        !write_file("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1",
                    error) ||
        !write_file("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1",
                    error)) {
      return false;
    }
  }
  const std::string offsets = "monotonic " + seconds_and_ns(monotonic_ns) + "\nboottime " +
                              seconds_and_ns(boottime_ns) + "\n";
  if (!write_file("/proc/self/timens_offsets", offsets, error)) {
    if (errno == ERANGE) {
      error = "the kernel refuses these offsets (a clock would be negative, or too far)";
    }
    return false;
  }
  return true;
}

}  // namespace vclock::timens
