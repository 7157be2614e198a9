// System calls made inside a traced process stopped at its exec, for the
// vDSO handover (vdso_handover.h): the register-level part, one file per
// architecture (tracee_registers_x86_64.cc; tracee_registers_none.cc where
// there is none yet), chosen by CMake.
#ifndef VCLOCK_SRC_CLI_RUN_TRACEE_REGISTERS_H_
#define VCLOCK_SRC_CLI_RUN_TRACEE_REGISTERS_H_

#include <sys/types.h>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

namespace vclock::cli {

// False where this build cannot make calls in a tracee (no arch file yet).
bool can_inject_into_tracee() noexcept;

// A system call that executes a program, as a seccomp filter sees it: its
// AUDIT_ARCH_* and number, and whether its path is the second argument
// (execveat) rather than the first.
struct exec_syscall {
  std::uint32_t arch;
  std::uint32_t nr;
  bool path_second;
};
// Every such call in each ABI a process of this architecture may call it
// from (exec_notifier.h: an exec the filter missed would be a program not
// reached). Empty where there is no handover.
std::span<const exec_syscall> exec_syscalls() noexcept;

// One session of injected calls in a tracee that the caller has stopped at
// PTRACE_EVENT_EXEC (before its first instruction). begin() saves its
// registers and the code at its entry and puts a small stub there;
// finish() puts both back, so that the program starts as the kernel left
// it. Signals that arrive meanwhile stay pending in the kernel: begin()
// blocks every signal it may (all but SIGKILL, SIGSTOP and SIGTRAP, which
// the stub's int3 raises), finish() puts the program's own mask back, and
// they reach it as they would have, each with its sender's details, real-
// time ones queued. What still comes (SIGSTOP, or anything where the
// kernel cannot set a tracee's mask) is held and queued again by finish().
class tracee_calls {
 public:
  bool begin(pid_t pid, std::string& error);
  // System call `nr` with up to six arguments in the tracee: its return
  // value (or -errno) in `result`. False if the tracee could not be run.
  bool call(long nr, std::initializer_list<std::uint64_t> args, std::int64_t& result,
            std::string& error);
  bool finish(std::string& error);
  std::uint64_t stack_pointer() const { return stack_pointer_; }

 private:
  pid_t pid_ = 0;
  std::uint64_t entry_ = 0;
  std::uint64_t saved_code_ = 0;
  std::uint64_t stack_pointer_ = 0;
  std::uint64_t held_signals_ = 0;  // bit N-1: signal N held (POSIX merges repeats)
  std::uint64_t saved_mask_ = 0;    // the program's blocked set at its exec
  bool mask_set_ = false;           // begin() blocked the rest: finish() restores
  alignas(8) unsigned char saved_registers_[512] = {};
};

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_RUN_TRACEE_REGISTERS_H_
