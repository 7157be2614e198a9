// `vclock bench`: every way this process can ask for the time, measured side
// by side in one pinned process, so that a claim of a ratio to the vDSO can
// be checked on any machine with one command.
//
// Method, after the seeds' "fastest of 20 trials of 100M iterations":
//  - Hot: each contender runs in its own non-inlined loop of calls (the call
//    inlined into the loop, the result folded into a sum that is forced into
//    a register, so nothing is optimised away). Iterations are sized so that
//    one trial lasts at least trial_ms. The trial loop is outside and the
//    contender loop inside, with a rotating start, so slow phases of a noisy
//    VM hit every contender alike. Reported: min and median ns per call over
//    the trials, and the min against the vDSO's CLOCK_MONOTONIC of this run
//    (and against the vDSO's own reading of the same clock).
//  - Floor (hot only): between the bare counter read and vclock's entry
//    points, the same loop calls functions of this file that each add one
//    step of vclock's fast path: a call, the counter read, the multiply and
//    shift (as ns and as timespec), and vclock's own reader (the seqlock)
//    called directly. What is left above the last is the clock-id dispatch
//    and the PLT/ifunc jump. Rows for the ordering the library uses and for
//    the bare rdtsc of the relaxed entry points.
//  - Cold: before every single call, the cache lines of the code and data
//    that the call uses are flushed with CLFLUSH (the same set before every
//    call, whichever contender is next: see cold_flush_set()), then the call
//    is bracketed by LFENCE;RDTSC. Reported: median and p90 ticks.
//  - Tails: a million (--quick: 200,000) single calls per contender, each
//    bracketed by LFENCE;RDTSC, while the timekeeper publishes at its normal
//    rate; interleaved in blocks. Reported: p50, p99, p99.9 and max ticks.
//  - Threads: 1..N threads, each pinned to its own CPU, calling at once;
//    per-thread ns per call.
#include "cli/bench/bench.h"

#include <sched.h>
#include <sys/utsname.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "cli/bench/bench_contenders.h"
#include "cli/bench/bench_results.h"
#include "cli/bench/bench_shim_stats.h"
#include "cli/bench/gettime_perf.h"
#include "cli/cpu.h"
#include "lib/status.h"
#include "tool/args.h"

namespace vclock::cli {
namespace {

// ---- The machine ----------------------------------------------------------------------------

double read_load_average() {
  std::ifstream in("/proc/loadavg");
  double load = -1;
  in >> load;
  return in ? load : -1;
}

// Starts the timekeeper and waits for calibration first, so that vclock is
// in counter mode before anything is measured; then pins this thread. The
// timekeeper thread was created before the pinning and stays unpinned.
machine prepare_machine() {
  machine m;
  m.status = read_status(2000);
  m.cpu_model = read_cpu_model();
  utsname u{};
  m.kernel_release = uname(&u) == 0 ? u.release : "unknown";
  m.cpus = allowed_cpus();
  m.rdtscp = has_rdtscp();
  m.load_average = read_load_average();
  const int here = sched_getcpu();
  const bool here_allowed = std::find(m.cpus.begin(), m.cpus.end(), here) != m.cpus.end();
  const int target = here_allowed ? here : (m.cpus.empty() ? -1 : m.cpus.front());
  if (target >= 0 && pin_current_thread(target)) {
    m.pinned_cpu = target;
  }
  return m;
}

// ---- Hot ------------------------------------------------------------------------------------

double time_loop_ns(const contender& c, std::uint64_t iterations) {
  const std::int64_t t0 = raw_now_ns();
  keep(c.loop(iterations));
  const std::int64_t t1 = raw_now_ns();
  return static_cast<double>(t1 - t0);
}

// Iterations for one trial of at least trial_ns. Sized from the faster of
// two timed passes, so that a preempted pass cannot shorten the trials.
std::uint64_t iterations_for(const contender& c, double trial_ns) {
  std::uint64_t n = 64;
  while (time_loop_ns(c, n) < trial_ns / 16 && n < (std::uint64_t{1} << 40)) {
    n *= 4;
  }
  const double per_call = std::min(time_loop_ns(c, n), time_loop_ns(c, n)) / static_cast<double>(n);
  const double wanted = std::ceil(1.05 * trial_ns / std::max(per_call, 0.01));
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(wanted));
}

std::vector<hot_row> measure_hot(const std::vector<contender>& cs, const bench_plan& plan) {
  const double trial_ns = plan.trial_ms * 1e6;
  std::vector<std::uint64_t> iterations;
  iterations.reserve(cs.size());
  for (const contender& c : cs) {
    iterations.push_back(iterations_for(c, trial_ns));
  }
  const auto trials = static_cast<std::size_t>(plan.trials);
  std::vector<std::vector<double>> per_call(cs.size(), std::vector<double>(trials));
  for (std::size_t t = 0; t < trials; ++t) {
    for (std::size_t k = 0; k < cs.size(); ++k) {
      const std::size_t i = (k + t) % cs.size();  // rotate who goes first
      per_call[i][t] = time_loop_ns(cs[i], iterations[i]) / static_cast<double>(iterations[i]);
    }
  }
  std::vector<hot_row> rows;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const std::vector<double> s = sorted(per_call[i]);
    rows.push_back({&cs[i], s.front(), percentile(s, 0.5)});
  }
  return rows;
}

// ---- Single calls: cold and tails -----------------------------------------------------------

std::vector<tick_row> measure_cold(const std::vector<contender>& cs, std::size_t samples,
                                   const flush_set& flush) {
  std::vector<tick_row> rows;
  rows.reserve(cs.size());
  for (const contender& c : cs) {
    rows.push_back({&c, std::vector<std::uint32_t>(samples)});
  }
  // One call per contender in turn: the same flush before every call.
  for (std::size_t s = 0; s < samples; ++s) {
    for (tick_row& r : rows) {
      r.ticks[s] = r.who->cold(flush);
    }
  }
  for (tick_row& r : rows) {
    std::sort(r.ticks.begin(), r.ticks.end());
  }
  return rows;
}

std::vector<tick_row> measure_tails(const std::vector<contender>& cs, std::size_t calls) {
  constexpr std::size_t block = 4096;
  std::vector<tick_row> rows;
  rows.reserve(cs.size());
  for (const contender& c : cs) {
    rows.push_back({&c, std::vector<std::uint32_t>(calls)});
  }
  for (std::size_t done = 0; done < calls; done += block) {
    const std::size_t n = std::min(block, calls - done);
    for (tick_row& r : rows) {
      r.who->timed(r.ticks.data() + done, n);
    }
  }
  for (tick_row& r : rows) {
    std::sort(r.ticks.begin(), r.ticks.end());
  }
  return rows;
}

// ---- Threads --------------------------------------------------------------------------------

// Each thread's best ns per call over `trials` trials, all threads starting
// each trial together.
std::vector<double> run_threads(const contender& c, std::uint64_t iterations, int threads,
                                int trials, const std::vector<int>& cpus) {
  std::vector<double> best(static_cast<std::size_t>(threads),
                           std::numeric_limits<double>::infinity());
  std::barrier sync(threads);
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&, i] {
      const auto me = static_cast<std::size_t>(i);
      if (!cpus.empty()) {
        pin_current_thread(cpus[me % cpus.size()]);
      }
      for (int t = 0; t < trials; ++t) {
        sync.arrive_and_wait();
        const double ns = time_loop_ns(c, iterations) / static_cast<double>(iterations);
        best[me] = std::min(best[me], ns);
      }
    });
  }
  for (std::thread& t : pool) {
    t.join();
  }
  return best;
}

// 1..N, or powers of two and N when N is large.
std::vector<int> thread_counts(int n) {
  std::vector<int> counts;
  for (int k = 1; k <= n; k = n <= 8 ? k + 1 : k * 2) {
    counts.push_back(k);
  }
  if (counts.back() != n) {
    counts.push_back(n);
  }
  return counts;
}

std::vector<thread_row> measure_threads(const std::vector<hot_row>& hot, int max_threads,
                                        const bench_plan& plan, const std::vector<int>& cpus) {
  std::vector<thread_row> rows;
  for (const int n : thread_counts(max_threads)) {
    for (const hot_row& h : hot) {
      const contender& c = *h.who;
      const bool wanted =
          c.clock == "MONOTONIC" && (c.function == "vclock_gettime_ns" || c.group == "vdso");
      if (!wanted) {
        continue;
      }
      const auto iterations = static_cast<std::uint64_t>(plan.thread_trial_ms * 1e6 / h.min_ns);
      const std::vector<double> best =
          run_threads(c, std::max<std::uint64_t>(iterations, 1), n, plan.thread_trials, cpus);
      double sum = 0;
      for (const double b : best) {
        sum += b;
      }
      rows.push_back({n, &c, sum / n, *std::max_element(best.begin(), best.end())});
    }
  }
  return rows;
}

// The rows --floor keeps: what the floor is compared with (vclock's ordered
// and relaxed MONOTONIC, the C++ clocks that inline the reader, the vDSO's
// MONOTONIC that the ratios divide by) and the floor itself.
std::vector<contender> floor_contenders(const std::vector<contender>& all) {
  std::vector<contender> out;
  for (const contender& c : all) {
    const bool monotonic =
        c.clock == "MONOTONIC" && (c.group == "vdso" || c.function == "vclock_gettime_ns" ||
                                   c.function == "vclock_gettime_ns_relaxed");
    if (monotonic || c.group == "c++" || c.group == "counter" || c.group == "floor") {
      out.push_back(c);
    }
  }
  return out;
}

int print_help(const tool::option_parser& parser) {
  std::printf(
      "Usage: vclock bench [--quick] [--json] [--cold] [--threads N]\n"
      "       vclock bench --floor [--quick] [--json]\n"
      "       vclock bench --gettime-perf [--quick] [--json]\n\n"
      "Measures, side by side in one process pinned to one CPU: vclock (ordered and\n"
      "relaxed, timespec and _ns forms) and the kernel's vDSO for every fast-path clock,\n"
      "the system call, libc's clock_gettime, gettimeofday and time, the bare counter,\n"
      "and the floor between the counter and vclock (a call, the ordered read, the\n"
      "multiply and shift, vclock's own reader without the dispatch).\n"
      "Hot cache: fastest of %d trials of >= %.0f ms (--quick: %d of >= %.0f ms), ratios\n"
      "to the vDSO's CLOCK_MONOTONIC. Cold cache: median and p90 ticks per call after\n"
      "CLFLUSH of the code and data lines. Tails: p50..max ticks of single calls.\n"
      "Threads: per-thread ns per call with 1..N threads calling at once.\n"
      "A full run takes about a minute; --quick under 15 s.\n"
      "--gettime-perf runs instead the kernel selftest's loop (gettime_perf.c): the calls\n"
      "that fit in a span of the clock itself, for the vDSO and vclock's timespec and\n"
      "_ns forms; best of 10 rounds of 0.3 s, about 45 s (--quick: 3 of 0.1 s, 5 s).\n"
      "--floor measures only the rows that the floor compares (the vDSO's and vclock's\n"
      "MONOTONIC, the C++ clocks, the counter reads and the floor), hot cache only, in\n"
      "%d trials of >= %.0f ms (--quick: %d): trials that short often run free of\n"
      "interrupts and timekeeper ticks, which a 50 ms trial never is.\n\n%s",
      full_plan.trials, full_plan.trial_ms, quick_plan.trials, quick_plan.trial_ms,
      floor_plan.trials, floor_plan.trial_ms, quick_floor_plan.trials,
      parser.options_help().c_str());
  return tool::exit_ok;
}

}  // namespace

int run_bench(std::span<char* const> args) {
  if (is_shim_stats_helper(args)) {
    return run_shim_stats_helper(args);
  }
  bench_options o;
  tool::option_parser parser("bench");
  parser.add_flag("--quick", &o.quick, "fewer, shorter trials: under 15 s in all");
  parser.add_flag("--json", &o.json, "print one JSON document instead of tables");
  parser.add_flag("--cold", &o.cold_every_clock,
                  "cold-cache figures for every clock, not only MONOTONIC");
  parser.add_flag("--floor", &o.floor_only,
                  "only the floor's rows (MONOTONIC, C++, counter, floor), many short trials");
  parser.add_flag("--gettime-perf", &o.gettime_perf,
                  "only the kernel's gettime_perf loop: calls per span of the clock");
  parser.add_int("--threads", "N", 1, 1024, &o.threads,
                 "measure 1..N threads at once (default: every usable CPU)");
  if (!parser.parse(args)) {
    return tool::usage_error("bench", parser.error());
  }
  if (parser.help_requested()) {
    return print_help(parser);
  }
  if (o.gettime_perf) {
    if (o.floor_only) {
      return tool::usage_error("bench", "--floor does not apply to --gettime-perf");
    }
    if (o.cold_every_clock || o.threads != 0) {
      return tool::usage_error("bench", "--cold and --threads do not apply to --gettime-perf");
    }
    return run_gettime_perf(o.quick, o.json);
  }
  if (o.floor_only && (o.cold_every_clock || o.threads != 0)) {
    return tool::usage_error("bench", "--cold and --threads do not apply to --floor");
  }

  prepare_contenders();
  results r;
  r.m = prepare_machine();
  r.plan =
      o.floor_only ? (o.quick ? quick_floor_plan : floor_plan) : (o.quick ? quick_plan : full_plan);
  r.options = o;
  if (o.floor_only) {
    const std::vector<contender> hot = floor_contenders(hot_contenders());
    r.hot = measure_hot(hot, r.plan);
    print_results(r);
    return tool::exit_ok;
  }
  const std::vector<contender> hot = hot_contenders();
  const std::vector<contender> cold = single_call_contenders(o.cold_every_clock);
  const std::vector<contender> tails = single_call_contenders(false);
  r.hot = measure_hot(hot, r.plan);
  r.flush = cold_flush_set();
  r.cold = measure_cold(cold, r.plan.cold_samples, r.flush);
  r.tails = measure_tails(tails, r.plan.tail_calls);
  const int max_threads = o.threads > 0 ? static_cast<int>(o.threads)
                                        : std::max<int>(1, static_cast<int>(r.m.cpus.size()));
  r.threads = measure_threads(r.hot, max_threads, r.plan, r.m.cpus);
  print_results(r);
  return tool::exit_ok;
}

}  // namespace vclock::cli
