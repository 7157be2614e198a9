// vclock.hpp's inline reader (detail/inline_reader.h) against the library's
// called entry points: the same page, the same fast path, so a reading of
// one taken between two readings of the other lies between them, across
// the timekeeper's updates, on two threads. In this test binary there is
// no daemon's page unless the machine runs one: the in-process timekeeper.
#include "vclock/detail/inline_reader.h"

#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "vclock/page.h"
#include "vclock/vclock.h"
#include "vclock/vclock.hpp"

namespace {

using namespace std::chrono_literals;

// `inline_now` sandwiched by `called` (and the converse), for `span`: the
// page is updated every tick meanwhile. Returns the number of sandwiches.
template <class Inline, class Called>
std::int64_t sandwich(Inline inline_now, Called called, std::chrono::nanoseconds span) {
  std::int64_t n = 0;
  const auto end = std::chrono::steady_clock::now() + span;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 1000; ++i, ++n) {
      const std::int64_t before = called();
      const std::int64_t mid = inline_now();
      const std::int64_t after = called();
      const std::int64_t after2 = inline_now();
      if (!(before <= mid && mid <= after && after <= after2)) {
        ADD_FAILURE() << "called " << before << " <= inline " << mid << " <= called " << after
                      << " <= inline " << after2 << " does not hold";
        return n;
      }
    }
  }
  return n;
}

TEST(InlineReader, TheLibraryHandsOutItsPage) {
  (void)vclock_gettime_ns(CLOCK_MONOTONIC);  // start the timekeeper
  const std::uintptr_t word = vclock::detail::inline_word.load();
  ASSERT_NE(word, 0u);
  EXPECT_EQ(word, vclock_detail_inline_word(vclock::page_abi_major));
}

// The page ABI major guards the inline reader: a header of another major
// gets 0, and every read calls.
TEST(InlineReader, AnotherAbiMajorCalls) {
  EXPECT_EQ(vclock_detail_inline_word(vclock::page_abi_major + 1u), 0u);
  EXPECT_EQ(vclock_detail_inline_word(vclock::page_abi_major - 1u), 0u);
}

template <class Clock, clockid_t Id, bool Ordered>
void agree_on_two_threads(std::chrono::nanoseconds span) {
  const auto inline_now = [] { return Clock::now().time_since_epoch().count(); };
  const auto called = [] {
    return Ordered ? vclock_gettime_ns(Id) : vclock_gettime_ns_relaxed(Id);
  };
  std::vector<std::thread> threads;
  std::int64_t counts[2] = {0, 0};
  for (auto& c : counts) {
    threads.emplace_back(
        [&c, inline_now, called, span] { c = sandwich(inline_now, called, span); });
  }
  for (auto& t : threads) t.join();
  EXPECT_GT(counts[0] + counts[1], 1000);
}

// 0.3 s per ordered fine clock: some 75 updates at the default 4 ms tick.
TEST(InlineReader, SteadyAgreesWithTheCalledReaderAcrossUpdates) {
  agree_on_two_threads<vclock::steady_clock, CLOCK_MONOTONIC, true>(300ms);
}

TEST(InlineReader, OtherClocksAgreeWithTheCalledReader) {
  agree_on_two_threads<vclock::boot_clock, CLOCK_BOOTTIME, true>(50ms);
  agree_on_two_threads<vclock::raw_clock, CLOCK_MONOTONIC_RAW, true>(50ms);
  agree_on_two_threads<vclock::coarse_steady_clock, CLOCK_MONOTONIC_COARSE, true>(50ms);
  agree_on_two_threads<vclock::relaxed::steady_clock, CLOCK_MONOTONIC, false>(100ms);
  agree_on_two_threads<vclock::relaxed::raw_clock, CLOCK_MONOTONIC_RAW, false>(50ms);
}

// REALTIME and TAI: the same sandwich (nothing steps the clock during a
// test run; the lead never steps the machine's clock).
TEST(InlineReader, SystemClockAgreesWithTheCalledReader) {
  agree_on_two_threads<vclock::system_clock, CLOCK_REALTIME, true>(50ms);
  agree_on_two_threads<vclock::tai_clock, CLOCK_TAI, true>(50ms);
  agree_on_two_threads<vclock::coarse_system_clock, CLOCK_REALTIME_COARSE, true>(50ms);
}

}  // namespace
