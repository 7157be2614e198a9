// The seqlock under load: one writer publishing in a tight loop, following the timekeeper's
// protocol (backup line first, then hot), while readers run the real read_fast/read_careful
// over the same page. Every generation's fields are derived from one number, so a torn read
// (fields from two generations) gives a time whose bit fields disagree. Run it under the tsan
// preset too: the protocol must be data-race free, not just lucky.
#include "vclock/detail/seqlock.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "vclock/detail/arch.h"
#include "vclock/detail/reader.h"
#include "vclock/page.h"

namespace {

using vclock::clock_line;
using vclock::page;
using vclock::detail::clock_kind;

// The fake counter never moves; each generation moves cycle_last instead.
constexpr std::uint64_t counter_now = std::uint64_t{1} << 40;
constexpr std::int16_t tai_s = 37;
constexpr std::int64_t tai_ns = std::int64_t{tai_s} * 1'000'000'000;
// The backup line says TAI is one second more: the mark by which a TAI reading shows which
// line answered it (no other field may differ: the two lines hold one generation), so the
// test can show that readers did read the backup line while the writer was mid-update.
constexpr std::int16_t backup_tai_s = tai_s + 1;

// Generation g, encoded in three bit fields of every clock's time:
//   bits 32..62  g           (mono_ns, raw_ns)
//   bits 16..31  g & 0xffff  (realtime and boottime offsets)
//   bits  0..15  g & 0xffff  (the counter term: delta * mult >> shift, with delta, mult and
//                             the page's shift scaled by per-generation powers of two, so a
//                             torn delta/mult/shift combination shows too)
// A time whose fields disagree mixes generations.
struct generation {
  std::uint64_t g;
  std::int64_t base() const { return static_cast<std::int64_t>(g << 32); }
  std::int64_t offset() const { return static_cast<std::int64_t>((g & 0xffff) << 16); }
  unsigned a() const { return static_cast<unsigned>(g & 7); }
  // Where the arch fixes the shift (x86-64: 32) the page's shift is not read: keep it.
  unsigned b() const {
    return vclock::arch::fixed_shift != 0 ? 0 : static_cast<unsigned>((g >> 3) & 7);
  }
  // delta * mult = (g & 0xffff) << shift, so the counter term is g & 0xffff.
  std::uint64_t delta() const { return (g & 0xffff) << (16 - a()); }
  std::uint32_t mult() const { return std::uint32_t{1} << (16 + a() - b()); }
  std::uint8_t shift() const { return static_cast<std::uint8_t>(32 - b()); }
};

// Stores generation `gen` into line `l` between write_begin() and write_end().
void write_line(clock_line& l, generation gen, std::uint64_t max_delta,
                std::int16_t tai_offset_s = tai_s) {
  using vclock::detail::store;
  const std::uint32_t odd = vclock::detail::write_begin(l.seq);
  store(l.cycle_last, counter_now - gen.delta());
  store(l.max_delta, max_delta);
  store(l.mult, gen.mult());
  store(l.raw_mult, gen.mult());
  store(l.shift, gen.shift());
  store(l.mono_ns, gen.base());
  store(l.raw_ns, gen.base());
  store(l.realtime_ns, gen.base() + gen.offset());
  store(l.boottime_ns, gen.base() + gen.offset());
  store(l.tai_offset_s, tai_offset_s);
  vclock::detail::write_end(l.seq, odd);
}

constexpr std::uint64_t hot_max_delta = std::uint64_t{1} << 33;

// One publish, as the timekeeper does it: freeze the current parameters into the backup
// line (valid up to the counter value where this update starts), then rewrite hot.
void publish(page& p, std::uint64_t g) {
  const generation previous{g - 1};
  write_line(p.backup, previous, previous.delta() + 1, backup_tai_s);
  write_line(p.hot, generation{g}, hot_max_delta);
}

// Checks that time `t` of clock `k` is one generation's, and returns that generation.
testing::AssertionResult decode_fields(clock_kind k, std::int64_t t, std::uint64_t& g) {
  const auto u = static_cast<std::uint64_t>(t);
  g = u >> 32;
  const std::uint64_t mid = (u >> 16) & 0xffff;
  const std::uint64_t low = u & 0xffff;
  const std::uint64_t want = g & 0xffff;
  bool ok = false;
  if (k == clock_kind::monotonic || k == clock_kind::monotonic_raw) {
    ok = mid == 0 && low == want;
  } else if (k == clock_kind::realtime_coarse) {
    ok = mid == want && low == 0;
  } else if (k == clock_kind::monotonic_coarse) {
    ok = mid == 0 && low == 0;
  } else {
    ok = mid == want && low == want;
  }
  if (ok) return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << "torn read: kind " << static_cast<unsigned>(k) << " time 0x" << std::hex << u
         << " (generation 0x" << g << ", fields 0x" << mid << " 0x" << low << ")";
}

// TAI: either line's offset taken off first (`t` becomes the time without it), and
// `from_backup` says whose it was.
testing::AssertionResult decode_tai(std::int64_t& t, std::uint64_t& g, bool& from_backup) {
  from_backup = false;
  if (decode_fields(clock_kind::tai, t - tai_ns, g)) {
    t -= tai_ns;
    return testing::AssertionSuccess();
  }
  const std::int64_t backup_tai_ns = std::int64_t{backup_tai_s} * 1'000'000'000;
  if (decode_fields(clock_kind::tai, t - backup_tai_ns, g)) {
    t -= backup_tai_ns;
    from_backup = true;
    return testing::AssertionSuccess();
  }
  return decode_fields(clock_kind::tai, t - tai_ns, g);
}

struct reader_stats {
  std::uint64_t reads = 0;
  std::uint64_t careful = 0;
  std::uint64_t from_backup = 0;  // TAI readings the backup line answered (its mark)
  std::uint64_t kernel_calls = 0;
  std::string failure;  // the first failure; empty if none
};

template <clock_kind K>
void read_once(const page& p, std::int64_t& last, reader_stats& stats) {
  auto counter = []() noexcept { return vclock::arch::counter_read{counter_now, 0}; };
  auto kernel = [&]() noexcept -> std::int64_t {
    ++stats.kernel_calls;  // the page is never stale or off here
    return 0;
  };
  const std::int64_t t = vclock::detail::read_fast<K>(p, counter, [&]() noexcept {
    ++stats.careful;
    return vclock::detail::read_careful<K>(p, counter, kernel);
  });
  ++stats.reads;
  std::uint64_t g = 0;
  std::int64_t time = t;  // TAI: less its line's offset
  bool from_backup = false;
  const testing::AssertionResult r =
      K == clock_kind::tai ? decode_tai(time, g, from_backup) : decode_fields(K, t, g);
  stats.from_backup += from_backup ? 1 : 0;
  if (!r) {
    stats.failure = r.message();
  } else if (time < last) {
    stats.failure = "kind " + std::to_string(static_cast<unsigned>(K)) + " went back from " +
                    std::to_string(last) + " to " + std::to_string(time);
  }
  last = time;
}

void reader_loop(const page& p, const std::atomic<bool>& stop, reader_stats& stats) {
  std::int64_t last[7] = {};
  while (!stop.load(std::memory_order_relaxed) && stats.failure.empty()) {
    read_once<clock_kind::realtime>(p, last[0], stats);
    read_once<clock_kind::monotonic>(p, last[1], stats);
    read_once<clock_kind::monotonic_raw>(p, last[2], stats);
    read_once<clock_kind::boottime>(p, last[3], stats);
    read_once<clock_kind::tai>(p, last[4], stats);
    read_once<clock_kind::realtime_coarse>(p, last[5], stats);
    read_once<clock_kind::monotonic_coarse>(p, last[6], stats);
  }
}

TEST(Seqlock, WriteBeginMakesTheSequenceOddAndWriteEndEven) {
  auto p = std::make_unique<page>();
  p->hot.seq = 40;
  const std::uint32_t odd = vclock::detail::write_begin(p->hot.seq);
  EXPECT_EQ(odd, 41u);
  EXPECT_EQ(vclock::detail::load(p->hot.seq), 41u);
  vclock::detail::write_end(p->hot.seq, odd);
  EXPECT_EQ(vclock::detail::load(p->hot.seq), 42u);
  // The sequence wraps like any unsigned counter; parity is what matters.
  p->hot.seq = 0xffff'fffe;
  const std::uint32_t odd2 = vclock::detail::write_begin(p->hot.seq);
  EXPECT_EQ(odd2, 0xffff'ffffu);
  vclock::detail::write_end(p->hot.seq, odd2);
  EXPECT_EQ(vclock::detail::load(p->hot.seq), 0u);
}

TEST(Seqlock, ReadersNeverSeeATornOrBackwardTimeWhileTheWriterPublishes) {
  auto p = std::make_unique<page>();
  write_line(p->backup, generation{0}, 1);
  write_line(p->hot, generation{0}, hot_max_delta);

  const unsigned readers = std::max(3u, std::min(6u, std::thread::hardware_concurrency()));
  std::vector<reader_stats> stats(readers);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  threads.reserve(readers);
  for (unsigned i = 0; i < readers; ++i) {
    threads.emplace_back(reader_loop, std::cref(*p), std::cref(stop), std::ref(stats[i]));
  }

  // About one second of publishing, checked against the clock every 1024 generations.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  std::uint64_t g = 0;
  for (;;) {
    publish(*p, ++g);
    if ((g & 1023) == 0 &&
        (std::chrono::steady_clock::now() >= deadline || g >= (std::uint64_t{1} << 30))) {
      break;
    }
  }
  stop.store(true, std::memory_order_relaxed);
  for (std::thread& t : threads) t.join();

  std::uint64_t reads = 0;
  std::uint64_t careful = 0;
  std::uint64_t from_backup = 0;
  for (unsigned i = 0; i < readers; ++i) {
    EXPECT_EQ(stats[i].failure, "") << "reader " << i;
    EXPECT_EQ(stats[i].kernel_calls, 0u) << "reader " << i;
    EXPECT_GT(stats[i].reads, 0u) << "reader " << i;
    reads += stats[i].reads;
    careful += stats[i].careful;
    from_backup += stats[i].from_backup;
  }
  EXPECT_GT(g, 1000u);
  // The protocol under test is the two lines: a run where no reader ever met the writer
  // mid-update (so never read the backup line) proved nothing about it.
  EXPECT_GT(careful, 0u);
  EXPECT_GT(from_backup, 0u) << "no TAI reading came from the backup line";
  std::printf(
      "[          ] %llu publishes, %u readers, %llu reads, %llu from the careful path, %llu TAI "
      "readings from the backup line\n",
      static_cast<unsigned long long>(g), readers, static_cast<unsigned long long>(reads),
      static_cast<unsigned long long>(careful), static_cast<unsigned long long>(from_backup));
}

}  // namespace
