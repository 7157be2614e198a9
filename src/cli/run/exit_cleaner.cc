// The detached cleaner: a pidfd opened before the fork, so no pid can be
// recycled under it.
#include "cli/run/exit_cleaner.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vclock::cli {

bool remove_at_exit(const std::vector<std::string>& files, const std::string& directory,
                    std::string& error) {
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  if (pidfd < 0) {
    error = std::string("pidfd_open: ") + std::strerror(errno);
    return false;
  }
  const pid_t child = fork();
  if (child < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    close(pidfd);
    return false;
  }
  if (child == 0) {
    setsid();
    if (fork() != 0) _exit(0);
    const int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
    }
    for (;;) {
      pollfd p{pidfd, POLLIN, 0};
      if (poll(&p, 1, -1) > 0 || errno != EINTR) break;
    }
    for (const std::string& f : files) unlink(f.c_str());
    rmdir(directory.c_str());
    _exit(0);
  }
  close(pidfd);  // the cleaner has its own
  int status = 0;
  waitpid(child, &status, 0);
  return true;
}

}  // namespace vclock::cli
