// After every test of vclock_tests: how many REALTIME/TAI samples realtime_steps.h excused.
// Without steps only a sample whose own step check was preempted is excused (a few in a
// million); a VM's guest agent catching the clock up (+500 us every 100 ms, realtime_steps.h)
// excuses the 50 ms after each step, half of them. More than three quarters excused means the
// test judged too little to prove anything: it fails, with the counts.
#include <gtest/gtest.h>

#include <cstdio>

#include "support/realtime_steps.h"

namespace {

class excused_samples_check : public testing::Environment {
 public:
  void TearDown() override {
    const vclock::test::excused_counts c = vclock::test::realtime_excused_counts();
    if (c.asked == 0) return;
    std::printf("[          ] REALTIME/TAI samples: %llu judged, %llu excused (steps)\n",
                static_cast<unsigned long long>(c.asked - c.excused),
                static_cast<unsigned long long>(c.excused));
    EXPECT_LE(c.excused * 4, c.asked * 3)
        << "more than 3/4 of the REALTIME/TAI samples were excused as near a step";
  }
};

const testing::Environment* const registered =
    testing::AddGlobalTestEnvironment(new excused_samples_check);

}  // namespace
