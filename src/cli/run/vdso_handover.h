// `vclock run`'s vDSO handover (docs/vdso.md): a tracer told of every exec
// in the command's tree (exec_notifier.h), which at each exec of a static
// program (of any program with --vdso) installs the vclock vDSO image in
// place of the kernel's, before the program's first instruction.
#ifndef VCLOCK_SRC_CLI_RUN_VDSO_HANDOVER_H_
#define VCLOCK_SRC_CLI_RUN_VDSO_HANDOVER_H_

#include <string>

#include "cli/run/image_install.h"
#include "cli/run/private_daemon.h"

namespace vclock::cli {

struct handover_options {
  image_plan plan;
  bool dynamic_too = false;  // --vdso: dynamic programs get the image too
  std::string command;       // for messages
  // A private vclockd to start with the tracer (one double fork for both):
  // started by the tracer's starter child, which marks it started.
  private_daemon* daemon = nullptr;
};

// Starts the tracer for this process, which is about to exec the command:
// a detached grandchild (the command stays this process, the child of
// whoever started `vclock run`) that checks it can attach (PTRACE_SEIZE),
// then serves the exec filter this installs, or, where there is none,
// stays attached and follows the tree. False, with `reason`, when ptrace
// is refused (Yama, no capability, this process already traced) or the
// tracer cannot start. Starts `options.daemon` where the tracer's starter
// child was forked (daemon->started), whether the tracer then works or not.
bool start_handover(const handover_options& options, std::string& reason);

// Ends the tracer start_handover() started (the command could not be
// executed): this process is no longer traced when it returns.
void stop_handover();

// vclock-vdso.so beside the shim `vclock run` found (its install and its
// build tree both put them together), else in `beside_shim_install` (where
// the installed shim would be: --shim may name a copy elsewhere); "" if
// there is none.
std::string find_vdso_image(const std::string& shim, const std::string& beside_shim_install);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_RUN_VDSO_HANDOVER_H_
