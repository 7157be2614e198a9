// Error-bounded time: the growth arithmetic against a 128-bit reference
// (never below the exact growth, linear, no overflow below the void point,
// a day at 600 ppm on a 5 GHz counter included), the fast reader on a page
// built here, and the two sources' parsers (adjtimex, the fake file).
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <string>

#include "daemon/chrony_bound.h"
#include "daemon/fake_bound.h"
#include "lib/bound_math.h"
#include "lib/kernel_bound.h"
#include "vclock/detail/bounded_reader.h"
#include "vclock/vclock.h"
#include "vclock/vclock.hpp"

namespace vclock {
namespace {

__extension__ typedef unsigned __int128 u128;

// Exact growth in ns (floored) of `delta` ticks at `ppb` on a `hz` counter:
// delta * ppb / hz, for integer hz.
std::uint64_t exact_growth(std::uint64_t delta, std::uint64_t ppb, std::uint64_t hz) {
  return static_cast<std::uint64_t>(static_cast<u128>(delta) * ppb / hz);
}

std::uint64_t reader_growth(std::uint64_t delta, const bound_growth& g) {
  return (delta * g.mult) >> g.shift;
}

TEST(BoundMath, GrowthIsNeverBelowTheExactAndNeverOverflows) {
  for (std::uint64_t hz :
       {1'000'000ull, 24'000'000ull, 1'000'000'000ull, 2'596'151'229ull, 5'000'000'000ull}) {
    for (std::uint64_t ppb : {1ull, 1'000ull, 100'000ull, 600'000ull, 100'000'000ull}) {
      for (std::uint64_t seconds : {1ull, 60ull, 86'400ull}) {
        std::uint64_t void_delta = hz * seconds;
        const bound_growth g = choose_bound_growth(ppb, static_cast<double>(hz), void_delta);
        ASSERT_GT(g.mult, 0u);
        ASSERT_EQ(static_cast<u128>(g.mult) * void_delta >> 64, 0u)
            << "overflow: hz " << hz << " ppb " << ppb << " s " << seconds;
        for (std::uint64_t delta : {std::uint64_t{1}, std::uint64_t{12345}, hz / 250, hz,
                                    void_delta / 2, void_delta - 1}) {
          const std::uint64_t exact = exact_growth(delta, ppb, hz);
          const std::uint64_t got = reader_growth(delta, g);
          ASSERT_GE(got, exact) << "below the exact growth: hz " << hz << " ppb " << ppb
                                << " delta " << delta;
          // Rounded up by at most one unit of 2^-shift ns per tick, and 1 ns.
          const std::uint64_t slack = (delta >> g.shift) + 2 + exact / 1'000'000;
          ASSERT_LE(got, exact + slack) << "hz " << hz << " ppb " << ppb << " delta " << delta;
        }
      }
    }
  }
}

TEST(BoundMath, ADayAt600PpmOnA5GHzCounterFits) {
  // 500 ppm (the kernel's own drift) plus vclock's 100 ppm slew bound.
  std::uint64_t void_delta = 5'000'000'000ull * 86'400;
  const bound_growth g = choose_bound_growth(600'000, 5e9, void_delta);
  EXPECT_EQ(void_delta, 5'000'000'000ull * 86'400);  // not lowered
  EXPECT_GE(g.shift, 20u);
  EXPECT_EQ(static_cast<u128>(g.mult) * void_delta >> 64, 0u);
  const std::uint64_t day = reader_growth(void_delta - 1, g);
  EXPECT_GE(day, 51'840'000'000ull - 1);  // 600 ppm of a day: 51.84 s
  // Rounded up by one unit of the multiplier: 1 / mult of the growth (here
  // 1 in 32,212: 1.6 ms over the day).
  EXPECT_LE(day, 51'840'000'000ull + 51'840'000'000ull / g.mult + 1);
}

TEST(BoundMath, GrowthIsLinear) {
  std::uint64_t void_delta = 2'600'000'000ull * 3600;
  const bound_growth g = choose_bound_growth(100'500, 2.6e9, void_delta);
  for (std::uint64_t d = 1; d < void_delta / 4; d = d * 3 + 7) {
    const std::uint64_t one = reader_growth(d, g);
    const std::uint64_t two = reader_growth(2 * d, g);
    EXPECT_LE(two - 2 * one, 1u) << d;  // floors differ by at most 1
  }
}

TEST(BoundMath, AVoidPointTooFarIsBroughtIn) {
  std::uint64_t void_delta = UINT64_MAX;
  const bound_growth g = choose_bound_growth(100'000'000, 1e6, void_delta);
  EXPECT_EQ(g.shift, 0u);
  EXPECT_LT(void_delta, UINT64_MAX);
  EXPECT_EQ(static_cast<u128>(g.mult) * void_delta >> 64, 0u);
}

struct fixed_counter {
  std::uint64_t value;
  arch::counter_read operator()() const { return {value, 0}; }
};

TEST(BoundedReader, AddsTheGrowthAndLeavesPastTheVoidPoint) {
  alignas(4096) static page p{};
  p.hot.seq = 2;
  p.hot.mult = 1u << 31;  // 0.5 ns per tick
  p.hot.shift = 32;
  p.hot.cycle_last = 1000;
  p.hot.max_delta = 1'000'000;
  p.hot.realtime_ns = 1'700'000'000'000'000'000;
  p.bound.status = static_cast<std::uint32_t>(sync_status::synced);
  p.bound.bound_ns = 5000;
  std::uint64_t void_delta = 500'000;
  const bound_growth g = choose_bound_growth(1'000'000'000, 1e9, void_delta);  // 1 ns per tick
  p.bound.growth_mult = g.mult;
  p.bound.growth_shift = g.shift;
  p.bound.void_delta = 500'000;
  detail::bounded_read r{};
  ASSERT_TRUE(
      detail::try_read_bounded<detail::clock_kind::realtime>(p, fixed_counter{1000 + 2000}, r));
  EXPECT_EQ(r.ns, 1'700'000'000'000'001'000);
  EXPECT_GE(r.half_width, 7000);
  EXPECT_LE(r.half_width, 7001);
  EXPECT_EQ(r.status, sync_status::synced);
  // Past the void point (kept below max_delta by the writer): the careful
  // path's, which answers status unknown.
  EXPECT_FALSE(
      detail::try_read_bounded<detail::clock_kind::realtime>(p, fixed_counter{1000 + 600'000}, r));
  EXPECT_TRUE(
      detail::try_read_bounded<detail::clock_kind::realtime>(p, fixed_counter{1000 + 499'999}, r));
  EXPECT_FALSE(detail::try_read_bounded<detail::clock_kind::realtime>(
      p, fixed_counter{1000 + 1'000'000}, r));  // stale
  p.hot.seq = 3;
  EXPECT_FALSE(detail::try_read_bounded<detail::clock_kind::realtime>(p, fixed_counter{1001},
                                                                      r));  // mid-update
}

TEST(KernelBound, UnsyncedReportsTheKernelsMaximumError) {
  struct timex t {};
  t.status = STA_UNSYNC;
  t.maxerror = 16'000'000;
  bound_sample b = kernel_bound_of(TIME_ERROR, t);
  EXPECT_EQ(b.status, sync_status::unsynced);
  EXPECT_EQ(b.error_ns, 16'000'000'000);
  EXPECT_EQ(b.quantum_ns, 1000);
  EXPECT_EQ(b.drift_ppb, 500'000);
  t.status = STA_PLL;
  t.maxerror = 1500;
  b = kernel_bound_of(TIME_OK, t);
  EXPECT_EQ(b.status, sync_status::synced);
  EXPECT_EQ(b.error_ns, 1'500'000);
  EXPECT_EQ(kernel_bound_of(-1, t).status, sync_status::unknown);
}

TEST(FakeBound, ParsesTheContractsObject) {
  std::string error;
  bound_sample b = daemon::parse_fake_bound(
      R"( {"status": "free_running", "drift_ppb": 50, "error_ns": 1234} )", error);
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_EQ(b.status, sync_status::free_running);
  EXPECT_EQ(b.error_ns, 1234);
  EXPECT_EQ(b.drift_ppb, 50);
  EXPECT_EQ(b.source, bound_source_kind::fake);
}

TEST(FakeBound, RefusesEverythingElseWithAReason) {
  for (const char* bad :
       {"", "not json", "{", "[]", R"({"status": "synced", "error_ns": 1})",
        R"({"status": "synced", "error_ns": 1, "drift_ppb": 2, "extra": 3})",
        R"({"status": "maybe", "error_ns": 1, "drift_ppb": 2})",
        R"({"status": "synced", "error_ns": -1, "drift_ppb": 2})",
        R"({"status": "synced", "error_ns": 1, "drift_ppb": -2})",
        R"({"status": "synced", "error_ns": 1.5, "drift_ppb": 2})",
        R"({"status": "synced", "error_ns": 1e9, "drift_ppb": 2})",
        R"({"status": "synced", "error_ns": 99999999999999999999, "drift_ppb": 2})",
        R"({"status": "synced", "error_ns": 86400000000001, "drift_ppb": 2})",
        R"({"status": "synced", "error_ns": 1, "drift_ppb": 100000001})",
        R"({"status": "synced", "error_ns": 1, "drift_ppb": 2} trailing)",
        R"({"status": "syn\"ced", "error_ns": 1, "drift_ppb": 2})"}) {
    std::string error;
    const bound_sample b = daemon::parse_fake_bound(bad, error);
    EXPECT_EQ(b.status, sync_status::unknown) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

// chronyd's float: 7-bit exponent, 25-bit coefficient (candm.h).
std::uint32_t chrony_float_of(std::int32_t coef, int exponent) {
  return static_cast<std::uint32_t>((exponent + 25) & 0x7f) << 25 |
         (static_cast<std::uint32_t>(coef) & 0x1ffffff);
}

void put32(unsigned char* p, std::uint32_t v) {
  p[0] = static_cast<unsigned char>(v >> 24);
  p[1] = static_cast<unsigned char>(v >> 16);
  p[2] = static_cast<unsigned char>(v >> 8);
  p[3] = static_cast<unsigned char>(v);
}

TEST(ChronyBound, FloatsAndTheTrackingReply) {
  EXPECT_EQ(daemon::chrony_float(0), 0.0);
  EXPECT_EQ(daemon::chrony_float(chrony_float_of(3, -1)), 1.5);
  EXPECT_EQ(daemon::chrony_float(chrony_float_of(-5, -3)), -0.625);
  EXPECT_NEAR(daemon::chrony_float(chrony_float_of(1 << 20, -40)), 9.5367e-7, 1e-10);

  unsigned char request[daemon::chrony_request_bytes];
  ASSERT_GE(daemon::make_chrony_tracking_request(77, request), 104u);  // >= the reply
  EXPECT_EQ(request[0], 6);
  EXPECT_EQ(request[1], 1);
  EXPECT_EQ(request[5], 33);  // REQ_TRACKING
  EXPECT_EQ(request[11], 77);

  unsigned char reply[104] = {};
  reply[0] = 6;
  reply[1] = 2;
  reply[5] = 33;
  reply[7] = 5;  // RPY_TRACKING
  put32(reply + 16, 77);
  unsigned char* t = reply + 28;
  t[27] = 0;                                // leap: normal
  put32(t + 40, chrony_float_of(-3, -20));  // offset -2.86 us
  put32(t + 56, chrony_float_of(1, -1));    // residual 0.5 ppm
  put32(t + 60, chrony_float_of(2, 0));     // skew 2 ppm
  put32(t + 64, chrony_float_of(1, -10));   // root delay 977 us
  put32(t + 68, chrony_float_of(1, -12));   // root dispersion 244 us
  daemon::chrony_tracking track;
  std::string error;
  ASSERT_TRUE(daemon::parse_chrony_tracking_reply(reply, sizeof(reply), 77, track, error)) << error;
  const bound_sample b = daemon::chrony_bound_of(track);
  EXPECT_EQ(b.status, sync_status::synced);
  // |offset| + delay / 2 + dispersion, rounded up to the ns.
  const double want = 3.0 / (1 << 20) + 1.0 / 1024 / 2 + 1.0 / 4096;
  EXPECT_GE(b.error_ns, static_cast<std::int64_t>(want * 1e9));
  EXPECT_LE(b.error_ns, static_cast<std::int64_t>(want * 1e9) + 1);
  EXPECT_EQ(b.drift_ppb, 3500);  // skew + |residual| + 1 ppm
  t[27] = 3;                     // not synchronised
  ASSERT_TRUE(daemon::parse_chrony_tracking_reply(reply, sizeof(reply), 77, track, error));
  EXPECT_EQ(daemon::chrony_bound_of(track).status, sync_status::unsynced);

  error = "x";
  EXPECT_FALSE(daemon::parse_chrony_tracking_reply(reply, sizeof(reply), 78, track, error));
  EXPECT_TRUE(error.empty());  // a late answer to another request: ignored quietly
  EXPECT_FALSE(daemon::parse_chrony_tracking_reply(reply, 60, 77, track, error));
  EXPECT_NE(error.find("short"), std::string::npos);
  reply[9] = 3;  // a status other than success
  EXPECT_FALSE(daemon::parse_chrony_tracking_reply(reply, sizeof(reply), 77, track, error));
  EXPECT_NE(error.find("refused"), std::string::npos);
}

TEST(NowBounded, BadInputGetsErrnoAndAnyIntervalHoldsTheKernelsTime) {
  vclock_bounds b{};
  errno = 0;
  EXPECT_EQ(vclock_now_bounded(CLOCK_MONOTONIC, &b), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(vclock_now_bounded(12345, &b), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(vclock_now_bounded(CLOCK_REALTIME, nullptr), -1);
  EXPECT_EQ(errno, EFAULT);
  for (clockid_t clock : {CLOCK_REALTIME, CLOCK_TAI}) {
    timespec before{}, after{};
    clock_gettime(clock, &before);
    ASSERT_EQ(vclock_now_bounded(clock, &b), 0);
    clock_gettime(clock, &after);
    EXPECT_GE(b.status, VCLOCK_SYNC_UNKNOWN);
    EXPECT_LE(b.status, VCLOCK_SYNC_DISRUPTED);
    if (b.status == VCLOCK_SYNC_UNKNOWN) {
      EXPECT_EQ(b.earliest_ns, INT64_MIN);
      EXPECT_EQ(b.latest_ns, INT64_MAX);
    }
    // Whatever the source says (here: the kernel's, often unsynced with a
    // 16 s bound), the kernel's time lies inside (allowing for a sandwich
    // this test cannot make narrow: 1 ms).
    EXPECT_LE(b.earliest_ns, after.tv_sec * 1'000'000'000ll + after.tv_nsec);
    EXPECT_GE(b.latest_ns, before.tv_sec * 1'000'000'000ll + before.tv_nsec);
  }
  const vclock::bounded_time t = vclock::system_clock::now_bounded();
  EXPECT_LE(t.earliest, t.latest);
}

}  // namespace
}  // namespace vclock
