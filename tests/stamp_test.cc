// Stamps on this machine (issue 23): each stamp taken between two
// vclock_gettime_ns reads converts, exactly, to a time between them, on two
// threads at once and across the timekeeper's updates; sorted by counter,
// one thread's converted times never decrease; the batch gives what the
// one-by-one conversion gives. Skips where the page does not count.
#include <errno.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "lib/runtime.h"
#include "support/page_mode.h"
#include "support/sanitizers.h"
#include "vclock/detail/arch/cpu_features.h"
#include "vclock/vclock.h"
#include "vclock/vclock.hpp"

namespace {

struct sandwich {
  std::int64_t before;
  vclock_stamp_t stamp;
  std::int64_t after;
  int status;  // of the conversion, right after the burst
  std::int64_t ns;
};

constexpr clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_MONOTONIC_RAW,
                                CLOCK_BOOTTIME, CLOCK_TAI};

// The 10^6 stamps (100'000 per thread and clock) where they are
// cheap and the timing is the users': the optimised build (the release
// preset). A sanitizer or the emulator looks for races and bad accesses,
// which any burst shows; the debug build checks its assertions: a tenth of
// the stamps there, in as many bursts over as long, still straddling many
// updates (under TSan the full count took 36 s of CI's run).
#if defined(NDEBUG) && !defined(VCLOCK_TEST_TSAN) && !defined(VCLOCK_TEST_ASAN)
constexpr bool optimised_build = true;
#else
constexpr bool optimised_build = false;
#endif
int stamps_per_burst() {
  return optimised_build && !vclock::arch::running_under_emulation() ? 1000 : 100;
}

// stamps_per_burst() stamps per thread and clock in each burst, each
// converted right after it (well within the history), spread over ~0.3 s
// so that they straddle many updates.
std::vector<sandwich> take(clockid_t clock, bool relaxed, int bursts) {
  const int per_burst = stamps_per_burst();
  std::vector<sandwich> v;
  v.reserve(static_cast<std::size_t>(bursts) * static_cast<std::size_t>(per_burst));
  for (int b = 0; b < bursts; ++b) {
    const std::size_t first = v.size();
    for (int i = 0; i < per_burst; ++i) {
      sandwich s{};
      s.before = vclock_gettime_ns(clock);
      s.stamp = relaxed ? vclock_stamp_relaxed() : vclock_stamp();
      s.after = vclock_gettime_ns(clock);
      v.push_back(s);
    }
    for (std::size_t i = first; i < v.size(); ++i) {
      v[i].status = vclock_stamp_to_ns(clock, v[i].stamp, &v[i].ns);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(2500));
  }
  return v;
}

using vclock::test::counting;

TEST(Stamp, SandwichedExactlyOnTwoThreadsAndOrderedByCounter) {
  if (!counting()) GTEST_SKIP() << "the page is not in counter mode on this machine";
  std::size_t not_exact = 0;
  std::size_t all = 0;
  for (const clockid_t clock : clocks) {
    std::vector<sandwich> a;
    std::vector<sandwich> b;
    std::thread other([&] { b = take(clock, false, 100); });
    a = take(clock, false, 100);
    other.join();
    for (std::vector<sandwich>* v : {&a, &b}) {
      std::vector<std::pair<std::uint64_t, std::int64_t>> by_counter;
      std::size_t bad = 0;
      std::size_t estimates = 0;
      std::size_t refused = 0;
      std::string first_bad;
      std::size_t outside_bound = 0;
      for (const sandwich& s : *v) {
        const std::int64_t ns = s.ns;
        const int r = s.status;
        // A stamp outside the history (the page off for a moment, a
        // stalled timekeeper) is an estimate, never called exact, within
        // its bound.
        if (r == VCLOCK_STAMP_ESTIMATE) {
          ++estimates;
          std::int64_t bound = 0;
          std::int64_t again = 0;
          if (vclock_stamp_to_ns_bounded(clock, s.stamp, &again, &bound) == VCLOCK_STAMP_ESTIMATE &&
              (again + bound < s.before || again - bound > s.after)) {
            ++outside_bound;
          }
          continue;
        }
        // Refused: a new counter epoch began between the stamp and its
        // conversion (stale), or just before the stamp, and had no line
        // yet (no data). The timekeeper starts one when it judges that the
        // counter jumped; seen under TSan on a loaded 2-core VM.
        if (r == -ESTALE || r == -ENODATA) {
          ++refused;
          continue;
        }
        ASSERT_EQ(r, 0) << "clock " << clock;
        if ((ns < s.before || ns > s.after) && bad++ == 0) {
          first_bad = std::to_string(ns - s.before) + " after before, " +
                      std::to_string(s.after - ns) + " before after, counter " +
                      std::to_string(s.stamp.counter);
        }
        by_counter.emplace_back(s.stamp.counter, ns);
      }
      EXPECT_EQ(bad, 0u) << "clock " << clock << ": " << first_bad;
      EXPECT_EQ(outside_bound, 0u) << "clock " << clock;
      // Estimates: stamps inside an update (readers then follow the
      // kernel), or while the page was stale (the timekeeper thread
      // starved). Their share is the scheduler's: ~1% on a quiet 2-core
      // VM, 11% at load 4, 20% under TSan, 37% under qemu, and for one
      // clock of CI's TSan run 63% (its timekeeper starved by the two
      // stamping threads on two cores). Exact conversion broken for a clock
      // makes it 100%: 90% fails here; over the whole test, half does.
      EXPECT_LT((estimates + refused) * 10, v->size() * 9) << "clock " << clock;
      not_exact += estimates + refused;
      all += v->size();
      if (estimates + refused != 0) {
        std::printf("clock %d: %zu of %zu stamps estimated, %zu refused\n", static_cast<int>(clock),
                    estimates, v->size(), refused);
      }
      // One thread's counter: sorted by it, the times never go back
      // (REALTIME and TAI unless stepped meanwhile: not on a test machine).
      std::sort(by_counter.begin(), by_counter.end());
      for (std::size_t i = 1; i < by_counter.size(); ++i) {
        ASSERT_LE(by_counter[i - 1].second, by_counter[i].second) << "clock " << clock;
      }
    }
    // The batch converts as the single calls do.
    std::vector<vclock_stamp_t> stamps;
    for (std::size_t i = a.size() - std::min<std::size_t>(5000, a.size()); i < a.size(); ++i) {
      stamps.push_back(a[i].stamp);
    }
    std::vector<std::int64_t> out(stamps.size());
    const int r = vclock_stamps_to_ns(clock, stamps.data(), stamps.size(), out.data());
    ASSERT_GE(r, 0);
    for (std::size_t i = 0; i < stamps.size(); ++i) {
      std::int64_t one = 0;
      if (vclock_stamp_to_ns(clock, stamps[i], &one) == 0) {
        ASSERT_EQ(out[i], one);
      }
    }
  }
  EXPECT_LT(not_exact * 2, all);
  std::printf("all clocks: %zu of %zu stamps estimated or refused\n", not_exact, all);
}

TEST(Stamp, RefusesWhatItCannotConvert) {
  if (!counting()) GTEST_SKIP() << "the page is not in counter mode on this machine";
  const vclock_stamp_t s = vclock_stamp();
  std::int64_t ns = 0;
  EXPECT_EQ(vclock_stamp_to_ns(CLOCK_MONOTONIC_COARSE, s, &ns), -EINVAL);
  EXPECT_EQ(vclock_stamp_to_ns(CLOCK_PROCESS_CPUTIME_ID, s, &ns), -EINVAL);
  EXPECT_EQ(vclock_stamp_to_ns(CLOCK_MONOTONIC, s, nullptr), -EINVAL);
  vclock_stamp_t other = s;
  other.epoch ^= std::uint64_t{1} << 40;  // another boot
  EXPECT_EQ(vclock_stamp_to_ns(CLOCK_MONOTONIC, other, &ns), -ESTALE);
  other.epoch = 0;
  EXPECT_EQ(vclock_stamp_to_ns(CLOCK_MONOTONIC, other, &ns), -ENODATA);
  // A relaxed stamp converts as an ordered one does.
  EXPECT_EQ(vclock_stamp_to_ns(CLOCK_MONOTONIC, vclock_stamp_relaxed(), &ns), 0);
  // Ten seconds ago, before the history: an estimate, and a bound that says
  // so (1000 ppm of the time from the oldest line held, and 1 us:
  // docs/stamps.md).
  vclock_stamp_t old = vclock_stamp();
  old.counter -= 10 * vclock::detail::load_relaxed(vclock::detail::the_page.counter_hz);
  std::int64_t bound = 0;
  const std::int64_t now = vclock_gettime_ns(CLOCK_MONOTONIC);
  EXPECT_EQ(vclock_stamp_to_ns_bounded(CLOCK_MONOTONIC, old, &ns, &bound), VCLOCK_STAMP_ESTIMATE);
  EXPECT_NEAR(static_cast<double>(now - ns), 10e9, static_cast<double>(bound));
  EXPECT_GE(bound, 1'000'000);
}

// vclock_stamps_to_ns_each: each stamp's status is its own conversion's,
// refused ones INT64_MIN, and the return the batch's worst; whole-call
// failures refuse every stamp, bad arguments write nothing.
TEST(Stamp, EachStampsStatusInABatch) {
  if (!counting()) GTEST_SKIP() << "the page is not in counter mode on this machine";
  const std::uint64_t hz = vclock::detail::load_relaxed(vclock::detail::the_page.counter_hz);
  for (const clockid_t clock : clocks) {
    // The batch's copy of the history and each single call's are taken at
    // different times: a stamp on the newest line may be an estimate in
    // one (a copy taken while the writer stayed mid-update) and exact in
    // the other. Rare; so a batch that disagrees is taken again. So is one
    // with no exact stamp at all: under qemu on a loaded machine every copy
    // of a batch has been taken mid-update (each stamp then an estimate).
    bool agreed = false;
    int exact = 0;
    for (int attempt = 0; attempt < 3 && !(agreed && exact > 0); ++attempt) {
      const vclock_stamp_t now = vclock_stamp();
      vclock_stamp_t stale = now;
      stale.epoch ^= std::uint64_t{1} << 40;  // another boot
      const vclock_stamp_t none{now.counter, 0};
      vclock_stamp_t old = now;  // ten seconds ago: before the history, an estimate
      old.counter -= 10 * hz;
      // Fresh stamps around the others, so that each follows the batch's
      // fast path (a run of exact stamps) as well as its slow one.
      std::vector<vclock_stamp_t> stamps;
      stamps.reserve(38);
      for (int i = 0; i < 20; ++i) stamps.push_back(vclock_stamp());
      for (const vclock_stamp_t& odd : {stale, none, old}) {
        stamps.push_back(odd);
        for (int i = 0; i < 5; ++i) stamps.push_back(vclock_stamp());
      }
      const std::size_t n = stamps.size();
      std::vector<std::int64_t> out(n, 7);
      std::vector<int> status(n, 99);  // a status never written stays 99
      const int r = vclock_stamps_to_ns_each(clock, stamps.data(), n, out.data(), status.data());
      ASSERT_EQ(r, -ESTALE) << "clock " << clock;  // the worst: the first refusal
      ASSERT_EQ(status[20], -ESTALE);
      ASSERT_EQ(status[26], -ENODATA);
      ASSERT_EQ(status[32], VCLOCK_STAMP_ESTIMATE);
      agreed = true;
      exact = 0;
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(status[i] == 0 || status[i] == VCLOCK_STAMP_ESTIMATE || status[i] == -ESTALE ||
                    status[i] == -ENODATA)
            << "clock " << clock << ", stamp " << i << ": " << status[i];
        std::int64_t one = 0;
        const int single = vclock_stamp_to_ns(clock, stamps[i], &one);
        agreed = agreed && status[i] == single;
        if (status[i] < 0) {
          ASSERT_EQ(out[i], INT64_MIN) << "stamp " << i;
        } else if (status[i] == 0 && single == 0) {
          ++exact;
          ASSERT_EQ(out[i], one) << "stamp " << i;
        }
      }
      // The plain batch returns the same worst status.
      std::vector<std::int64_t> plain(n);
      ASSERT_EQ(vclock_stamps_to_ns(clock, stamps.data(), n, plain.data()), r);
    }
    EXPECT_TRUE(agreed) << "clock " << clock << ": each stamp's status is its single call's";
    EXPECT_GT(exact, 0) << "clock " << clock << ": no stamp converted exactly in 3 batches";
  }
  const vclock_stamp_t now = vclock_stamp();
  // Bad arguments: -EINVAL, nothing written.
  std::int64_t ns = 7;
  int st = 99;
  EXPECT_EQ(vclock_stamps_to_ns_each(CLOCK_MONOTONIC_COARSE, &now, 1, &ns, &st), -EINVAL);
  EXPECT_EQ(vclock_stamps_to_ns_each(CLOCK_PROCESS_CPUTIME_ID, &now, 1, &ns, &st), -EINVAL);
  EXPECT_EQ(vclock_stamps_to_ns_each(CLOCK_MONOTONIC, nullptr, 1, &ns, &st), -EINVAL);
  EXPECT_EQ(vclock_stamps_to_ns_each(CLOCK_MONOTONIC, &now, 1, nullptr, &st), -EINVAL);
  EXPECT_EQ(vclock_stamps_to_ns_each(CLOCK_MONOTONIC, &now, 1, &ns, nullptr), -EINVAL);
  EXPECT_EQ(ns, 7);
  EXPECT_EQ(st, 99);
  EXPECT_EQ(vclock_stamps_to_ns_each(CLOCK_MONOTONIC, nullptr, 0, nullptr, nullptr), 0);
}

TEST(Stamp, CxxTimePointBetweenTheReadsAroundIt) {
  if (!counting()) GTEST_SKIP() << "the page is not in counter mode on this machine";
  int exact = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto before = vclock::system_clock::now();
    const vclock::stamp s = vclock::stamp::now();
    const auto after = vclock::system_clock::now();
    int status = -1;
    const auto t = s.to_time_point<vclock::system_clock>(&status);
    ASSERT_GE(status, 0);
    if (status != 0) continue;  // inside an update, or a stale page: an estimate
    ++exact;
    EXPECT_LE(before, t);
    EXPECT_LE(t, after);
  }
  EXPECT_GT(exact, 900);
  int status = 0;
  const vclock::stamp none;
  EXPECT_EQ(none.to_time_point<vclock::steady_clock>(&status),
            vclock::steady_clock::time_point::min());
  EXPECT_EQ(status, -ENODATA);
}

}  // namespace
