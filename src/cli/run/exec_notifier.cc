// The exec filter of `vclock run`'s vDSO handover (exec_notifier.h).
//
// Why a seccomp filter and not a tracer that follows forks: a tracer that
// stays attached sees every signal of every process it follows (each one a
// stop and a round trip through it); told of each exec instead, it attaches
// to that one thread, answers, handles the exec stop, and lets go.
#include "cli/run/exec_notifier.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

#include "cli/run/tracee_registers.h"

namespace vclock::cli {
namespace {

int seccomp(unsigned int operation, unsigned int flags, void* args) {
  return static_cast<int>(syscall(SYS_seccomp, operation, flags, args));
}

// Linux 5.8: the listener says POLLHUP once no process uses the filter (how
// the tracer knows the command tree is gone); CONTINUE came in 5.5.
// VCLOCK_TEST_KERNEL_RELEASE (test-only, docs/vdso.md) stands for an older
// release than this one, so that the fallback for old kernels can be run
// here; a newer one than the running kernel is ignored.
bool kernel_is_recent_enough() {
  const auto recent = [](const char* release) {
    int major = 0;
    int minor = 0;
    if (std::sscanf(release, "%d.%d", &major, &minor) != 2) return false;
    return major > 5 || (major == 5 && minor >= 8);
  };
  utsname u{};
  if (uname(&u) != 0 || !recent(u.release)) return false;
  const char* test_release = std::getenv("VCLOCK_TEST_KERNEL_RELEASE");
  return test_release == nullptr || test_release[0] == '\0' || recent(test_release);
}

}  // namespace

int install_exec_filter(bool& killable_wait, std::string& why) {
  killable_wait = false;
  const std::span<const exec_syscall> calls = exec_syscalls();
  if (calls.empty()) {
    why = "no exec filter on this architecture";
    return -1;
  }
  if (!kernel_is_recent_enough()) {
    why = "seccomp user notification needs Linux 5.8";
    return -1;
  }
  // Four instructions per call (its architecture, then its number), then
  // allow; the match jumps to the notification, last.
  std::vector<sock_filter> code;
  const std::size_t notify_at = calls.size() * 4 + 1;
  for (const exec_syscall& c : calls) {
    code.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
    code.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, c.arch, 0, 2));
    code.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
    const auto to_notify = static_cast<unsigned char>(notify_at - (code.size() + 1));
    code.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, c.nr, to_notify, 0));
  }
  code.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  code.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
  sock_fprog program{static_cast<unsigned short>(code.size()), code.data()};
  const auto install = [&program, &killable_wait] {
    killable_wait = true;
    int fd = seccomp(SECCOMP_SET_MODE_FILTER,
                     SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
                     &program);
    if (fd < 0 && errno == EINVAL) {  // before Linux 5.19
      killable_wait = false;
      fd = seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &program);
    }
    return fd;
  };
  int fd = install();
  if (fd < 0 && errno == EACCES) {
    // No CAP_SYS_ADMIN: the kernel takes a filter only from a process that
    // can gain no privilege by exec (a setuid program then runs with the
    // caller's, as it does under any tracer that is not root).
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) fd = install();
  }
  if (fd < 0) {
    why = errno == EBUSY ? "another exec listener is in place (a vclock run inside another?)"
                         : std::string("seccomp: ") + std::strerror(errno);
  }
  return fd;
}

exec_listener::exec_listener(int fd) : fd_(fd) {
  seccomp_notif_sizes sizes{};
  if (seccomp(SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0) sizes = {};
  // The kernel may know a larger structure than this build: its size, so
  // that RECV never writes past the buffer.
  notif_.resize(std::max<std::size_t>(sizes.seccomp_notif, sizeof(seccomp_notif)));
  resp_.resize(std::max<std::size_t>(sizes.seccomp_notif_resp, sizeof(seccomp_notif_resp)));
}

bool exec_listener::wait(exec_notice& notice) {
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, -1) < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if ((p.revents & POLLIN) == 0) return false;  // POLLHUP: no process left under the filter
    std::fill(notif_.begin(), notif_.end(), 0);
    auto* n = reinterpret_cast<seccomp_notif*>(notif_.data());
    if (ioctl(fd_, SECCOMP_IOCTL_NOTIF_RECV, n) != 0) {
      // ENOENT: the exec was interrupted (a signal, the process killed)
      // between the poll and now; it is told again if it is restarted.
      if (errno == EINTR || errno == ENOENT) continue;
      return false;
    }
    notice.id = n->id;
    notice.tid = static_cast<pid_t>(n->pid);
    bool path_second = false;
    for (const exec_syscall& c : exec_syscalls()) {
      if (c.arch == n->data.arch && static_cast<int>(c.nr) == n->data.nr) {
        path_second = c.path_second;
      }
    }
    notice.filename = n->data.args[path_second ? 1 : 0];
    return true;
  }
}

bool exec_listener::let_go(const exec_notice& notice) {
  std::fill(resp_.begin(), resp_.end(), 0);
  auto* r = reinterpret_cast<seccomp_notif_resp*>(resp_.data());
  r->id = notice.id;
  r->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  return ioctl(fd_, SECCOMP_IOCTL_NOTIF_SEND, r) == 0;
}

}  // namespace vclock::cli
