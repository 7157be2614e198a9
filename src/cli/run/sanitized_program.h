// Whether a program carries LeakSanitizer (ASan's leak check): it stops its
// own threads with ptrace at exit, which fails in a traced process (a
// process has one tracer) and turns its exit status into an error. The
// handover's tracer lets go of such a program at its exec.
#ifndef VCLOCK_SRC_CLI_RUN_SANITIZED_PROGRAM_H_
#define VCLOCK_SRC_CLI_RUN_SANITIZED_PROGRAM_H_

#include <string>

namespace vclock::cli {

// True if the ELF file at `path` names a LeakSanitizer or AddressSanitizer
// entry point in its dynamic string table (a shared runtime, as GCC links
// it, or a static one, whose interface is exported, as Clang links it).
bool has_leak_sanitizer(const std::string& path);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_RUN_SANITIZED_PROGRAM_H_
