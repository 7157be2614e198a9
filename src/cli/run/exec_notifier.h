// Every exec in `vclock run`'s command tree, told to its tracer: a seccomp
// filter that answers execve and execveat with SECCOMP_RET_USER_NOTIF, so
// that the tracer attaches to a process only around its exec (docs/vdso.md,
// "The handover"). The filter is inherited by every descendant and cannot be
// removed; its listener is the tracer's.
#ifndef VCLOCK_SRC_CLI_RUN_EXEC_NOTIFIER_H_
#define VCLOCK_SRC_CLI_RUN_EXEC_NOTIFIER_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace vclock::cli {

// Installs the filter on this process (and so on all it will start) and
// returns its listener, or -1 with `why` where this kernel cannot
// (seccomp user notification with SECCOMP_USER_NOTIF_FLAG_CONTINUE and a
// listener that hangs up when the last process leaves: Linux 5.8, which
// `why` names), or where a filter with a listener is already in place (a
// `vclock run` inside another). Refused for want of CAP_SYS_ADMIN, it sets
// PR_SET_NO_NEW_PRIVS, as the kernel then requires, and tries again.
// `killable_wait`: the kernel keeps an exec that the listener has received
// waiting for its answer through any signal but a fatal one
// (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, Linux 5.19), so that the tracer
// may ask for a stop before it answers.
int install_exec_filter(bool& killable_wait, std::string& why);

// One exec waiting for the tracer's answer.
struct exec_notice {
  std::uint64_t id = 0;
  pid_t tid = 0;               // the thread calling execve or execveat
  std::uint64_t filename = 0;  // the path's address in that thread
};

// The listener's side. wait() blocks until an exec is told (true) or the
// last process under the filter has gone (false).
class exec_listener {
 public:
  explicit exec_listener(int fd);
  bool wait(exec_notice& notice);
  // Lets the exec go on as the kernel would run it; false where it is gone
  // meanwhile (a signal interrupted it: it is restarted and told again).
  bool let_go(const exec_notice& notice);

 private:
  int fd_;
  std::vector<unsigned char> notif_;
  std::vector<unsigned char> resp_;
};

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_RUN_EXEC_NOTIFIER_H_
