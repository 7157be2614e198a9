// The writer's side of a virtual-time namespace (include/vclock/ns_page.h):
// the parameters a change produces, and the namespace files.
//
// A change re-anchors every clock at a switch point a little in the future
// (switch_margin_ns): its virtual time there is the old line's (so rate,
// freeze and thaw are continuous), or the host's plus the offset the
// change sets. Monotonic clocks may not move back unless allowed. Writers
// of one file take an exclusive flock; they write the copy not in force
// and then flip `current`, so a writer killed midway leaves the namespace
// as it was.
#ifndef VCLOCK_SRC_TIMENS_STORE_H_
#define VCLOCK_SRC_TIMENS_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "timens/time_options.h"
#include "vclock/ns_page.h"

namespace vclock::timens {

// Host time of each family (ns_family order) at a switch point.
struct host_times {
  std::int64_t ns[ns_family_count];
};

// Far enough ahead that the writer publishes before the host clocks get
// there (a preempted writer says so), near enough that `ns set` returns
// at once.
inline constexpr std::int64_t switch_margin_ns = 10'000'000;

// The parameters after a change at `at` (pure: the tests drive it).
// `old` is the copy in force, or nullptr for a new namespace, whose clocks
// start as the host's plus the options' offsets. False with `error` set
// when the options contradict each other, would move a monotonic clock
// back (without allow_backward), before boot, or out of int64 ns.
bool next_params(const ns_params* old, const time_options& options, const host_times& at,
                 ns_params& out, std::string& error);

// Virtual time of `family` at host time `host_ns`, by these parameters.
std::int64_t virtual_time(const ns_params& p, ns_family family, std::int64_t host_ns);

// The kernel's clocks now, one per family.
host_times kernel_host_times();

// The system's namespace directory: `ns` beside the host page
// (/run/vclock/ns, or next to VCLOCK_PAGE's file); "" if too long.
std::string system_timens_directory();
// The file of namespace `spec` (a name or an absolute path): the user's
// directory if it holds the name, else the system's; "" if `spec` is
// neither a name nor an absolute path.
std::string timens_file_of(const std::string& spec);
// Where this user's namespaces live: the system's directory for root,
// $XDG_RUNTIME_DIR/vclock/ns otherwise ("" with `error` if unset).
std::string own_timens_directory(std::string& error);
// The directories `vclock ns list` and name lookups search, in order.
std::vector<std::string> timens_directories();

// Creates the namespace file `path` (its directory is created 0755 if
// missing), mode 0644, written whole before it appears (link(2) of a
// finished temporary file: fails if `path` exists).
// `frame`: what the kernel time namespace of the processes that will read
// it adds to MONOTONIC (and RAW) and BOOTTIME (vclock run --kernel-timens):
// the lines are then written in their clocks' terms, not this process's.
bool create_timens_file(const std::string& path, const std::string& name,
                        const time_options& options, std::string& error,
                        const host_times& frame = {});
// Applies a change to the namespace file `path`; returns when it is in
// force. `late_ns` > 0 when the writer published after its switch point
// (it was preempted that long: readers may have seen a step that small).
bool change_timens_file(const std::string& path, const time_options& options, std::int64_t& late_ns,
                        std::string& error);
// The header and the copy in force.
bool read_timens_file(const std::string& path, ns_header& header, ns_params& params,
                      std::string& error);

}  // namespace vclock::timens

#endif  // VCLOCK_SRC_TIMENS_STORE_H_
