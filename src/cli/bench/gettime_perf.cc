// The kernel's gettime_perf selftest loop, for the vDSO and for vclock.
//
// gettime_perf (the seeds quote its counts) calls clock_gettime until the
// clock itself has advanced by a fixed span, and reports how many calls fit:
//
//   for (tp = start; end.tv_sec > tp.tv_sec ||
//                    (end.tv_sec == tp.tv_sec && end.tv_nsec > tp.tv_nsec); i++)
//     clock_gettime(clock, &tp);
//
// Each call's tv_sec is read back (a store-to-load forward the next call's
// ordered counter read waits for), tv_nsec only in the last second. This
// file runs that loop unchanged, except for the span (see `plan`). vclock's _ns form runs the same
// loop on its integer result. Both vclock forms are called through
// pointers, as the vDSO is: the loop is identical for every contender.
#include "cli/bench/gettime_perf.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/cpu.h"
#include "lib/kernel_clock.h"
#include "lib/status.h"
#include "tool/args.h"
#include "tool/json.h"
#include "vclock/detail/reader.h"
#include "vclock/vclock.h"

namespace vclock::cli {
namespace {

using timespec_fn = int (*)(clockid_t, timespec*);
using ns_fn = std::int64_t (*)(clockid_t);

using detail::ns_per_s;

// The selftest counts over one 3 s span. A shared VM is seldom quiet for
// seconds at a time, so here the span is shorter and repeated, and the best
// round counts (as the seeds take the fastest of 20 trials).
struct plan {
  std::int64_t span_ns;
  int rounds;
};
constexpr plan perf_full_plan{ns_per_s * 3 / 10, 10};  // 45 s for 5 clocks x 3 contenders
constexpr plan perf_quick_plan{ns_per_s / 10, 3};      // 4.5 s

timespec add_ns(timespec t, std::int64_t ns) {
  const std::int64_t nsec = t.tv_nsec + ns % ns_per_s;
  t.tv_sec += static_cast<time_t>(ns / ns_per_s + nsec / ns_per_s);
  t.tv_nsec = static_cast<long>(nsec % ns_per_s);
  return t;
}

// The selftest's loop. noinline: one copy of the loop for every contender.
[[gnu::noinline]] std::uint64_t timespec_loop(timespec_fn get, clockid_t clock,
                                              std::int64_t span_ns) {
  timespec start{};
  get(clock, &start);
  const timespec end = add_ns(start, span_ns);
  std::uint64_t calls = 0;
  for (timespec tp = start;
       end.tv_sec > tp.tv_sec || (end.tv_sec == tp.tv_sec && end.tv_nsec > tp.tv_nsec); ++calls) {
    get(clock, &tp);
  }
  return calls;
}

// The same loop over a result in nanoseconds.
[[gnu::noinline]] std::uint64_t ns_loop(ns_fn get, clockid_t clock, std::int64_t span_ns) {
  const std::int64_t start = get(clock);
  const std::int64_t end = start + span_ns;
  std::uint64_t calls = 0;
  for (std::int64_t t = start; end > t; ++calls) {
    t = get(clock);
  }
  return calls;
}

struct clock_case {
  const char* name;
  clockid_t id;
};

// The selftest's four clocks, and REALTIME, the one most programs ask for.
constexpr clock_case clocks[] = {{"MONOTONIC", CLOCK_MONOTONIC},
                                 {"MONOTONIC_COARSE", CLOCK_MONOTONIC_COARSE},
                                 {"MONOTONIC_RAW", CLOCK_MONOTONIC_RAW},
                                 {"BOOTTIME", CLOCK_BOOTTIME},
                                 {"REALTIME", CLOCK_REALTIME}};

// The call count of every round, per contender of one clock; empty where
// the contender is missing (no vDSO).
struct counts {
  std::vector<std::uint64_t> vdso;
  std::vector<std::uint64_t> vclock_timespec;
  std::vector<std::uint64_t> vclock_ns;
};

counts measure(clockid_t clock, const plan& p, timespec_fn vdso) {
  const std::int64_t span_ns = p.span_ns;
  counts c;
  for (int r = 0; r < p.rounds; ++r) {
    // Rotate who goes first, so that a slow phase of the VM hits each alike.
    for (int k = 0; k < 3; ++k) {
      switch ((k + r) % 3) {
        case 0:
          if (vdso != nullptr) {
            c.vdso.push_back(timespec_loop(vdso, clock, span_ns));
          }
          break;
        case 1:
          c.vclock_timespec.push_back(timespec_loop(&vclock_gettime, clock, span_ns));
          break;
        default:
          c.vclock_ns.push_back(ns_loop(&vclock_gettime_ns, clock, span_ns));
          break;
      }
    }
  }
  return c;
}

// The best round's count (the most calls); 0 where there were none.
std::uint64_t best(const std::vector<std::uint64_t>& rounds) {
  return rounds.empty() ? 0 : *std::max_element(rounds.begin(), rounds.end());
}

std::uint64_t median(std::vector<std::uint64_t> rounds) {
  if (rounds.empty()) {
    return 0;
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

// a / b as a ratio of times per call, from call counts in the same span:
// time_a / time_b = calls_b / calls_a. NaN where either is missing.
double time_ratio(std::uint64_t calls_a, std::uint64_t calls_b) {
  if (calls_a == 0 || calls_b == 0) {
    return __builtin_nan("");
  }
  return static_cast<double>(calls_b) / static_cast<double>(calls_a);
}

std::string perf_ratio_text(double v) { return v == v ? tool::strformat("%.3fx", v) : "-"; }

// Calls per second of the clock, from a round's count.
double per_second(std::uint64_t calls, const plan& p) {
  return static_cast<double>(calls) * ns_per_s / static_cast<double>(p.span_ns);
}

std::string rate_text(std::uint64_t calls, const plan& p) {
  return calls == 0 ? "-" : tool::strformat("%.2f M", per_second(calls, p) / 1e6);
}

void print_text(const status_snapshot& s, int cpu, const plan& p, const std::vector<counts>& rows) {
  const std::string mode = s.counter_mode ? "counter mode" : "FALLBACK mode (" + s.reason + ")";
  std::printf(
      "vclock bench --gettime-perf: the kernel selftest's loop (selftests/timens/gettime_perf.c)\n"
      "clocksource %s; vclock %s; ordered reads use %s; pinned to CPU %d\n"
      "calls until the clock itself has advanced %.1f s, best of %d interleaved rounds,\n"
      "as calls per second (more is faster). Ratios are of time per call.\n",
      s.kernel_clocksource.c_str(), mode.c_str(), s.ordering.c_str(), cpu,
      static_cast<double>(p.span_ns) / ns_per_s, p.rounds);
  tool::text_table t({"clock", "vDSO timespec", "vclock timespec", "vclock _ns", "timespec vs vDSO",
                      "timespec vs _ns"});
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::uint64_t vdso = best(rows[i].vdso);
    const std::uint64_t ts = best(rows[i].vclock_timespec);
    const std::uint64_t ns = best(rows[i].vclock_ns);
    t.row()
        .left(clocks[i].name)
        .right(rate_text(vdso, p))
        .right(rate_text(ts, p))
        .right(rate_text(ns, p))
        .right(perf_ratio_text(time_ratio(ts, vdso)))
        .right(perf_ratio_text(time_ratio(ts, ns)));
  }
  std::fputs(t.str().c_str(), stdout);
}

// One row per contender and clock, with the fields every `bench --json` row
// has (API.md): name, min_ns and median_ns, here the span over the best and
// the median round's count.
void json_row(tool::json_writer& j, const std::string& name, const char* clock,
              const std::vector<std::uint64_t>& rounds, const plan& p) {
  if (rounds.empty()) {
    return;
  }
  const auto span = static_cast<double>(p.span_ns);
  j.begin_object()
      .field("name", name + "(" + clock + ")")
      .field("clock", clock)
      .field("calls", best(rounds))
      .field("min_ns", std::round(span / static_cast<double>(best(rounds)) * 100) / 100)
      .field("median_ns", std::round(span / static_cast<double>(median(rounds)) * 100) / 100)
      .end_object();
}

void print_json(const status_snapshot& s, int cpu, const plan& p, const std::vector<counts>& rows) {
  tool::json_writer j;
  j.begin_object().field("command", "bench").key("gettime_perf").begin_object();
  j.field("span_ns", p.span_ns).field("rounds", p.rounds).field("pinned_cpu", cpu);
  j.field("counter_mode", s.counter_mode).field("clocksource", s.kernel_clocksource);
  j.end_object().key("rows").begin_array();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    json_row(j, "__vdso_clock_gettime", clocks[i].name, rows[i].vdso, p);
    json_row(j, "vclock_gettime", clocks[i].name, rows[i].vclock_timespec, p);
    json_row(j, "vclock_gettime_ns", clocks[i].name, rows[i].vclock_ns, p);
  }
  j.end_array().end_object();
  std::fputs(j.str().c_str(), stdout);
}

}  // namespace

int run_gettime_perf(bool quick, bool json) {
  const status_snapshot s = read_status(2000);  // calibrated before anything is timed
  const int cpu = sched_getcpu();
  const bool pinned = cpu >= 0 && pin_current_thread(cpu);
  const plan& p = quick ? perf_quick_plan : perf_full_plan;
  const timespec_fn vdso = kernel::vdso_gettime();
  std::vector<counts> rows;
  for (const clock_case& c : clocks) {
    rows.push_back(measure(c.id, p, vdso));
  }
  if (json) {
    print_json(s, pinned ? cpu : -1, p, rows);
  } else {
    print_text(s, pinned ? cpu : -1, p, rows);
  }
  return tool::exit_ok;
}

}  // namespace vclock::cli
