// `vclock ns`: create, change, show, list and remove virtual-time
// namespaces (API.md, "Virtual time"; include/vclock/ns_page.h).
#ifndef VCLOCK_SRC_CLI_NS_NS_COMMAND_H_
#define VCLOCK_SRC_CLI_NS_NS_COMMAND_H_

#include <span>

namespace vclock::cli {

int run_ns(std::span<char* const> args);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_NS_NS_COMMAND_H_
