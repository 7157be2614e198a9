// `vclock track [--seconds S] [--csv FILE] [--check]`: samples every
// page clock against the kernel and prints the error per interval, so a
// user can watch vclock follow chrony on their own machine. `--steps`
// measures instead how long vclock's REALTIME lags a step (step_lag.cc).
//
// One sample: kernel, vclock, kernel (the kernel through its vDSO); the
// error is vclock minus the midpoint of the two kernel readings, and half
// the bracket is its uncertainty. The narrowest of three brackets is kept.
// Samples are taken every 200 us, so the timekeeper's updates land between
// and inside them as they would for any caller.
#include "cli/measure/track.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/measure/step_lag.h"
#include "lib/kernel_clock.h"
#include "lib/status.h"
#include "tool/args.h"
#include "vclock/detail/reader.h"
#include "vclock/vclock.h"

namespace vclock::cli {
namespace {

struct tracked_clock {
  const char* name;
  clockid_t id;
};

constexpr tracked_clock clocks[] = {
    {"monotonic", CLOCK_MONOTONIC},
    {"realtime", CLOCK_REALTIME},
    {"monotonic_raw", CLOCK_MONOTONIC_RAW},
    {"boottime", CLOCK_BOOTTIME},
    {"tai", CLOCK_TAI},
};
constexpr int clock_count = sizeof(clocks) / sizeof(clocks[0]);

struct sample {
  std::int64_t error_ns;
  std::int64_t width_ns;
};

sample take_sample(clockid_t id) {
  sample best{0, INT64_MAX};
  for (int i = 0; i < 3; ++i) {
    const std::int64_t k1 = kernel::now_ns(id);
    const std::int64_t v = vclock_gettime_ns(id);
    const std::int64_t k2 = kernel::now_ns(id);
    if (k2 - k1 < best.width_ns) {
      best = {v - (k1 + (k2 - k1) / 2), k2 - k1};
    }
  }
  return best;
}

struct summary {
  std::int64_t p50 = 0, p99 = 0, max = 0;  // of |error|
  std::int64_t mean = 0;                   // signed
  std::int64_t width_p50 = 0;
  std::size_t count = 0;
};

std::int64_t percentile(std::vector<std::int64_t>& v, double p) {
  if (v.empty()) return 0;
  const auto i = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

summary summarise(const std::vector<sample>& samples) {
  summary s;
  std::vector<std::int64_t> abs_errors, widths;
  double sum = 0;
  for (const sample& x : samples) {
    abs_errors.push_back(x.error_ns < 0 ? -x.error_ns : x.error_ns);
    widths.push_back(x.width_ns);
    sum += static_cast<double>(x.error_ns);
  }
  s.count = samples.size();
  if (s.count == 0) return s;
  s.mean = static_cast<std::int64_t>(std::llround(sum / static_cast<double>(s.count)));
  s.p50 = percentile(abs_errors, 0.50);
  s.p99 = percentile(abs_errors, 0.99);
  s.max = *std::max_element(abs_errors.begin(), abs_errors.end());
  s.width_p50 = percentile(widths, 0.50);
  return s;
}

void sleep_ns(std::int64_t ns) {
  const timespec t{ns / detail::ns_per_s, ns % detail::ns_per_s};
  nanosleep(&t, nullptr);
}

// Why the options mix the periodic mode with --steps; "" when they do not.
std::string mode_conflict(bool steps, std::int64_t interval_s, const std::string& csv_path,
                          std::int64_t inject_us, bool json) {
  if (steps && interval_s != 0) return "--interval is for the periodic mode, not --steps";
  if (steps && !csv_path.empty()) return "--csv is for the periodic mode, not --steps";
  if (!steps && inject_us != 0) return "--inject-steps needs --steps";
  if (!steps && json) return "--json needs --steps";
  return "";
}

}  // namespace

std::string track_machine_line(const status_snapshot& st) {
  return tool::strformat("vclock track: %s, counter %.6f MHz, ordering %s, kernel clocksource %s",
                         st.counter_mode ? "counter mode" : ("fallback: " + st.reason).c_str(),
                         st.counter_hz / 1e6, st.ordering.c_str(), st.kernel_clocksource.c_str());
}

int run_track(std::span<char* const> args) {
  std::int64_t seconds = 10;
  std::int64_t interval_s = 0;  // 0: not given (1 s)
  std::string csv_path;
  bool check = false;
  bool steps = false;
  std::int64_t inject_us = 0;
  bool json = false;
  tool::option_parser parser("track");
  parser.add_int("seconds", "S", 1, std::int64_t{7} * 86400, &seconds,
                 "how long to track (default 10)");
  parser.add_int("interval", "S", 1, 3600, &interval_s, "seconds per printed row (default 1)");
  parser.add_string("csv", "FILE", &csv_path, "also write every interval's figures as CSV");
  parser.add_flag(
      "check", &check,
      "exit 1 unless MONOTONIC and REALTIME stay within p99 200 ns, max 1 us "
      "(with --steps: unless vclock follows every step, none certainly 1 ms late and 80 % "
      "certainly within 1 ms)");
  parser.add_flag("steps", &steps,
                  "measure instead how long vclock's REALTIME lags each step of the kernel's "
                  "(spins on one CPU for the whole run), beside the floor: a bare thread at "
                  "vclockd's priority woken by the same steps");
  parser.add_int("inject-steps", "US", min_inject_us, max_inject_us, &inject_us,
                 "with --steps: step REALTIME by +US us, 50 ms later by -US us, and so on; "
                 "restored at the end (needs CAP_SYS_TIME; like settimeofday, each step drops "
                 "the kernel's NTP state)");
  parser.add_flag("json", &json, "with --steps: print one JSON document");
  if (!parser.parse(args)) {
    return tool::usage_error("track", parser.error());
  }
  if (parser.help_requested()) {
    std::printf(
        "Usage: vclock track [--seconds S] [--interval S] [--csv FILE] [--check]\n"
        "       vclock track --steps [--inject-steps US] [--seconds S] [--json] [--check]\n\n%s",
        parser.options_help().c_str());
    return tool::exit_ok;
  }
  if (const std::string conflict = mode_conflict(steps, interval_s, csv_path, inject_us, json);
      !conflict.empty()) {
    return tool::usage_error("track", conflict);
  }
  if (steps) {
    return run_step_lag({seconds, inject_us, json, check}, read_status(2000));
  }
  if (interval_s == 0) interval_s = 1;
  std::FILE* csv = nullptr;
  if (!csv_path.empty()) {
    csv = std::fopen(csv_path.c_str(), "w");
    if (csv == nullptr) {
      return tool::usage_error("track", "cannot write '" + csv_path + "'");
    }
    std::fprintf(csv,
                 "t_s,clock,samples,mean_ns,p50_abs_ns,p99_abs_ns,max_abs_ns,bracket_p50_ns\n");
  }
  const status_snapshot st = read_status(2000);
  std::printf("%s\n", track_machine_line(st).c_str());
  std::printf("error = vclock - kernel (midpoint of a kernel,vclock,kernel bracket), ns\n\n");

  tool::text_table table(
      {"t_s", "clock", "samples", "mean", "p50|e|", "p99|e|", "max|e|", "bracket"});
  std::vector<sample> all[clock_count];
  const std::int64_t start = kernel::now_ns(CLOCK_MONOTONIC);
  for (std::int64_t t = 0; t < seconds; t += interval_s) {
    std::vector<sample> window[clock_count];
    const std::int64_t end = start + (t + interval_s) * detail::ns_per_s;
    while (kernel::now_ns(CLOCK_MONOTONIC) < end) {
      for (int c = 0; c < clock_count; ++c) {
        window[c].push_back(take_sample(clocks[c].id));
      }
      sleep_ns(200'000);
    }
    for (int c = 0; c < clock_count; ++c) {
      const summary s = summarise(window[c]);
      const long long t_end = t + interval_s;  // for %lld
      std::printf(
          "%4lld s  %-13s n=%-6zu mean %6lld  p50 %5lld  p99 %6lld  max %7lld  (bracket %lld)\n",
          t_end, clocks[c].name, s.count, static_cast<long long>(s.mean),
          static_cast<long long>(s.p50), static_cast<long long>(s.p99),
          static_cast<long long>(s.max), static_cast<long long>(s.width_p50));
      if (csv != nullptr) {
        std::fprintf(csv, "%lld,%s,%zu,%lld,%lld,%lld,%lld,%lld\n", t_end, clocks[c].name, s.count,
                     static_cast<long long>(s.mean), static_cast<long long>(s.p50),
                     static_cast<long long>(s.p99), static_cast<long long>(s.max),
                     static_cast<long long>(s.width_p50));
      }
      all[c].insert(all[c].end(), window[c].begin(), window[c].end());
    }
    std::fflush(stdout);
  }
  if (csv != nullptr) {
    std::fclose(csv);
  }
  std::printf("\nwhole run:\n");
  bool ok = true;
  for (int c = 0; c < clock_count; ++c) {
    const summary s = summarise(all[c]);
    table.row()
        .right(tool::strformat("%lld", static_cast<long long>(seconds)))
        .left(clocks[c].name)
        .right(tool::strformat("%zu", s.count))
        .right(tool::strformat("%lld", static_cast<long long>(s.mean)))
        .right(tool::strformat("%lld", static_cast<long long>(s.p50)))
        .right(tool::strformat("%lld", static_cast<long long>(s.p99)))
        .right(tool::strformat("%lld", static_cast<long long>(s.max)))
        .right(tool::strformat("%lld", static_cast<long long>(s.width_p50)));
    if (c < 2 && (s.p99 > 200 || s.max > 1000)) {
      ok = false;
    }
  }
  std::fputs(table.str().c_str(), stdout);
  std::printf("MONOTONIC and REALTIME within p99 200 ns, max 1 us: %s\n", ok ? "yes" : "NO");
  return check && !ok ? tool::exit_check_failed : tool::exit_ok;
}

}  // namespace vclock::cli
