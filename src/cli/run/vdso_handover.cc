// The tracer of `vclock run`'s vDSO handover.
//
// Why ptrace: the image must be in place before the program's first
// instruction, and PTRACE_O_TRACEEXEC stops an exec at exactly that point.
// Why attached only around each exec: a tracer that stays attached sees
// every signal of the processes it follows, each one a stop and a round
// trip through it (a program taking thousands of signals a second runs
// markedly slower). So the command runs under a seccomp filter that tells
// the tracer of each exec in the whole tree (exec_notifier.h): the tracer
// attaches to that thread (PTRACE_SEIZE), lets the exec go on, handles its
// exec stop and detaches. Where the kernel has no such filter, the tracer
// follows the tree as before: attached from the start, forks and clones
// followed, every signal passed on unchanged. It never uses
// PTRACE_O_EXITKILL: if it dies, the programs run on untraced (under the
// filter, though, their execs then fail: docs/vdso.md).
//
// Why a grandchild: `vclock run` becomes the command (exec), so its pid,
// parent, exit status and signals stay the command's. The tracer is forked
// twice and leaves the command's session and process group, so that no
// terminal signal reaches it and the command never sees it as a child.
#include "cli/run/vdso_handover.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "cli/run/exec_notifier.h"
#include "cli/run/sanitized_program.h"
#include "cli/run/tracee_registers.h"
#include "timens/store.h"

namespace vclock::cli {
namespace {

constexpr long trace_options =
    PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE;

// The name the tracer goes by (ps, and another `vclock run`'s tracer, which
// leaves the execs of a nested `vclock run`'s command to it).
constexpr const char* tracer_name = "vclock-handover";

// The pid tracing `pid` (0: none, or unknown).
long tracer_of(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("TracerPid:")) return std::strtol(line.c_str() + 10, nullptr, 10);
  }
  return 0;
}

// Why PTRACE_SEIZE failed, in the user's terms.
std::string refusal_reason(int error, pid_t target) {
  if (const long tracer = tracer_of(target); tracer != 0) {
    return "it is already traced (by pid " + std::to_string(tracer) +
           ", a debugger or strace): a process has one tracer";
  }
  std::ifstream yama("/proc/sys/kernel/yama/ptrace_scope");
  int scope = 0;
  if (yama >> scope && scope == 3) return "ptrace is disabled (Yama ptrace_scope 3)";
  if (error == EPERM || error == EACCES) {
    return std::string("ptrace is refused (") + std::strerror(error) +
           (scope == 2 ? "; Yama ptrace_scope 2 needs CAP_SYS_PTRACE" : "; no CAP_SYS_PTRACE?") +
           ")";
  }
  return std::string("ptrace failed: ") + std::strerror(error);
}

bool read_all(int fd, void* data, std::size_t size) {
  auto* p = static_cast<unsigned char*>(data);
  while (size > 0) {
    const ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool write_all(int fd, const void* data, std::size_t size) {
  return write(fd, data, size) == static_cast<ssize_t>(size);
}

pid_t started_tracer = 0;

// The plan for one process, from its environment as its exec left it, as
// the shim would read it there: VCLOCK_DISABLE=1 (nothing: false),
// VCLOCK_PAGE (off, or another page), VCLOCK_NS (another namespace, or none
// once unset: a command may leave the namespace as it may under the shim).
bool plan_for(pid_t pid, const image_plan& base, image_plan& plan) {
  plan = base;
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string entry;
  bool have_ns = false;
  while (std::getline(in, entry, '\0')) {
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = entry.substr(0, eq);
    const std::string value = entry.substr(eq + 1);
    if (key == "VCLOCK_DISABLE" && value == "1") return false;
    if (key == "VCLOCK_PAGE") {
      if (value == "off") {
        plan.host_page.clear();
      } else if (!value.empty() && value[0] == '/' && value != base.host_page) {
        plan.host_page = access(value.c_str(), R_OK) == 0 ? value : "";
      }
    }
    if (key == "VCLOCK_NS" && !value.empty()) {
      have_ns = true;
      if (value != base.ns_page) plan.ns_page = timens::timens_file_of(value);
    }
  }
  if (!have_ns) plan.ns_page.clear();
  return true;
}

// What to do with a process at its exec: go on following it (true), or let
// it go (false: a sanitized program, see sanitized_program.h).
bool on_exec(pid_t pid, const handover_options& options) {
  exec_facts facts;
  std::string error;
  if (!read_exec_facts(pid, facts, error)) return true;  // gone already
  if (!facts.native) return true;                        // a 32-bit program: the kernel's vDSO
  const std::string exe = "/proc/" + std::to_string(pid) + "/exe";
  if (facts.dynamic && has_leak_sanitizer(exe)) return false;
  // setuid, setgid, file capabilities: never (as the shim: AT_SECURE).
  if (facts.secure) return true;
  if (facts.dynamic && !options.dynamic_too) return true;  // the shim serves it
  image_plan plan;
  if (!plan_for(pid, options.plan, plan)) return true;
  if (!install_image(pid, plan, facts, error)) {
    char name[256] = {};
    const ssize_t n = readlink(exe.c_str(), name, sizeof(name) - 1);
    std::fprintf(stderr, "vclock run: %s (pid %d): not given the vclock vDSO: %s\n",
                 n > 0 ? name : options.command.c_str(), static_cast<int>(pid), error.c_str());
  }
  return true;
}

// Follows every traced process until none is left.
[[noreturn]] void trace(const handover_options& options) {
  for (;;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, __WALL);
    if (pid < 0) {
      if (errno == EINTR) continue;
      _exit(0);  // ECHILD: every traced process has ended
    }
    if (!WIFSTOPPED(status)) continue;  // ended
    const int signal = WSTOPSIG(status);
    const int event = status >> 16;
    if (event == PTRACE_EVENT_EXEC) {
      const bool follow = on_exec(pid, options);
      ptrace(follow ? PTRACE_CONT : PTRACE_DETACH, pid, nullptr, nullptr);
    } else if (event == PTRACE_EVENT_STOP) {
      // A group stop (SIGSTOP and friends) is held as the kernel would hold
      // it; the stop of a newly attached child just goes on.
      const bool group_stop =
          signal == SIGSTOP || signal == SIGTSTP || signal == SIGTTIN || signal == SIGTTOU;
      ptrace(group_stop ? PTRACE_LISTEN : PTRACE_CONT, pid, nullptr, nullptr);
    } else if (event != 0) {
      ptrace(PTRACE_CONT, pid, nullptr, nullptr);  // fork, vfork, clone: already attached
    } else {
      ptrace(PTRACE_CONT, pid, nullptr, signal);  // a signal: delivered unchanged
    }
  }
}

// The path an exec was asked to run, read from the calling thread ("" where
// it cannot be read).
std::string exec_path(const exec_notice& notice) {
  char path[256] = {};
  iovec local{path, sizeof(path) - 1};
  iovec remote{reinterpret_cast<void*>(notice.filename), sizeof(path) - 1};
  if (process_vm_readv(notice.tid, &local, 1, &remote, 1, 0) <= 0) return "";
  return path;
}

// Never silent: an exec this tracer cannot attach to (another tracer came
// between execs) is a program that may not be reached. Another `vclock
// run`'s tracer reaches it itself.
void report_unreached(const exec_notice& notice, const std::string& path, int error) {
  // Only a program that is there: execvp tries each directory of PATH.
  const std::string seen_from_here =
      path.starts_with('/') ? path : "/proc/" + std::to_string(notice.tid) + "/cwd/" + path;
  if (!path.empty() && access(seen_from_here.c_str(), F_OK) != 0) return;
  if (const long other = tracer_of(notice.tid); other != 0) {
    std::ifstream comm("/proc/" + std::to_string(other) + "/comm");
    std::string name;
    if (std::getline(comm, name) && name == tracer_name) return;
  }
  std::fprintf(stderr,
               "vclock run: %s (pid %d): not given the vclock vDSO: %s; a static or Go program "
               "reads the host's time\n",
               path.empty() ? "a program" : path.c_str(), static_cast<int>(notice.tid),
               refusal_reason(error, notice.tid).c_str());
}

// One exec, from the thread's answer to its end: the first stop of the
// thread decides. PTRACE_INTERRUPT makes sure there is one: a successful
// exec stops at PTRACE_EVENT_EXEC first (any stop clears the pending
// interrupt, and an interrupt asked after it is taken by the install's own
// resumes, which run through such stops); an exec that failed (execvp
// trying each directory of PATH) or was interrupted stops as it returns,
// and is let go there, a signal stopped on passed on. No thread stays
// attached between execs, and the tracer waits on one thread at a time
// (the other execs of the tree wait in the kernel meanwhile).
void see_exec_through(const handover_options& options) {
  for (;;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, __WALL);
    if (pid < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (!WIFSTOPPED(status)) return;  // ended (killed meanwhile)
    const int event = status >> 16;
    // A thread other than the leader that execs has the leader's pid at
    // its exec stop: waitpid(-1), this being the tracer's one tracee.
    if (event == PTRACE_EVENT_EXEC) on_exec(pid, options);
    ptrace(PTRACE_DETACH, pid, nullptr, event == 0 ? WSTOPSIG(status) : 0);
    return;
  }
}

// Each exec of the tree, as the filter tells it, until no process is left
// under the filter.
[[noreturn]] void serve_execs(int listener_fd, bool killable_wait,
                              const handover_options& options) {
  exec_listener listener(listener_fd);
  exec_notice notice;
  while (listener.wait(notice)) {
    if (ptrace(PTRACE_SEIZE, notice.tid, nullptr, PTRACE_O_TRACEEXEC) != 0) {
      const int error = errno;
      const std::string path = exec_path(notice);
      if (listener.let_go(notice) && error != ESRCH) report_unreached(notice, path, error);
      continue;
    }
    // The stop asked for before the answer where the wait is killable (a
    // failed exec then stops before its next instruction); after it
    // otherwise, or the request would end the wait (a failed exec may then
    // run a few instructions attached). Answered or not (a signal may have
    // interrupted the wait: the exec is restarted, and told again), the
    // thread is attached: see it through.
    if (killable_wait) ptrace(PTRACE_INTERRUPT, notice.tid, nullptr, nullptr);
    listener.let_go(notice);
    if (!killable_wait) ptrace(PTRACE_INTERRUPT, notice.tid, nullptr, nullptr);
    see_exec_through(options);
  }
  _exit(0);
}

// Lets go of the target after the handshake's probe attach: stopped by
// PTRACE_INTERRUPT, or at a signal on its way (passed on), then detached.
bool detach_target(pid_t target) {
  if (ptrace(PTRACE_INTERRUPT, target, nullptr, nullptr) != 0) return false;
  for (;;) {
    int status = 0;
    if (waitpid(target, &status, __WALL) < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (!WIFSTOPPED(status)) return false;
    const int event = status >> 16;
    return ptrace(PTRACE_DETACH, target, nullptr, event == 0 ? WSTOPSIG(status) : 0) == 0;
  }
}

// A byte, and with it a file descriptor where `fd` >= 0.
bool send_with_fd(int socket, char byte, int fd) {
  iovec io{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  if (fd >= 0) {
    m.msg_control = control;
    m.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(fd));
  }
  ssize_t n = 0;
  do {
    n = sendmsg(socket, &m, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == 1;
}

// The byte send_with_fd() sent, and its descriptor (-1: none).
bool receive_with_fd(int socket, char& byte, int& fd) {
  fd = -1;
  iovec io{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof(control);
  ssize_t n = 0;
  do {
    n = recvmsg(socket, &m, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n != 1) return false;
  const cmsghdr* c = CMSG_FIRSTHDR(&m);
  if (c != nullptr && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
    std::memcpy(&fd, CMSG_DATA(c), sizeof(fd));
  }
  return true;
}

// Whether this tracer may attach to any process of the tree when it
// execs, not only to what it followed from the start: Yama's ptrace_scope
// 1 lets a tracer without CAP_SYS_PTRACE attach only to its descendants
// (and to a process that named it), which the command's are not.
// VCLOCK_TEST_YAMA_PTRACE_SCOPE (test-only, docs/vdso.md) stands for a
// stricter scope than the machine's, so that this decision and the
// fallback it leads to can be run where Yama is absent or at 0; a laxer
// one is ignored.
bool may_attach_to_any_descendant() {
  std::ifstream yama("/proc/sys/kernel/yama/ptrace_scope");
  int scope = 0;
  if (!(yama >> scope)) scope = 0;
  if (const char* test_scope = std::getenv("VCLOCK_TEST_YAMA_PTRACE_SCOPE");
      test_scope != nullptr && test_scope[0] != '\0') {
    scope = std::max(scope, static_cast<int>(std::strtol(test_scope, nullptr, 10)));
  }
  if (scope == 0) return true;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("CapEff:")) {
      const unsigned long long caps = std::strtoull(line.c_str() + 7, nullptr, 16);
      constexpr int cap_sys_ptrace = 19;
      return (caps >> cap_sys_ptrace & 1) != 0;
    }
  }
  return false;
}

// What the tracer tells `vclock run` once it has tried to attach: 0 or
// the errno of PTRACE_SEIZE, and its pid (for PR_SET_PTRACER and
// stop_handover()).
struct attach_report {
  int result = 0;
  pid_t tracer = 0;
};

// The tracer's side of the start, in as few hand-offs as the way the tree
// is followed allows (each is a wait for a process to be scheduled):
//   - with the exec filter (`by_exec`: this tracer may attach to any
//     process of the tree): attaches to the target (the check that the
//     command can be reached at all) and lets go at once, reports, then
//     takes the filter's listener, which the target sends without waiting
//     for an answer (the filter's first notice waits in the kernel until
//     it is read); only where the filter could not be installed (no
//     listener comes) attaches again and says so, as without the filter;
//   - without (Yama: only a process the target named may attach): says
//     its pid, waits for the target's PR_SET_PTRACER, attaches for good,
//     reports, and follows the tree.
[[noreturn]] void tracer_main(pid_t target, bool by_exec, int to_tracer, int from_tracer,
                              const handover_options& options) {
  setsid();
  prctl(PR_SET_NAME, tracer_name, 0, 0, 0);
  // Under the exec filter the tree's execs fail once this process is gone:
  // a casual kill, or a message written to a stderr whose reader has gone,
  // must not end it (SIGKILL still does: docs/vdso.md).
  for (const int ignored : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE}) signal(ignored, SIG_IGN);
  const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);  // a pipe reading the command's output must not wait for us
  }
  attach_report report;
  report.tracer = getpid();
  if (!by_exec) {
    char go = 0;
    if (!write_all(from_tracer, &report.tracer, sizeof(report.tracer)) ||
        !read_all(to_tracer, &go, 1)) {
      _exit(1);
    }
  }
  if (ptrace(PTRACE_SEIZE, target, nullptr, trace_options) != 0) report.result = errno;
  // Let go at once, before the report: the target, once answered, goes on
  // to its exec, which under the filter waits for this process, and a
  // stop of it would wait for a tracer that waits for it.
  if (by_exec && report.result == 0 && !detach_target(target)) report.result = ESRCH;
  write_all(from_tracer, &report, sizeof(report));
  if (report.result != 0) _exit(0);
  if (!by_exec) {
    close(from_tracer);
    close(to_tracer);
    trace(options);
  }
  char mode = 0;
  int listener = -1;
  if (!receive_with_fd(to_tracer, mode, listener)) _exit(1);
  if (listener >= 0) {
    close(from_tracer);
    close(to_tracer);
    serve_execs(listener, mode == 2, options);
  }
  const char attached = ptrace(PTRACE_SEIZE, target, nullptr, trace_options) == 0 ? 1 : 0;
  write_all(from_tracer, &attached, 1);
  close(from_tracer);
  close(to_tracer);
  if (attached == 0) _exit(1);
  trace(options);
}

}  // namespace

std::string find_vdso_image(const std::string& shim, const std::string& beside_shim_install) {
  for (const std::string& dir : {shim.substr(0, shim.rfind('/')), beside_shim_install}) {
    std::string path = dir + "/vclock-vdso.so";
    if (!dir.empty() && access(path.c_str(), R_OK) == 0) return path;
  }
  return "";
}

bool start_handover(const handover_options& options, std::string& reason) {
  if (!can_inject_into_tracee()) {
    reason = "there is no vDSO handover on this architecture yet";
    return false;
  }
  int to_tracer[2];
  int from_tracer[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, to_tracer) != 0 ||
      pipe2(from_tracer, O_CLOEXEC) != 0) {
    reason = std::string("cannot start the tracer: ") + std::strerror(errno);
    return false;
  }
  // Decided here, before the fork, so that the tracer knows it too without
  // being told.
  const bool by_exec = may_attach_to_any_descendant();
  const pid_t target = getpid();
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    close(to_tracer[1]);
    close(from_tracer[0]);
    const pid_t tracer = fork();
    if (tracer == 0) tracer_main(target, by_exec, to_tracer[0], from_tracer[1], options);
    // The private daemon after the tracer, whose answer `vclock run` waits
    // for; this child's exit detaches both.
    if (options.daemon != nullptr) spawn_private_daemon(*options.daemon);
    _exit(tracer > 0 ? 0 : 1);
  }
  if (child > 0 && options.daemon != nullptr) options.daemon->started = true;
  close(to_tracer[0]);
  close(from_tracer[1]);
  const auto fail = [&](const std::string& why) {
    close(to_tracer[1]);
    close(from_tracer[0]);
    reason = why;
    return false;
  };
  if (child < 0) return fail(std::string("cannot start the tracer: ") + std::strerror(errno));
  // The intermediate child is reaped after the handshake (it exits
  // meanwhile), never left for the command to find among its children.
  const auto reap = [child] {
    int child_status = 0;
    while (waitpid(child, &child_status, 0) < 0 && errno == EINTR) {
    }
  };
  bool answered = true;
  if (!by_exec) {
    // Yama's ptrace_scope 1 lets only an ancestor trace: name the tracer
    // (EINVAL without Yama: nothing to do then).
    pid_t tracer = 0;
    answered = read_all(from_tracer[0], &tracer, sizeof(tracer));
    if (answered) {
      prctl(PR_SET_PTRACER, static_cast<unsigned long>(tracer), 0, 0, 0);
      const char go = 1;
      answered = write_all(to_tracer[1], &go, 1);
    }
  }
  attach_report report;
  answered = answered && read_all(from_tracer[0], &report, sizeof(report));
  reap();
  if (!answered) return fail("the tracer did not start");
  if (report.result != 0) return fail(refusal_reason(report.result, target));
  if (!by_exec) {
    close(to_tracer[1]);
    close(from_tracer[0]);
    started_tracer = report.tracer;
    return true;
  }
  // The attach worked: now the exec filter, installed here after the
  // tracer was forked (a process under the filter would keep its listener
  // from ever hanging up), and handed over without waiting: the tracer
  // reads the filter's first notice, this process's exec, when it has it.
  // Without a filter (an old kernel, a listener already in place:
  // `no_filter` says which, for a debugger), the tracer attaches again and
  // follows the tree, as it does under Yama, and says when it has. A
  // tracer lost after the filter went in leaves this process's execs
  // failing (ENOSYS): the command's exec then says so.
  std::string no_filter;
  bool killable_wait = false;
  const int listener = install_exec_filter(killable_wait, no_filter);
  char attached = 0;
  const bool switched =
      send_with_fd(to_tracer[1], killable_wait ? 2 : 1, listener) &&
      (listener >= 0 || (read_all(from_tracer[0], &attached, 1) && attached == 1));
  if (listener >= 0) close(listener);
  close(to_tracer[1]);
  close(from_tracer[0]);
  if (!switched) {
    reason = "the tracer did not start";
    return false;
  }
  started_tracer = report.tracer;
  return true;
}

void stop_handover() {
  if (started_tracer <= 0) return;
  kill(started_tracer, SIGKILL);  // its tracees are let go as it dies
  started_tracer = 0;
  // Until the kernel has let go: this process may go on to use ptrace
  // itself (LeakSanitizer at exit).
  for (int i = 0; i < 200; ++i) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line) && !line.starts_with("TracerPid:")) {
    }
    if (std::strtol(line.c_str() + 10, nullptr, 10) == 0) return;
    usleep(5000);
  }
}

}  // namespace vclock::cli
