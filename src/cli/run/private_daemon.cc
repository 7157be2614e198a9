// Starting a private vclockd: a temporary directory, a notify socket in it
// for the daemon's READY=1, and a double fork so that the daemon is no
// child of the command that `vclock run` becomes.
#include "cli/run/private_daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace vclock::cli {
namespace {

std::string temporary_directory() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base != nullptr && base[0] == '/' ? base : "/tmp") + "/vclock-run.XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

// An AF_UNIX datagram socket bound at `path`, or -1.
int bind_notify_socket(const std::string& path) {
  sockaddr_un address{};
  if (path.size() >= sizeof(address.sun_path)) return -1;
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// In the grandchild: the daemon, with no terminal and no stdio of ours.
[[noreturn]] void exec_daemon(const std::string& vclockd, const std::string& page,
                              const std::string& notify, pid_t serve_pid) {
  const int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    if (null > 2) close(null);
  }
  setenv("NOTIFY_SOCKET", notify.c_str(), 1);
  unsetenv("LD_PRELOAD");  // the shim stays out of the daemon
  const std::string pid = std::to_string(serve_pid);
  const char* argv[] = {vclockd.c_str(), "--page",           page.c_str(), "--exit-with-pid",
                        pid.c_str(),     "--remove-on-exit", nullptr};
  execv(vclockd.c_str(), const_cast<char* const*>(argv));
  _exit(127);
}

// True once a READY=1 datagram arrives on `fd`, within `ready_ms`.
bool wait_for_ready(int fd, int ready_ms) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, ready_ms);
    if (r <= 0) return false;  // a timeout (a slow calibration) is not an error of ours
    char message[256];
    const ssize_t n = recv(fd, message, sizeof(message) - 1, 0);
    if (n <= 0) return false;
    message[n] = '\0';
    if (std::strstr(message, "READY=1") != nullptr) return true;
  }
}

}  // namespace

private_daemon start_private_daemon(const std::string& vclockd, pid_t serve_pid, int ready_ms) {
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
  const std::string notify = dir + "/notify";
  const int socket_fd = bind_notify_socket(notify);
  if (socket_fd < 0) {
    result.error = std::string("cannot bind a notify socket: ") + std::strerror(errno);
    rmdir(dir.c_str());
    return result;
  }
  const pid_t child = fork();
  if (child < 0) {
    result.error = std::string("fork: ") + std::strerror(errno);
  } else if (child == 0) {
    setsid();  // no terminal's signals: the command's Ctrl-C is the command's
    if (fork() == 0) exec_daemon(vclockd, page, notify, serve_pid);
    _exit(0);
  } else {
    int status = 0;
    waitpid(child, &status, 0);
    if (wait_for_ready(socket_fd, ready_ms)) {
      result.page = page;
    } else {
      result.error =
          "the private vclockd did not report ready in " + std::to_string(ready_ms) + " ms";
    }
  }
  close(socket_fd);
  unlink(notify.c_str());
  // On failure the daemon, if it runs at all, still exits with the command
  // and removes the page and the directory.
  return result;
}

}  // namespace vclock::cli
