// Virtual time: TIME OPTIONS parsing (exact, with clear errors), the
// namespace line (ns_map) against a 128-bit reference, and the writer's
// re-anchoring (next_params) over long random sequences of changes:
// continuity, no split between old and new parameters, monotonic clocks
// never back.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "lib/virtual_reader.h"
#include "timens/store.h"
#include "timens/time_options.h"
#include "vclock/ns_page.h"

namespace vclock::timens {
namespace {

constexpr std::int64_t s = 1'000'000'000;

std::int64_t duration(const char* text) {
  std::int64_t ns = 0;
  std::string error;
  EXPECT_TRUE(parse_duration(text, ns, error)) << text << ": " << error;
  return ns;
}

std::string duration_error(const char* text) {
  std::int64_t ns = 0;
  std::string error;
  EXPECT_FALSE(parse_duration(text, ns, error)) << text << " gave " << ns;
  return error;
}

TEST(TimeOptions, DurationsAreExactWithEveryUnit) {
  EXPECT_EQ(duration("+1d"), 86400 * s);
  EXPECT_EQ(duration("-90s"), -90 * s);
  EXPECT_EQ(duration("+250ms"), 250'000'000);
  EXPECT_EQ(duration("1.5h"), 5400 * s);
  EXPECT_EQ(duration("2"), 2 * s);  // a bare number is seconds
  EXPECT_EQ(duration("0.000000001"), 1);
  EXPECT_EQ(duration("7us"), 7000);
  EXPECT_EQ(duration("3ns"), 3);
  EXPECT_EQ(duration("-2m"), -120 * s);
  EXPECT_EQ(duration("0.1"), 100'000'000);  // no double: exactly
  EXPECT_EQ(duration("9223372036854775807ns"), INT64_MAX);
  EXPECT_EQ(duration("-9223372036854775808ns"), INT64_MIN);
}

TEST(TimeOptions, BadDurationsSayWhy) {
  EXPECT_NE(duration_error("1.5ns").find("finer than a nanosecond"), std::string::npos);
  EXPECT_NE(duration_error("1x").find("unknown unit"), std::string::npos);
  EXPECT_NE(duration_error("").find("expected a number"), std::string::npos);
  EXPECT_NE(duration_error("abc").find("expected a number"), std::string::npos);
  EXPECT_NE(duration_error("+").find("expected a number"), std::string::npos);
  EXPECT_NE(duration_error("9223372036854775808ns").find("out of range"), std::string::npos);
  EXPECT_NE(duration_error("106752d").find("out of range"), std::string::npos);
  EXPECT_NE(duration_error("99999999999999999999999d").find("too many digits"), std::string::npos);
  duration_error("1e3");
  duration_error("1d2h");
  duration_error("--1s");
  duration_error("1.2.3s");
}

TEST(TimeOptions, InstantsInUtcOrSecondsSinceTheEpoch) {
  std::int64_t ns = 0;
  std::string error;
  ASSERT_TRUE(parse_instant("2030-01-01T00:00:00Z", ns, error)) << error;
  EXPECT_EQ(ns, 1'893'456'000 * s);
  ASSERT_TRUE(parse_instant("1970-01-01T00:00:00.123456789Z", ns, error)) << error;
  EXPECT_EQ(ns, 123'456'789);
  ASSERT_TRUE(parse_instant("2024-02-29T23:59:59Z", ns, error)) << error;
  EXPECT_EQ(ns, 1'709'251'199 * s);
  ASSERT_TRUE(parse_instant("1960-06-15T12:00:00Z", ns, error)) << error;
  EXPECT_EQ(ns, -301'233'600 * s);  // date -u -d 1960-06-15T12:00:00Z +%s
  ASSERT_TRUE(parse_instant("@0", ns, error)) << error;
  EXPECT_EQ(ns, 0);
  ASSERT_TRUE(parse_instant("@-1.5", ns, error)) << error;
  EXPECT_EQ(ns, -1'500'000'000);
  for (const char* bad :
       {"2030-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "2030-01-01 00:00:00Z",
        "2030-01-01T00:00:00", "2030-01-01T24:00:00Z", "2030-13-01T00:00:00Z",
        "2300-01-01T00:00:00Z", "1600-01-01T00:00:00Z", "@abc", "@", "", "2030-01-01T00:00:00.Z",
        "2030-01-01T00:00:00.1234567891Z", "2030-01-01T00:00:00+01:00"}) {
    error.clear();
    EXPECT_FALSE(parse_instant(bad, ns, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

TEST(TimeOptions, RatesArePositiveAndBounded) {
  std::uint64_t q = 0;
  std::string error;
  ASSERT_TRUE(parse_rate("2", q, error));
  EXPECT_EQ(q, rate_one_q32 * 2);
  ASSERT_TRUE(parse_rate("0.5", q, error));
  EXPECT_EQ(q, rate_one_q32 / 2);
  ASSERT_TRUE(parse_rate("1000", q, error));
  ASSERT_TRUE(parse_rate("0.000001", q, error));
  EXPECT_EQ(q, 4295u);  // 2^32 / 10^6, rounded
  for (const char* bad : {"0", "-1", "nan", "inf", "1000.1", "0.0000009", "", "1/2", "2x"}) {
    error.clear();
    EXPECT_FALSE(parse_rate(bad, q, error)) << bad;
    EXPECT_FALSE(error.empty());
  }
}

TEST(TimeOptions, TakenPerCommand) {
  const char* argv[] = {"--realtime", "-1d", "--rate=2", "--frozen", "--thaw", "--ns", "x"};
  auto* args = const_cast<char**>(argv);
  std::span<char* const> all(args, 7);
  time_options o;
  std::string error;
  std::size_t i = 0;
  EXPECT_EQ(take_time_option("run", all, i, o, error), 1);
  EXPECT_EQ(i, 1u);
  EXPECT_EQ(*o.realtime_offset_ns, -86400 * s);
  i = 2;
  EXPECT_EQ(take_time_option("run", all, i, o, error), 1);
  EXPECT_EQ(*o.rate_q32, 2 * rate_one_q32);
  i = 3;
  EXPECT_EQ(take_time_option("run", all, i, o, error), 1);
  EXPECT_TRUE(o.frozen);
  i = 4;
  EXPECT_EQ(take_time_option("run", all, i, o, error), 0);  // --thaw is ns set's
  EXPECT_EQ(take_time_option("ns set", all, i, o, error), 1);
  i = 5;
  EXPECT_EQ(take_time_option("ns set", all, i, o, error), 0);  // --ns is run's
  EXPECT_EQ(take_time_option("run", all, i, o, error), 1);
  EXPECT_EQ(o.ns, "x");
  const char* bad[] = {"--rate", "0"};
  std::span<char* const> b(const_cast<char**>(bad), 2);
  i = 0;
  EXPECT_EQ(take_time_option("run", b, i, o, error), -1);
  EXPECT_NE(error.find("--rate"), std::string::npos);
  const char* missing[] = {"--monotonic"};
  std::span<char* const> m(const_cast<char**>(missing), 1);
  i = 0;
  EXPECT_EQ(take_time_option("run", m, i, o, error), -1);
  EXPECT_NE(error.find("needs a value"), std::string::npos);
}

__extension__ typedef __int128 i128;

TEST(NsMap, MatchesA128BitReferenceAndNeverDecreases) {
  std::mt19937_64 rng(12345);
  for (int trial = 0; trial < 20000; ++trial) {
    const ns_anchor a{static_cast<std::int64_t>(rng() % (std::uint64_t{1} << 62)),
                      static_cast<std::int64_t>(rng() % (std::uint64_t{1} << 61))};
    const std::uint64_t rate = 4295 + rng() % (1000 * rate_one_q32);
    const std::int64_t span = static_cast<std::int64_t>(rng() % (std::uint64_t{1} << 44));
    const std::int64_t h = a.host_ns + span;
    const i128 exact = (static_cast<i128>(span) * rate) >> 32;  // floor
    EXPECT_EQ(ns_map(a, rate, h), a.virtual_ns + static_cast<std::int64_t>(exact));
    EXPECT_LE(ns_map(a, rate, h), ns_map(a, rate, h + 1));
    EXPECT_EQ(ns_map(a, rate_one_q32, h), a.virtual_ns + span);  // rate 1: exact
    EXPECT_EQ(ns_map(a, 0, h), a.virtual_ns);                    // frozen
  }
}

TEST(NsMap, SaturatesInsteadOfWrapping) {
  const ns_anchor a{0, INT64_MAX - 10};
  EXPECT_EQ(ns_map(a, 1000 * rate_one_q32, INT64_MAX / 2), INT64_MAX);
  const ns_anchor b{0, INT64_MIN + 10};
  EXPECT_EQ(ns_map(b, 1000 * rate_one_q32, INT64_MIN / 2), INT64_MIN);
}

// The shim's fast form (virtual_reader.h, finish_virtual) computes the
// namespace's line around the host line's base, a timespec without a
// division after the counter read: it must give exactly ns_map's value, in
// both forms, for every rate, span and elapsed time a host line can have,
// and decline only what it says it declines (a base before the anchor at
// a rate other than 1 among them, which virtual_ns() answers).
TEST(VirtualRead, TheFastFormIsExactlyNsMap) {
  using detail::as_ns;
  using detail::as_timespec;
  using detail::finish_virtual;
  using detail::host_parts;
  std::mt19937_64 rng(777);
  const std::uint64_t rates[] = {rate_one_q32,        0,    2 * rate_one_q32, rate_one_q32 / 10,
                                 1000 * rate_one_q32, 4295, rate_one_q32 + 1};
  int answered = 0;
  int carried_seconds = 0;
  constexpr int trials = 200000;
  for (int trial = 0; trial < trials; ++trial) {
    const std::uint64_t rate =
        trial % 3 == 0 ? rates[rng() % std::size(rates)] : rng() % (1000 * rate_one_q32 + 1);
    const std::int64_t host_anchor = static_cast<std::int64_t>(rng() % (std::uint64_t{1} << 61));
    const ns_anchor a{host_anchor,
                      static_cast<std::int64_t>(rng() % (std::uint64_t{1} << 58)) + 40 * s};
    // The host line's base: mostly after the anchor (up to days), sometimes
    // before it (a stale host line and a recent change).
    const std::int64_t span = static_cast<std::int64_t>(rng() % (std::uint64_t{1} << 47)) -
                              (trial % 5 == 0 ? std::int64_t{1} << 35 : 0);
    const host_parts h{host_anchor + span,
                       static_cast<std::int64_t>(rng() % (trial % 7 == 0 ? 2 : 600'000'000))};
    const std::int64_t want = ns_map(a, rate, h.base + h.elapsed);
    std::int64_t got = 0;
    timespec ts{};
    const bool as_ns_answered = finish_virtual<as_ns>(a, rate, h, got);
    ASSERT_EQ(finish_virtual<as_timespec>(a, rate, h, ts), as_ns_answered) << "trial " << trial;
    if (!as_ns_answered) {
      // Declined: a negative or saturating value, or (at a rate other
      // than 1) a host base before the anchor.
      const std::int64_t at_base = ns_map(a, rate, h.base);
      ASSERT_TRUE(at_base < 0 || want == INT64_MAX || (rate != rate_one_q32 && span < 0))
          << "declined a value the fast form covers, trial " << trial;
      continue;
    }
    ++answered;
    ASSERT_EQ(got, want) << "trial " << trial << " rate " << rate;
    ASSERT_EQ(static_cast<std::int64_t>(ts.tv_sec), want / s) << "trial " << trial;
    ASSERT_EQ(ts.tv_nsec, want % s) << "trial " << trial;
    if (ns_map(a, rate, h.base) / s != want / s) ++carried_seconds;
  }
  EXPECT_GT(answered, trials * 7 / 10);  // negative results and spans before the anchor
  EXPECT_GT(carried_seconds, 1000);      // the carry into the seconds ran
}

TEST(VirtualRead, NegativeAndSaturatingResultsGoToTheCarefulPath) {
  using detail::finish_virtual;
  std::int64_t v = 0;
  // Before 1970 (a REALTIME offset of -60 years): the careful path's.
  EXPECT_FALSE(finish_virtual<detail::as_ns>({100 * s, -5 * s}, rate_one_q32, {100 * s, 10}, v));
  // Past 2262 at 1000x: saturates there, not here.
  EXPECT_FALSE(finish_virtual<detail::as_ns>({0, INT64_MAX - s}, 1000 * rate_one_q32,
                                             {INT64_MAX / 2000, 10}, v));
  // At the edges of a piece: exact.
  EXPECT_TRUE(finish_virtual<detail::as_ns>({5 * s, 7 * s}, 3 * rate_one_q32, {5 * s, 0}, v));
  EXPECT_EQ(v, 7 * s);
}

host_times at(std::int64_t mono, std::int64_t real) {
  return host_times{{mono, mono - 7 * s, mono + 3 * s, real}};
}

TEST(NextParams, ANewNamespaceStartsAtTheOffsets) {
  time_options o;
  o.realtime_offset_ns = 86400 * s;
  o.monotonic_offset_ns = 3600 * s;
  ns_params p{};
  std::string error;
  const host_times now = at(100 * s, 1'800'000'000 * s);
  ASSERT_TRUE(next_params(nullptr, o, now, p, error)) << error;
  EXPECT_EQ(virtual_time(p, ns_family::realtime, now.ns[3]), now.ns[3] + 86400 * s);
  EXPECT_EQ(virtual_time(p, ns_family::monotonic, now.ns[0] + 5), now.ns[0] + 3600 * s + 5);
  EXPECT_EQ(virtual_time(p, ns_family::raw, now.ns[1]), now.ns[1] + 3600 * s);
  EXPECT_EQ(virtual_time(p, ns_family::boottime, now.ns[2]), now.ns[2]);
  EXPECT_EQ(p.generation, 1u);
  // One line from the start: a reader before the "switch" sees the same.
  EXPECT_EQ(virtual_time(p, ns_family::realtime, now.ns[3] - s), now.ns[3] + 86399 * s);
}

TEST(NextParams, RefusesWhatWouldBreakTheClocks) {
  ns_params p{}, q{};
  std::string error;
  const host_times now = at(100 * s, 1'800'000'000 * s);
  time_options o;
  ASSERT_TRUE(next_params(nullptr, o, now, p, error));
  time_options back;
  back.monotonic_offset_ns = -1 * s;
  EXPECT_FALSE(next_params(&p, back, at(101 * s, 1'800'000'001 * s), q, error));
  EXPECT_NE(error.find("step back"), std::string::npos) << error;
  back.allow_backward = true;
  EXPECT_TRUE(next_params(&p, back, at(101 * s, 1'800'000'001 * s), q, error)) << error;
  time_options before_boot;
  before_boot.monotonic_offset_ns = -200 * s;
  EXPECT_FALSE(next_params(nullptr, before_boot, now, q, error));
  EXPECT_NE(error.find("before boot"), std::string::npos) << error;
  time_options both;
  both.realtime_offset_ns = s;
  both.realtime_at_ns = 0;
  EXPECT_FALSE(next_params(nullptr, both, now, q, error));
  time_options freeze_thaw;
  freeze_thaw.frozen = freeze_thaw.thaw = true;
  EXPECT_FALSE(next_params(&p, freeze_thaw, now, q, error));
  time_options overflow;
  overflow.realtime_offset_ns = INT64_MAX;
  EXPECT_FALSE(next_params(nullptr, overflow, now, q, error));
  EXPECT_NE(error.find("out of int64"), std::string::npos) << error;
}

// The offset from the host that family `f` has at host time `h`.
std::int64_t offset_now(const ns_params& p, ns_family f, std::int64_t h) {
  return virtual_time(p, f, h) - h;
}

// Random changes over a long simulated time. At every change: the old and
// the new parameters agree for every host time before the switch point
// (readers holding either answer alike); at the switch point itself each
// clock is exactly where the change puts it (the host's time there plus the
// offset set, or the old line's value, continuous); from there on it runs
// at the rate a model of the options says (the last rate set, 0 while
// frozen), to the nanosecond; and sampled across the whole run the
// monotonic clocks never decrease.
TEST(NextParams, LongRandomSequencesAreContinuousAndMonotonic) {
  std::mt19937_64 rng(2026);
  ns_params p{};
  std::string error;
  std::int64_t mono = 50 * s;
  std::int64_t real = 1'800'000'000 * s;
  ASSERT_TRUE(next_params(nullptr, time_options{}, at(mono, real), p, error));
  // The model: what the options set so far, independent of ns_params.
  std::uint64_t model_rate = rate_one_q32;
  bool model_frozen = false;
  std::int64_t last[ns_family_count] = {INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN};
  int changes = 0;
  int offsets_checked[ns_family_count] = {};
  int refusals = 0;
  for (int step = 0; step < 20000; ++step) {
    // The host moves on (REALTIME sometimes steps, as settimeofday does).
    const std::int64_t dt = static_cast<std::int64_t>(rng() % (20 * s / 1000)) + 1;
    mono += dt;
    real += dt + ((rng() % 50 == 0) ? static_cast<std::int64_t>(rng() % (2 * s)) - s : 0);
    const host_times now = at(mono, real);
    for (int f = 0; f < 3; ++f) {  // the monotonic families
      const std::int64_t v = virtual_time(p, static_cast<ns_family>(f), now.ns[f]);
      ASSERT_GE(v, last[f]) << "family " << f << " went back at step " << step;
      last[f] = v;
    }
    if (rng() % 10 != 0) continue;
    // As the writer does: the previous change's switch point is behind.
    bool previous_in_force = true;
    for (int f = 0; f < ns_family_count; ++f) {
      if (now.ns[f] <= p.lines[f].after.host_ns) previous_in_force = false;
    }
    if (!previous_in_force) continue;
    time_options o;
    switch (rng() % 7) {
      case 0:
        o.rate_q32 = 4295 + rng() % (10 * rate_one_q32);
        break;
      case 1:
        o.frozen = true;
        break;
      case 2:
        o.thaw = true;
        break;
      // A monotonic clock's offset near the one it has (rates above 1 run
      // it ahead of the host): mostly forward, sometimes back (refused).
      case 3:
        o.monotonic_offset_ns = offset_now(p, ns_family::monotonic, now.ns[0]) +
                                static_cast<std::int64_t>(rng() % (100 * s)) - 10 * s;
        break;
      case 4:
        o.boottime_offset_ns = offset_now(p, ns_family::boottime, now.ns[2]) +
                               static_cast<std::int64_t>(rng() % (100 * s)) - 10 * s;
        break;
      case 5:
        o.realtime_offset_ns = static_cast<std::int64_t>(rng() % (20 * s)) - 10 * s;
        break;
      default:
        o.realtime_at_ns = static_cast<std::int64_t>(rng() % (4'000'000'000 * s));
        break;
    }
    host_times sw = now;
    for (std::int64_t& h : sw.ns) h += switch_margin_ns;
    // Where each family must be at the switch point: the host's time there
    // plus the offset set, or (nothing set) the old line's value there.
    std::int64_t want_at_switch[ns_family_count];
    bool offset_set[ns_family_count];
    for (int f = 0; f < ns_family_count; ++f) {
      const auto fam = static_cast<ns_family>(f);
      const std::optional<std::int64_t>& offset = f <= 1   ? o.monotonic_offset_ns
                                                  : f == 2 ? o.boottime_offset_ns
                                                           : o.realtime_offset_ns;
      offset_set[f] = offset.has_value() || (f == 3 && o.realtime_at_ns.has_value());
      want_at_switch[f] = f == 3 && o.realtime_at_ns ? *o.realtime_at_ns
                          : offset                   ? sw.ns[f] + *offset
                                                     : virtual_time(p, fam, sw.ns[f]);
    }
    ns_params q{};
    if (!next_params(&p, o, sw, q, error)) {
      // Only a monotonic offset that would move a clock back is refused.
      bool moves_back = false;
      for (int f = 0; f < 3; ++f) {
        moves_back |= offset_set[f] &&
                      want_at_switch[f] < virtual_time(p, static_cast<ns_family>(f), sw.ns[f]);
      }
      ASSERT_TRUE(moves_back) << "refused a change that moves no monotonic clock back: " << error;
      ++refusals;
      continue;
    }
    ++changes;
    if (o.rate_q32) model_rate = *o.rate_q32;
    if (o.frozen) model_frozen = true;
    if (o.thaw) model_frozen = false;
    const std::uint64_t rate_after = model_frozen ? 0 : model_rate;
    ASSERT_EQ(q.generation, p.generation + 1);
    for (int f = 0; f < ns_family_count; ++f) {
      const auto fam = static_cast<ns_family>(f);
      for (std::int64_t back : {std::int64_t{1}, switch_margin_ns / 2, switch_margin_ns}) {
        ASSERT_EQ(virtual_time(q, fam, sw.ns[f] - back), virtual_time(p, fam, sw.ns[f] - back))
            << "old and new disagree before the switch point, family " << f;
      }
      // Exactly at the switch point: a change one nanosecond late (the old
      // line still answering there) fails here for an offset.
      ASSERT_EQ(virtual_time(q, fam, sw.ns[f]), want_at_switch[f])
          << "family " << f << (offset_set[f] ? ": the offset set" : ": not continuous")
          << " not in force at the switch point, step " << step;
      if (offset_set[f]) ++offsets_checked[f];
      // After it: the rate the options leave, floored as readers floor it.
      for (std::int64_t ahead : {std::int64_t{1}, std::int64_t{1'000'000}, s, 1000 * s}) {
        const i128 exact = (static_cast<i128>(ahead) * rate_after) >> 32;
        ASSERT_EQ(virtual_time(q, fam, sw.ns[f] + ahead),
                  want_at_switch[f] + static_cast<std::int64_t>(exact))
            << "family " << f << " does not run at the rate set, " << ahead
            << " ns after the switch";
      }
    }
    p = q;
  }
  EXPECT_GT(changes, 1000);
  for (const int n : offsets_checked) EXPECT_GT(n, 100);  // an offset set, on every family
  EXPECT_GT(refusals, 20);                                // and the refusal check ran
}

TEST(NextParams, FreezeHoldsAndThawResumesAtTheRateLastSet) {
  ns_params p{}, q{}, r{};
  std::string error;
  time_options rate;
  rate.rate_q32 = 3 * rate_one_q32;
  ASSERT_TRUE(next_params(nullptr, rate, at(10 * s, 20 * s), p, error));
  time_options freeze;
  freeze.frozen = true;
  ASSERT_TRUE(next_params(&p, freeze, at(11 * s, 21 * s), q, error));
  const std::int64_t held = virtual_time(q, ns_family::monotonic, 11 * s);
  EXPECT_EQ(held, 13 * s);  // 10 s + 3 x 1 s
  EXPECT_EQ(virtual_time(q, ns_family::monotonic, 500 * s), held);
  time_options thaw;
  thaw.thaw = true;
  ASSERT_TRUE(next_params(&q, thaw, at(20 * s, 30 * s), r, error));
  EXPECT_EQ(virtual_time(r, ns_family::monotonic, 20 * s), held);
  EXPECT_EQ(virtual_time(r, ns_family::monotonic, 21 * s), held + 3 * s);
}

}  // namespace
}  // namespace vclock::timens
