// The skip for what cannot mean anything under a user-mode emulator: the arm64 preset runs the
// suite under qemu-user, which cannot start another architecture's program (no binfmt_misc
// where CI runs), times every instruction at the emulator's pace, and answers some system calls
// (ptrace, namespaces) for the host rather than for the emulated program.
#ifndef VCLOCK_TESTS_SUPPORT_EMULATION_H_
#define VCLOCK_TESTS_SUPPORT_EMULATION_H_

#include <gtest/gtest.h>

#include "vclock/detail/arch/cpu_features.h"

// The reason of most skips there: a test that starts a process of its own.
#define VCLOCK_EMULATION_NO_CHILD_PROCESSES                                                \
  "it starts child processes: under qemu-user 7.2 the forked child of a threaded process " \
  "aborts (a TCG assertion), and an arm64 program cannot be exec'd without binfmt_misc"

// GTEST_SKIP with "under qemu-user: " and `why` when emulated; nothing otherwise.
#define VCLOCK_SKIP_UNDER_EMULATION(why)                       \
  do {                                                         \
    if (vclock::arch::running_under_emulation()) {             \
      GTEST_SKIP() << "under qemu-user: " << why; /* NOLINT */ \
    }                                                          \
  } while (0)

#endif  // VCLOCK_TESTS_SUPPORT_EMULATION_H_
