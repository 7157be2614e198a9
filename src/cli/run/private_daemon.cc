// Starting a private vclockd: a temporary directory, the page published in
// it at once (a header over lines that say "ask the kernel"), and a double
// fork so that the daemon is no child of the command that `vclock run`
// becomes.
//
// Why not wait for the daemon: until its first tick a page sends every
// reader to the kernel (max_delta 0, no coarse owner), which answers
// exactly, as it does later while the counter calibrates; so the command
// may start as soon as the page exists, and the daemon's exec and start
// overlap the command's instead of preceding it (docs/performance.md,
// "Start-up without a vclockd").
#include "cli/run/private_daemon.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "lib/page_identity.h"
#include "vclock/page.h"

namespace vclock::cli {
namespace {

std::string temporary_directory() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base != nullptr && base[0] == '/' ? base : "/tmp") + "/vclock-run.XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

// The page as a daemon that has not ticked yet leaves it: its header (this
// boot, this counter), every line zero. vclockd continues such a page as it
// continues its own after a restart. Written before the command or the
// daemon exists, in a directory no one else can write: no reader can see it
// half written.
bool publish_untouched_page(const std::string& path, std::string& error) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  static page fresh;  // 4 KiB: not on the stack
  write_untouched_page(fresh, read_machine_identity());
  // For `vclock status` only (readers go by the lines): no daemon has published yet.
  fresh.mode_reason = static_cast<std::uint32_t>(fallback_reason::not_started);
  const bool written = fchmod(fd, 0644) == 0 &&
                       write(fd, &fresh, sizeof(fresh)) == static_cast<ssize_t>(sizeof(fresh));
  if (!written) error = "cannot write " + path + ": " + std::strerror(errno);
  close(fd);
  if (!written) unlink(path.c_str());
  return written;
}

// In the grandchild: the daemon, with no terminal and no stdio of ours.
[[noreturn]] void exec_daemon(const std::string& vclockd, const std::string& page,
                              pid_t serve_pid) {
  const int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    if (null > 2) close(null);
  }
  // Not the service manager's: a unit that runs `vclock run` is not told
  // READY by the command's daemon.
  unsetenv("NOTIFY_SOCKET");
  unsetenv("LD_PRELOAD");  // the shim stays out of the daemon
  const std::string pid = std::to_string(serve_pid);
  const char* argv[] = {vclockd.c_str(), "--page",           page.c_str(), "--exit-with-pid",
                        pid.c_str(),     "--remove-on-exit", nullptr};
  execv(vclockd.c_str(), const_cast<char* const*>(argv));
  // The page stays, untouched: its readers ask the kernel; the directory is
  // left behind (a daemon that cannot be run is said before this: access()).
  _exit(127);
}

}  // namespace

private_daemon start_private_daemon(const std::string& vclockd, pid_t serve_pid) {
  private_daemon result;
  if (access(vclockd.c_str(), X_OK) != 0) {
    result.error = "no vclockd at '" + vclockd + "'";
    return result;
  }
  const std::string dir = temporary_directory();
  if (dir.empty()) {
    result.error = std::string("cannot create a temporary directory: ") + std::strerror(errno);
    return result;
  }
  const std::string page = dir + "/page";
  if (!publish_untouched_page(page, result.error)) {
    rmdir(dir.c_str());
    return result;
  }
  const pid_t child = fork();
  if (child < 0) {
    result.error = std::string("fork: ") + std::strerror(errno);
    unlink(page.c_str());
    rmdir(dir.c_str());
    return result;
  }
  if (child == 0) {
    setsid();  // no terminal's signals: the command's Ctrl-C is the command's
    if (fork() == 0) exec_daemon(vclockd, page, serve_pid);
    _exit(0);
  }
  // The intermediate child is reaped later (reap_starter), just before the
  // exec: never left for the command to find, and not waited for here,
  // where its turn on a busy CPU would hold up everything that follows.
  result.starter = child;
  // From here on the daemon, however soon the command ends, removes the
  // page and the directory (it exits with the command, or at once if the
  // command has ended before it looked).
  result.page = page;
  return result;
}

void reap_starter(private_daemon& d) {
  if (d.starter <= 0) return;
  int status = 0;
  while (waitpid(d.starter, &status, 0) < 0 && errno == EINTR) {
  }
  d.starter = 0;
}

}  // namespace vclock::cli
