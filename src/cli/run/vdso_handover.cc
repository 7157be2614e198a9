// The tracer of `vclock run`'s vDSO handover.
//
// Why ptrace and a tracer that stays: the image must be in place before the
// program's first instruction, and descendants that exec again (a script
// running `busybox date`) must be reached too; PTRACE_O_TRACEEXEC stops each
// exec at exactly that point, and the fork/clone options attach every
// descendant as it is born. The tracer passes every signal on unchanged and
// never uses PTRACE_O_EXITKILL: if it dies, the programs run on, untraced.
//
// Why a grandchild: `vclock run` becomes the command (exec), so its pid,
// parent, exit status and signals stay the command's. The tracer is forked
// twice and leaves the command's session and process group, so that no
// terminal signal reaches it and the command never sees it as a child.
#include "cli/run/vdso_handover.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "cli/run/sanitized_program.h"
#include "cli/run/tracee_registers.h"
#include "timens/store.h"

namespace vclock::cli {
namespace {

constexpr long trace_options =
    PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE;

// Why PTRACE_SEIZE failed, in the user's terms.
std::string refusal_reason(int error, pid_t target) {
  std::ifstream status("/proc/" + std::to_string(target) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("TracerPid:")) {
      const long tracer = std::strtol(line.c_str() + 10, nullptr, 10);
      if (tracer != 0) {
        return "it is already traced (by pid " + std::to_string(tracer) +
               ", a debugger or strace): a process has one tracer";
      }
    }
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

// The tracer's side of the start: says its pid, waits for the target's
// PR_SET_PTRACER, attaches, says how that went (0 or errno).
[[noreturn]] void tracer_main(pid_t target, int to_tracer, int from_tracer,
                              const handover_options& options) {
  setsid();
  const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);  // a pipe reading the command's output must not wait for us
  }
  const pid_t self = getpid();
  char go = 0;
  if (!write_all(from_tracer, &self, sizeof(self)) || !read_all(to_tracer, &go, 1)) _exit(1);
  int result = 0;
  if (ptrace(PTRACE_SEIZE, target, nullptr, trace_options) != 0) result = errno;
  write_all(from_tracer, &result, sizeof(result));
  close(from_tracer);
  close(to_tracer);
  if (result != 0) _exit(0);
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
  if (pipe2(to_tracer, O_CLOEXEC) != 0 || pipe2(from_tracer, O_CLOEXEC) != 0) {
    reason = std::string("cannot start the tracer: ") + std::strerror(errno);
    return false;
  }
  const pid_t target = getpid();
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    close(to_tracer[1]);
    close(from_tracer[0]);
    const pid_t tracer = fork();
    if (tracer != 0) _exit(tracer > 0 ? 0 : 1);
    tracer_main(target, to_tracer[0], from_tracer[1], options);
  }
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
  pid_t tracer = 0;
  if (!read_all(from_tracer[0], &tracer, sizeof(tracer))) {
    reap();
    return fail("the tracer did not start");
  }
  // Yama's ptrace_scope 1 lets only an ancestor trace: name the tracer
  // (EINVAL without Yama: nothing to do then).
  prctl(PR_SET_PTRACER, static_cast<unsigned long>(tracer), 0, 0, 0);
  const char go = 1;
  int result = 0;
  const bool answered =
      write_all(to_tracer[1], &go, 1) && read_all(from_tracer[0], &result, sizeof(result));
  reap();
  if (!answered) return fail("the tracer did not start");
  close(to_tracer[1]);
  close(from_tracer[0]);
  if (result != 0) {
    reason = refusal_reason(result, target);
    return false;
  }
  started_tracer = tracer;
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
