// A vclockd of one command's own, for `vclock run` when no vclockd serves
// the machine: the command and every process it starts read that daemon's
// page (so none of them needs a thread of its own, which the shim never
// starts), and the daemon goes away with the command.
#ifndef VCLOCK_SRC_CLI_RUN_PRIVATE_DAEMON_H_
#define VCLOCK_SRC_CLI_RUN_PRIVATE_DAEMON_H_

#include <sys/types.h>

#include <string>

namespace vclock::cli {

struct private_daemon {
  std::string page;   // the page to point VCLOCK_PAGE at; "" if it failed
  std::string error;  // why it failed
  pid_t starter = 0;  // the intermediate child, exited or exiting: reap_starter() reaps it
};

// Starts `vclockd` (the path) on a page in a fresh private directory
// (mkdtemp, mode 0700: the attach checks accept it), detached from this
// process (it is not a child of the command, which may wait for all of its
// children), told to exit when `serve_pid` does (pidfd) and to remove the
// page then. Does not wait for it: the page is published here, before the
// daemon runs, as one whose readers ask the kernel (exactly) until the
// daemon's first tick, and then until its counter is calibrated.
private_daemon start_private_daemon(const std::string& vclockd, pid_t serve_pid);

// Reaps the child that started the daemon: before the command is exec'd,
// so that the command never finds a child it did not make.
void reap_starter(private_daemon& d);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_RUN_PRIVATE_DAEMON_H_
