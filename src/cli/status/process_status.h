// `vclock status --pid P`: whether a running process reads vclock, read
// from outside it (/proc/P/maps): the shim or the library loaded, the
// vclock vDSO image handed to it, and the page it has mapped (a daemon's,
// or none: the kernel answers).
#ifndef VCLOCK_SRC_CLI_STATUS_PROCESS_STATUS_H_
#define VCLOCK_SRC_CLI_STATUS_PROCESS_STATUS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace vclock::cli {

struct process_clock_status {
  std::string error;               // why it could not be read ("" if read)
  std::string exe;                 // /proc/P/exe
  std::string shim;                // libvclock_preload.so's path, "" if not loaded
  std::string library;             // libvclock.so's path, "" if not loaded
  std::vector<std::string> pages;  // shared pages mapped (" (deleted)" kept)
  // The vclock vDSO image `vclock run` handed it (docs/vdso.md): its path,
  // "" if not mapped; its config's counts when /proc/P/mem can be read.
  std::string vdso_image;
  bool vdso_configured = false;
  std::uint64_t vdso_served = 0;
  std::uint64_t vdso_fallback = 0;
};

process_clock_status inspect_process(pid_t pid);

// Prints it as `vclock status` does (a table, or one JSON object).
void print_process_status(pid_t pid, const process_clock_status& s, bool json);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_STATUS_PROCESS_STATUS_H_
