// x86-64: system calls in a tracee stopped at its exec.
//
// At PTRACE_EVENT_EXEC the tracee is still inside execve(2): whatever is
// written to rax now is overwritten by execve's return value on the way
// out, so the call number cannot travel in a register. The stub puts it in
// the code instead, in the 8 bytes at the entry point (one ptrace word):
//   b8 NN NN NN NN   mov eax, NR
//   0f 05            syscall
//   cc               int3        -> SIGTRAP stop, rip = entry + 8
// The arguments travel in rdi, rsi, rdx, r10, r8, r9, which execve's
// return leaves alone. Each call rewrites the stub's number; finish()
// restores the code and every register (rax 0: execve's own result).
//
// Signals meanwhile: a signal the tracee dequeued during a call would stop
// it here, in the tracer, and could only be suppressed and sent again (its
// sender's details lost, real-time repeats merged, any beyond a fixed
// count dropped). So begin() blocks them in the tracee (PTRACE_SETSIGMASK)
// and they wait in the kernel, as sent, until finish() restores the mask.
// SIGTRAP stays as the program had it: the stub's int3 forces it anyway.
#include <linux/audit.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "cli/run/tracee_registers.h"

namespace vclock::cli {
namespace {

constexpr std::uint64_t stub_size = 8;

// A kernel sigset_t (64 signals on x86-64): bit N-1 is signal N.
constexpr std::uint64_t bit_of(int signal) { return std::uint64_t{1} << (signal - 1); }
constexpr std::size_t kernel_sigset_size = sizeof(std::uint64_t);

std::uint64_t stub_for(long nr) {
  std::uint64_t code = 0xb8;  // mov eax, imm32
  code |= (static_cast<std::uint64_t>(nr) & 0xffffffffu) << 8;
  code |= std::uint64_t{0x0f} << 40;  // syscall
  code |= std::uint64_t{0x05} << 48;
  code |= std::uint64_t{0xcc} << 56;  // int3
  return code;
}

bool poke(pid_t pid, std::uint64_t address, std::uint64_t word, std::string& error) {
  if (ptrace(PTRACE_POKEDATA, pid, address, word) != 0) {
    error = std::string("cannot write the tracee's code: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

bool can_inject_into_tracee() noexcept { return true; }

std::span<const exec_syscall> exec_syscalls() noexcept {
  constexpr std::uint32_t x32 = 0x40000000;  // __X32_SYSCALL_BIT
  static constexpr exec_syscall calls[] = {
      {AUDIT_ARCH_X86_64, SYS_execve, false}, {AUDIT_ARCH_X86_64, SYS_execveat, true},
      {AUDIT_ARCH_X86_64, x32 | 520, false},  {AUDIT_ARCH_X86_64, x32 | 545, true},
      {AUDIT_ARCH_I386, 11, false},           {AUDIT_ARCH_I386, 358, true},
  };
  return calls;
}

bool tracee_calls::begin(pid_t pid, std::string& error) {
  static_assert(sizeof(user_regs_struct) <= sizeof(saved_registers_));
  pid_ = pid;
  user_regs_struct regs{};
  if (ptrace(PTRACE_GETREGS, pid, nullptr, &regs) != 0) {
    error = std::string("cannot read the tracee's registers: ") + std::strerror(errno);
    return false;
  }
  // The 64-bit user code segment: a 32-bit program would need int 0x80 and
  // other call numbers (and has another auxv layout).
  constexpr std::uint64_t user_code_segment_64 = 0x33;
  if (regs.cs != user_code_segment_64) {
    error = "not a 64-bit program";
    return false;
  }
  std::memcpy(saved_registers_, &regs, sizeof(regs));
  entry_ = regs.rip;
  stack_pointer_ = regs.rsp;
  errno = 0;
  const long code = ptrace(PTRACE_PEEKDATA, pid, entry_, nullptr);
  if (errno != 0) {
    error = std::string("cannot read the tracee's code: ") + std::strerror(errno);
    return false;
  }
  saved_code_ = static_cast<std::uint64_t>(code);
  // Last, so that nothing fails after it without finish() to undo it. A
  // kernel without PTRACE_GETSIGMASK (before 3.11): signals are held.
  held_signals_ = 0;
  mask_set_ = false;
  std::uint64_t mask = 0;
  if (ptrace(PTRACE_GETSIGMASK, pid, kernel_sigset_size, &mask) == 0) {
    std::uint64_t all = ~bit_of(SIGTRAP) | (mask & bit_of(SIGTRAP));
    if (ptrace(PTRACE_SETSIGMASK, pid, kernel_sigset_size, &all) == 0) {
      saved_mask_ = mask;
      mask_set_ = true;
    }
  }
  return true;
}

bool tracee_calls::call(long nr, std::initializer_list<std::uint64_t> args, std::int64_t& result,
                        std::string& error) {
  if (!poke(pid_, entry_, stub_for(nr), error)) return false;
  user_regs_struct regs{};
  std::memcpy(&regs, saved_registers_, sizeof(regs));
  std::uint64_t a[6] = {};
  std::size_t n = 0;
  for (const std::uint64_t v : args) {
    if (n < 6) a[n++] = v;
  }
  regs.rdi = a[0];
  regs.rsi = a[1];
  regs.rdx = a[2];
  regs.r10 = a[3];
  regs.r8 = a[4];
  regs.r9 = a[5];
  regs.rip = entry_;
  regs.orig_rax = static_cast<std::uint64_t>(-1);  // no system call to restart
  if (ptrace(PTRACE_SETREGS, pid_, nullptr, &regs) != 0) {
    error = std::string("cannot set the tracee's registers: ") + std::strerror(errno);
    return false;
  }
  if (ptrace(PTRACE_CONT, pid_, nullptr, nullptr) != 0) {
    error = std::string("cannot run the tracee: ") + std::strerror(errno);
    return false;
  }
  for (;;) {
    int status = 0;
    if (waitpid(pid_, &status, __WALL) != pid_) {
      if (errno == EINTR) continue;
      error = std::string("lost the tracee: ") + std::strerror(errno);
      return false;
    }
    if (!WIFSTOPPED(status)) {
      error = "the tracee ended during the handover";
      return false;
    }
    const int signal = WSTOPSIG(status);
    const int event = status >> 16;
    if (event == 0) {
      if (ptrace(PTRACE_GETREGS, pid_, nullptr, &regs) != 0) {
        error = std::string("cannot read the tracee's registers: ") + std::strerror(errno);
        return false;
      }
      if (signal == SIGTRAP && regs.rip == entry_ + stub_size) {
        result = static_cast<std::int64_t>(regs.rax);
        return true;
      }
      // A fault of the stub itself would come back at every run.
      siginfo_t info{};
      if (ptrace(PTRACE_GETSIGINFO, pid_, nullptr, &info) == 0 && info.si_code > 0 &&
          (signal == SIGSEGV || signal == SIGBUS || signal == SIGILL || signal == SIGFPE)) {
        error = "the injected call faulted (signal " + std::to_string(signal) + ")";
        return false;
      }
      // A signal on its way in that no mask holds back (SIGSTOP, another's
      // SIGTRAP): held, queued again by finish().
      if (signal > 0 && signal <= 64) held_signals_ |= bit_of(signal);
    }
    // Or a stop of ptrace's own: run on to the stub's trap.
    if (ptrace(PTRACE_CONT, pid_, nullptr, nullptr) != 0) {
      error = std::string("cannot run the tracee: ") + std::strerror(errno);
      return false;
    }
  }
}

bool tracee_calls::finish(std::string& error) {
  // The mask first, whatever fails after: a program left with every
  // signal blocked would never see one. What waited behind it reaches the
  // program, through the tracer, as it runs; what was held is pending again.
  bool restored = true;
  if (mask_set_) {
    mask_set_ = false;
    if (ptrace(PTRACE_SETSIGMASK, pid_, kernel_sigset_size, &saved_mask_) != 0) {
      error = std::string("cannot restore the tracee's signal mask: ") + std::strerror(errno);
      restored = false;
    }
  }
  for (int signal = 1; signal <= 64; ++signal) {
    if ((held_signals_ & bit_of(signal)) != 0) syscall(SYS_tgkill, pid_, pid_, signal);
  }
  held_signals_ = 0;
  if (!poke(pid_, entry_, saved_code_, error)) return false;
  user_regs_struct regs{};
  std::memcpy(&regs, saved_registers_, sizeof(regs));
  regs.rax = 0;  // execve's result, as the program would have started with
  regs.orig_rax = static_cast<std::uint64_t>(-1);
  if (ptrace(PTRACE_SETREGS, pid_, nullptr, &regs) != 0) {
    error = std::string("cannot restore the tracee's registers: ") + std::strerror(errno);
    return false;
  }
  return restored;
}

}  // namespace vclock::cli
