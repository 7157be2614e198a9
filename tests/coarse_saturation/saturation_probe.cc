// A program for tests/coarse_saturation_test.cc: keeps every CPU it may run on busy for a
// bounded time with threads that read clocks, and reports how far the coarse MONOTONIC clock
// lags the kernel's fine one, for vclock's (vclock_gettime_ns) and for the kernel's own.
// Usage: saturation_probe SECONDS [THREADS]   (THREADS: default four per usable CPU, so that
// a normal thread that wakes, the timekeeper's, finds every CPU's queue long)
// Prints one line: "threads N reads R dropped D vclock_max_ns V kernel_max_ns K vclock_p999_ns V3
// kernel_p999_ns K3". Exits 1 if vclock does not reach counter mode within 5 s.
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "lib/runtime.h"
#include "vclock/detail/seqlock.h"
#include "vclock/vclock.h"

namespace {

std::int64_t kernel_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec * std::int64_t{1'000'000'000} + ts.tv_nsec;
}

// Lags in 10 us bins up to 50 ms (the last bin holds everything beyond).
constexpr int bins = 5000;
constexpr std::int64_t bin_ns = 10'000;

struct lags {
  std::vector<std::uint64_t> vclock = std::vector<std::uint64_t>(bins, 0);
  std::vector<std::uint64_t> kernel = std::vector<std::uint64_t>(bins, 0);
  std::int64_t vclock_max = 0;
  std::int64_t kernel_max = 0;
  std::uint64_t reads = 0;
  std::uint64_t dropped = 0;
};

void add(std::vector<std::uint64_t>& h, std::int64_t& max, std::int64_t lag) {
  max = std::max(max, lag);
  h[static_cast<std::size_t>(std::clamp<std::int64_t>(lag / bin_ns, 0, bins - 1))]++;
}

// Each lag is the fine clock read after the coarse ones minus the coarse time: its age, plus
// the few tens of ns between the reads (the same for both clocks). A read that took longer
// than max_read_ns (the thread was preempted in it) is not counted: its lag would be the
// preemption's, not the clock's. Counted, dropped: reads, dropped.
constexpr std::int64_t max_read_ns = 20'000;

void spin(std::int64_t until_ns, lags& out) {
  while (true) {
    const std::int64_t before = kernel_ns(CLOCK_MONOTONIC);
    const std::int64_t v = vclock_gettime_ns(CLOCK_MONOTONIC_COARSE);
    const std::int64_t k = kernel_ns(CLOCK_MONOTONIC_COARSE);
    const std::int64_t fine = kernel_ns(CLOCK_MONOTONIC);
    ++out.reads;
    if (fine - before <= max_read_ns) {
      add(out.vclock, out.vclock_max, fine - v);
      add(out.kernel, out.kernel_max, fine - k);
    } else {
      ++out.dropped;
    }
    if (fine >= until_ns) return;
  }
}

std::int64_t percentile(const std::vector<std::uint64_t>& h, double p) {
  std::uint64_t total = 0;
  for (const std::uint64_t n : h) total += n;
  const auto rank = static_cast<std::uint64_t>(p * static_cast<double>(total));
  std::uint64_t seen = 0;
  for (int i = 0; i < bins; ++i) {
    seen += h[static_cast<std::size_t>(i)];
    if (seen > rank) return (i + 1) * bin_ns;  // the bin's upper edge
  }
  return bins * bin_ns;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const double seconds = std::atof(argv[1]);
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof(set), &set);
  const int threads = argc > 2 ? std::atoi(argv[2]) : 4 * CPU_COUNT(&set);
  // Starts the timekeeper (or attaches to vclockd's page) and waits until it answers from
  // the counter, before the CPUs are taken.
  bool counter_mode = false;
  for (int i = 0; i < 5000 && !counter_mode; ++i) {
    (void)vclock_gettime_ns(CLOCK_MONOTONIC);
    counter_mode = vclock::detail::load(vclock::detail::host_page->hot.max_delta) != 0;
    const timespec ms{0, 1'000'000};
    nanosleep(&ms, nullptr);
  }
  if (!counter_mode) {
    std::printf("no counter mode within 5 s\n");
    return 1;
  }
  const std::int64_t until = kernel_ns(CLOCK_MONOTONIC) + static_cast<std::int64_t>(seconds * 1e9);
  std::vector<lags> results(static_cast<std::size_t>(threads));
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back(spin, until, std::ref(results[static_cast<std::size_t>(t)]));
  }
  for (std::thread& t : pool) t.join();
  lags all;
  for (const lags& r : results) {
    for (int i = 0; i < bins; ++i) {
      all.vclock[static_cast<std::size_t>(i)] += r.vclock[static_cast<std::size_t>(i)];
      all.kernel[static_cast<std::size_t>(i)] += r.kernel[static_cast<std::size_t>(i)];
    }
    all.vclock_max = std::max(all.vclock_max, r.vclock_max);
    all.kernel_max = std::max(all.kernel_max, r.kernel_max);
    all.reads += r.reads;
    all.dropped += r.dropped;
  }
  std::printf(
      "threads %d reads %llu dropped %llu vclock_max_ns %lld kernel_max_ns %lld vclock_p999_ns "
      "%lld "
      "kernel_p999_ns %lld\n",
      threads, static_cast<unsigned long long>(all.reads),
      static_cast<unsigned long long>(all.dropped), static_cast<long long>(all.vclock_max),
      static_cast<long long>(all.kernel_max), static_cast<long long>(percentile(all.vclock, 0.999)),
      static_cast<long long>(percentile(all.kernel, 0.999)));
  return 0;
}
