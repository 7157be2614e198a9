// Installing the vclock vDSO image into a process stopped at its exec
// (src/vdso/image_config.h is the contract): the image and its config page
// mapped by calls made in the process, the pages the shim would have
// mapped beside them, and AT_SYSINFO_EHDR on its stack pointed at the image.
#ifndef VCLOCK_SRC_CLI_RUN_IMAGE_INSTALL_H_
#define VCLOCK_SRC_CLI_RUN_IMAGE_INSTALL_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace vclock::cli {

// What every install maps, fixed by `vclock run` before the command starts.
struct image_plan {
  std::string image;              // vclock-vdso.so
  std::uint64_t image_bytes = 0;  // its PT_LOAD, page-rounded
  std::string host_page;          // the page the shim would read ("": the kernel's time)
  std::string ns_page;            // the virtual-time namespace page ("": none)
  std::uint32_t ordering = 0;     // the counter ordering chosen for this CPU
};

// The kernel's auxv of a process at its exec (/proc/PID/auxv).
struct exec_facts {
  // The program is of this build's own ELF class and machine (a 32-bit
  // program on x86-64 is not: another system call convention; left alone).
  bool native = false;
  bool secure = false;            // AT_SECURE: setuid, setgid, file capabilities
  bool dynamic = false;           // AT_BASE != 0: it has an interpreter
  std::uint64_t kernel_vdso = 0;  // AT_SYSINFO_EHDR as the kernel gave it (0: none)
};
bool read_exec_facts(pid_t pid, exec_facts& facts, std::string& error);

// Checks the image file and fills plan.image_bytes. False, with `error`.
bool prepare_image_plan(image_plan& plan, std::string& error);

// Installs the image into `pid`, stopped at PTRACE_EVENT_EXEC. On failure
// the process is left as the kernel made it (its own vDSO). Signals that
// arrived meanwhile are pending again when it returns.
bool install_image(pid_t pid, const image_plan& plan, const exec_facts& facts, std::string& error);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_RUN_IMAGE_INSTALL_H_
