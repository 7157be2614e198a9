// A vclockd of one command's own, for `vclock run` when no vclockd serves
// the machine: the command and every process it starts read that daemon's
// page (so none of them needs a thread of its own, which the shim never
// starts), and the daemon goes away with the command.
#ifndef VCLOCK_SRC_CLI_RUN_PRIVATE_DAEMON_H_
#define VCLOCK_SRC_CLI_RUN_PRIVATE_DAEMON_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace vclock::cli {

struct private_daemon {
  std::string page;      // the page to point VCLOCK_PAGE at; "" if it failed
  std::string error;     // why it failed
  pid_t starter = 0;     // the intermediate child, exited or exiting: reap_starter() reaps it
  bool started = false;  // forked (by this process's child, or the tracer's starter)
  pid_t serve_pid = 0;   // the command's (this process's) pid: the daemon exits with it
  // The daemon's command line and environment, fixed when it was prepared
  // (the environment `vclock run` was given, less LD_PRELOAD and
  // NOTIFY_SOCKET), so that any child may start it later.
  std::vector<std::string> argv;
  std::vector<std::string> env;

  private_daemon() = default;
  private_daemon(const private_daemon&) = delete;
  private_daemon& operator=(const private_daemon&) = delete;
  private_daemon(private_daemon&& other) noexcept;
  private_daemon& operator=(private_daemon&&) = delete;
  // A page that no daemon was started for is removed, with its directory:
  // `vclock run` ended before the command (an error), and no daemon will.
  ~private_daemon();
};

// How long the command runs before its daemon is exec'd (a command that
// ends sooner gets none; its page is removed): private_daemon.cc says why.
inline constexpr int private_daemon_delay_ms = 20;

// Prepares `vclockd` (the path) on a page in a fresh private directory
// (mkdtemp, mode 0700: the attach checks accept it): the page is published
// here, before the daemon runs, as one whose readers ask the kernel
// (exactly) until the daemon's first tick, and then until its counter is
// calibrated. The daemon, once started, is told to exit when `serve_pid`
// does (pidfd) and to remove the page then. `page` is empty on failure.
private_daemon prepare_private_daemon(const std::string& vclockd, pid_t serve_pid);

// Starts a prepared daemon, detached from this process (it is not a child
// of the command, which may wait for all of its children): a double fork.
// Does not wait for it. The daemon's process waits for the command to have
// run private_daemon_delay_ms before it execs vclockd, and removes the page
// instead if the command has ended by then.
void start_private_daemon(private_daemon& d);

// The same from a child that is about to exit anyway (the tracer's
// starter, vdso_handover.cc): one fork, the daemon as its child; the
// caller's exit detaches it.
void spawn_private_daemon(const private_daemon& d);

// Reaps the child that started the daemon: before the command is exec'd,
// so that the command never finds a child it did not make.
void reap_starter(private_daemon& d);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_RUN_PRIVATE_DAEMON_H_
