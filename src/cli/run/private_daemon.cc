// Starting a private vclockd: a temporary directory, the page published in
// it at once (a header over lines that say "ask the kernel"), and a double
// fork so that the daemon is no child of the command that `vclock run`
// becomes: the tracer's own where there is a tracer (vdso_handover.cc: its
// starter child forks the daemon too), else one of its own.
//
// Why not wait for the daemon: until its first tick a page sends every
// reader to the kernel (max_delta 0, no coarse owner), which answers
// exactly, as it does later while the counter calibrates; so the command
// may start as soon as the page exists, and the daemon's exec and start
// overlap the command's instead of preceding it (docs/performance.md,
// "Start-up without a vclockd").
#include "cli/run/private_daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

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

void remove_page_and_directory(const std::string& page) {
  if (unlink(page.c_str()) != 0) return;
  rmdir(page.substr(0, page.rfind('/')).c_str());
}

// In the grandchild: the daemon, with no terminal and no stdio of ours,
// once the command has run for private_daemon_delay_ms; a command that
// has ended by then never gets one, and its page goes (the daemon would
// have removed it as it exited). Why wait: vclockd's exec and start (its
// loading, the page, its threads) would otherwise take turns on the CPUs
// with the tracer and the command while they start, and a short command
// never needed it: its counter mode comes only after its calibration,
// hundreds of milliseconds into its run (docs/performance.md), and until
// then the page sends every reader to the kernel, as it does before the
// daemon's first tick.
[[noreturn]] void exec_daemon(const private_daemon& d) {
  const int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    if (null > 2) close(null);
  }
  // Opened now: the command's pid cannot be recycled under it. Where there
  // is no pidfd (a kernel before 5.3) the daemon starts at once.
  const int command = static_cast<int>(syscall(SYS_pidfd_open, d.serve_pid, 0));
  if (command < 0 && errno == ESRCH) {
    remove_page_and_directory(d.page);
    _exit(0);
  }
  if (command >= 0) {
    pollfd ended{command, POLLIN, 0};
    int n = 0;
    while ((n = poll(&ended, 1, private_daemon_delay_ms)) < 0 && errno == EINTR) {
    }
    if (n > 0) {
      remove_page_and_directory(d.page);
      _exit(0);
    }
    close(command);
  }
  std::vector<char*> argv;
  for (const std::string& a : d.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> env;
  for (const std::string& e : d.env) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  execve(argv[0], argv.data(), env.data());
  // The page stays, untouched: its readers ask the kernel; the directory is
  // left behind (a daemon that cannot be run is said before this: access()).
  _exit(127);
}

}  // namespace

private_daemon::private_daemon(private_daemon&& other) noexcept
    : page(std::move(other.page)),
      error(std::move(other.error)),
      starter(other.starter),
      started(other.started),
      serve_pid(other.serve_pid),
      argv(std::move(other.argv)),
      env(std::move(other.env)) {
  other.page.clear();
  other.starter = 0;
}

private_daemon::~private_daemon() {
  if (page.empty() || started) return;
  unlink(page.c_str());
  rmdir(page.substr(0, page.rfind('/')).c_str());
}

private_daemon prepare_private_daemon(const std::string& vclockd, pid_t serve_pid) {
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
  result.argv = {vclockd,           "--page", page, "--exit-with-pid", std::to_string(serve_pid),
                 "--remove-on-exit"};
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry = *e;
    // Not the service manager's: a unit that runs `vclock run` is not told
    // READY by the command's daemon. And the shim stays out of the daemon.
    if (entry.starts_with("NOTIFY_SOCKET=") || entry.starts_with("LD_PRELOAD=")) continue;
    result.env.emplace_back(entry);
  }
  result.page = page;
  result.serve_pid = serve_pid;
  return result;
}

void spawn_private_daemon(const private_daemon& d) {
  if (d.page.empty()) return;
  if (fork() == 0) {
    setsid();  // no terminal's signals: the command's Ctrl-C is the command's
    exec_daemon(d);
  }
}

void start_private_daemon(private_daemon& d) {
  if (d.page.empty() || d.started) return;
  const pid_t child = fork();
  if (child < 0) {
    d.error = std::string("fork: ") + std::strerror(errno);
    return;  // the page goes with `d`
  }
  if (child == 0) {
    spawn_private_daemon(d);
    _exit(0);
  }
  // The intermediate child is reaped later (reap_starter), just before the
  // exec: never left for the command to find, and not waited for here,
  // where its turn on a busy CPU would hold up everything that follows.
  d.starter = child;
  // From here on the daemon, however soon the command ends, removes the
  // page and the directory (it exits with the command, or at once if the
  // command has ended before it looked).
  d.started = true;
}

void reap_starter(private_daemon& d) {
  if (d.starter <= 0) return;
  int status = 0;
  while (waitpid(d.starter, &status, 0) < 0 && errno == EINTR) {
  }
  d.starter = 0;
}

}  // namespace vclock::cli
