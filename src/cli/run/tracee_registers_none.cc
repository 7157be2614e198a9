// Architectures without a register-level injector yet: `vclock run` says
// that static programs are not reached (vdso_handover.cc) and keeps the shim.
#include "cli/run/tracee_registers.h"

namespace vclock::cli {

bool can_inject_into_tracee() noexcept { return false; }

std::span<const exec_syscall> exec_syscalls() noexcept { return {}; }

bool tracee_calls::begin(pid_t /*pid*/, std::string& error) {
  error = "no vDSO handover on this architecture";
  return false;
}

bool tracee_calls::call(long /*nr*/, std::initializer_list<std::uint64_t> /*args*/,
                        std::int64_t& /*result*/, std::string& error) {
  error = "no vDSO handover on this architecture";
  return false;
}

bool tracee_calls::finish(std::string& /*error*/) { return true; }

}  // namespace vclock::cli
