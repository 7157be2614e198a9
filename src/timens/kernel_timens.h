// `vclock run --kernel-timens`: a kernel time namespace for the command, so
// that what the shim cannot reach (static binaries, Go, raw system calls)
// sees the namespace's MONOTONIC and BOOTTIME offsets too.
#ifndef VCLOCK_SRC_TIMENS_KERNEL_TIMENS_H_
#define VCLOCK_SRC_TIMENS_KERNEL_TIMENS_H_

#include <cstdint>
#include <string>

namespace vclock::timens {

// Makes the next exec enter a new kernel time namespace whose MONOTONIC
// (with MONOTONIC_RAW and _COARSE) and BOOTTIME run `monotonic_ns` and
// `boottime_ns` ahead of this one's. Root (CAP_SYS_ADMIN) unshares the time
// namespace alone; another user unshares a user namespace with it (mapping
// its own uid and gid), where the kernel allows that. False with `error`
// (one line) when neither is permitted or the kernel refuses the offsets.
bool enter_kernel_time_namespace(std::int64_t monotonic_ns, std::int64_t boottime_ns,
                                 std::string& error);

}  // namespace vclock::timens

#endif  // VCLOCK_SRC_TIMENS_KERNEL_TIMENS_H_
