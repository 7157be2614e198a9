// Kernel time namespaces (`unshare -T`, containers): a process in one reads
// MONOTONIC and BOOTTIME offset from the initial namespace's, which is what
// vclockd publishes (it runs in the initial one, or subtracts nothing: see
// docs/virtual-time.md). A process whose namespace offsets its clocks reads
// the daemon's page and adds its offsets (runtime.cc); these are the pieces
// that find them.
#ifndef VCLOCK_SRC_LIB_KERNEL_FRAME_H_
#define VCLOCK_SRC_LIB_KERNEL_FRAME_H_

#include <cstdint>

#include "lib/shared_page.h"
#include "vclock/ns_page.h"

namespace vclock::detail {

// This process's kernel time namespace.
//   readable  its offsets are known: /proc/self/timens_offsets shows the
//             namespace of this process's *children*, which is its own
//             except between unshare(CLONE_NEWTIME) and the next exec; so
//             the file is read only when /proc/self/ns/time and
//             /proc/self/ns/time_for_children are the same namespace (or
//             the kernel has no time namespaces: offsets 0).
//   link      /proc/self/ns/time ("time:[4026531834]"; "" without time
//             namespaces): a forked child compares its own with it.
struct kernel_frame {
  bool readable = false;
  time_namespace_offsets offsets;
  char link[64] = {};

  bool offsets_clocks() const noexcept {
    return offsets.monotonic_ns != 0 || offsets.boottime_ns != 0;
  }
};

// Raw system calls only, no allocation: safe in a fork child handler.
kernel_frame read_kernel_frame() noexcept;

// True when this process is still in the time namespace whose link is
// `link` (one readlink).
bool in_time_namespace(const char* link) noexcept;

// A namespace page that maps host time to itself on every line: what a
// process whose only "namespace" is its kernel's joins, so that its reads
// go through the path that adds the kernel's offsets.
void write_identity_namespace(ns_page& p) noexcept;

}  // namespace vclock::detail

#endif  // VCLOCK_SRC_LIB_KERNEL_FRAME_H_
