// What one `vclock bench` run measured, and how it prints it (text tables
// or one JSON document). bench.cc measures; bench_report.cc prints.
#ifndef VCLOCK_SRC_CLI_BENCH_BENCH_RESULTS_H_
#define VCLOCK_SRC_CLI_BENCH_BENCH_RESULTS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/bench/bench_contenders.h"
#include "lib/status.h"

namespace vclock::cli {

// Nearest-rank percentile of sorted `v`; p in [0, 1].
template <class T>
T percentile(const std::vector<T>& sorted, double p) {
  if (sorted.empty()) {
    return T{};
  }
  const double rank = std::ceil(p * static_cast<double>(sorted.size()));
  const auto i = static_cast<std::size_t>(std::max(rank, 1.0)) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

template <class T>
std::vector<T> sorted(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v;
}

struct bench_options {
  bool quick = false;
  bool json = false;
  bool cold_every_clock = false;
  bool gettime_perf = false;
  bool floor_only = false;   // --floor: the floor's rows only, many short trials
  std::int64_t threads = 0;  // 0: as many as the process may use
};

struct bench_plan {
  int trials;
  double trial_ms;
  std::size_t cold_samples;  // per contender
  std::size_t tail_calls;    // per contender
  int thread_trials;
  double thread_trial_ms;
};

// The full run takes about a minute; --quick well under 15 s.
constexpr bench_plan full_plan{20, 50, 5000, 1'000'000, 5, 50};
constexpr bench_plan quick_plan{10, 10, 1000, 200'000, 5, 10};
// --floor: rows a few ns apart, so a trial is short enough that many of them
// see no timer interrupt and no timekeeper tick (4 ms), and the fastest is
// the call's own cost; about 15 s (--quick: 2 s). No single-call sections.
constexpr bench_plan floor_plan{300, 2, 0, 0, 0, 0};
constexpr bench_plan quick_floor_plan{30, 2, 0, 0, 0, 0};

struct machine {
  status_snapshot status;
  std::string cpu_model;
  std::string kernel_release;
  std::vector<int> cpus;  // allowed
  int pinned_cpu = -1;
  bool rdtscp = false;
  double load_average = -1;  // 1-minute, at the start: a busy machine widens the medians
};

struct hot_row {
  const contender* who;
  double min_ns;
  double median_ns;
};

struct tick_row {
  const contender* who;
  std::vector<std::uint32_t> ticks;  // sorted
};

struct thread_row {
  int threads;
  const contender* who;
  double mean_ns;   // mean over threads of each thread's best trial
  double worst_ns;  // the slowest thread's best trial
};

struct results {
  machine m;
  bench_plan plan = full_plan;
  bench_options options;
  std::vector<hot_row> hot;
  flush_set flush;
  std::vector<tick_row> cold;
  std::vector<tick_row> tails;
  std::vector<thread_row> threads;
};

// Prints `r` on stdout: tables, or one JSON document with --json.
void print_results(const results& r);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_BENCH_BENCH_RESULTS_H_
