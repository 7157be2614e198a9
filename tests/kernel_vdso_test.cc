// The kernel fallback finds the kernel's own vDSO entry points, whose names differ by
// architecture (x86-64 __vdso_clock_gettime, arm64 __kernel_clock_gettime: issue 24). A wrong
// name is silent otherwise: every fallback call becomes a system call.
#include <gtest/gtest.h>
#include <sys/auxv.h>
#include <time.h>

#include "lib/kernel_clock.h"

namespace {

TEST(KernelVdso, FallbackFindsTheVdsoWhereTheKernelMapsOne) {
  if (getauxval(AT_SYSINFO_EHDR) == 0) {
    GTEST_SKIP() << "no vDSO mapped into this process (AT_SYSINFO_EHDR is 0)";
  }
  ASSERT_TRUE(vclock::kernel::has_vdso());
  // And it answers: the vDSO's MONOTONIC never runs behind the system call's earlier reading.
  timespec before{};
  timespec vdso{};
  ASSERT_EQ(clock_gettime(CLOCK_MONOTONIC, &before), 0);
  ASSERT_EQ(vclock::kernel::vdso_gettime()(CLOCK_MONOTONIC, &vdso), 0);
  EXPECT_GE(static_cast<long long>(vdso.tv_sec) * 1'000'000'000 + vdso.tv_nsec,
            static_cast<long long>(before.tv_sec) * 1'000'000'000 + before.tv_nsec);
}

}  // namespace
