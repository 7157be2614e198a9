// See bench_results.h: the tables and the JSON document of `vclock bench`.
#include <cstdio>

#include "cli/bench/bench_results.h"
#include "tool/args.h"
#include "tool/json.h"

namespace vclock::cli {
namespace {

// min_ns of the vDSO row of `clock`, or NaN.
double vdso_min_ns(const std::vector<hot_row>& rows, const std::string& clock) {
  for (const hot_row& r : rows) {
    if (r.who->group == "vdso" && r.who->clock == clock) {
      return r.min_ns;
    }
  }
  return std::nan("");
}

// Median ticks of the vDSO's row, or NaN.
double vdso_median_ticks(const std::vector<tick_row>& rows, const std::string& clock) {
  for (const tick_row& r : rows) {
    if (r.who->group == "vdso" && r.who->clock == clock) {
      return percentile(r.ticks, 0.5);
    }
  }
  return std::nan("");
}

double one_thread_ns(const std::vector<thread_row>& rows, const contender* who) {
  for (const thread_row& r : rows) {
    if (r.threads == 1 && r.who == who) {
      return r.mean_ns;
    }
  }
  return std::nan("");
}

std::string fixed(double v, int decimals) {
  return std::isfinite(v) ? tool::strformat("%.*f", decimals, v) : "-";
}

std::string ratio_text(double v) { return std::isfinite(v) ? tool::strformat("%.2fx", v) : "-"; }

// Rounded for JSON: sub-0.01 ns digits are noise.
double round2(double v) { return std::round(v * 100) / 100; }

std::string header_text(const results& r) {
  const status_snapshot& s = r.m.status;
  std::string out = "vclock bench";
  out += r.options.quick ? " --quick" : "";
  out += r.options.floor_only ? " --floor\n" : "\n";
  out += tool::strformat("cpu        %s; %zu CPUs usable, pinned to CPU %d; load average %.2f\n",
                         r.m.cpu_model.c_str(), r.m.cpus.size(), r.m.pinned_cpu, r.m.load_average);
  out += tool::strformat("counter    %s at %.3f MHz%s; ordered reads use %s; rdtscp %s\n",
                         s.counter.c_str(), s.counter_hz / 1e6,
                         s.invariant_counter ? " (invariant)" : "", s.ordering.c_str(),
                         r.m.rdtscp ? "yes" : "no");
  if (s.emulated) {
    out += tool::strformat(
        "emulated   qemu-user runs this program: %s and every figure below are the emulator's, "
        "not the hardware's\n",
        s.counter.c_str());
  }
  out += tool::strformat("kernel     %s; clocksource %s; vDSO %s\n", r.m.kernel_release.c_str(),
                         s.kernel_clocksource.c_str(), s.has_vdso ? "yes" : "no");
  out += "vclock     " +
         (s.counter_mode ? std::string("counter mode")
                         : "FALLBACK mode (" + s.reason + "): vclock rows measure the kernel") +
         "; page " + s.source + (s.source == "shared" ? " (" + s.page + ")" : std::string()) + "\n";
  return out;
}

std::string hot_text(const results& r) {
  const double base = vdso_min_ns(r.hot, "MONOTONIC");
  tool::text_table t(
      {"group", "call", "min ns", "median ns", "vs vDSO MONOTONIC", "vs vDSO same clock"});
  for (const hot_row& h : r.hot) {
    t.row()
        .left(h.who->group)
        .left(h.who->name())
        .right(fixed(h.min_ns, 2))
        .right(fixed(h.median_ns, 2))
        .right(ratio_text(h.min_ns / base))
        .right(ratio_text(h.min_ns / vdso_min_ns(r.hot, h.who->clock)));
  }
  return tool::strformat(
             "\nhot cache: fastest of %d trials of >= %.0f ms, contenders interleaved; "
             "ratios of min ns\n",
             r.plan.trials, r.plan.trial_ms) +
         t.str();
}

// min_ns of the hot row called `name`, or NaN.
double min_ns_of(const std::vector<hot_row>& rows, const std::string& name) {
  for (const hot_row& r : rows) {
    if (r.who->name() == name) {
      return r.min_ns;
    }
  }
  return std::nan("");
}

// What the timespec form costs over the _ns form, at each step of the
// floor and at the entry points: the form's own floor (no seqlock, no
// checks) beside vclock's.
std::string timespec_text(const results& r) {
  tool::text_table t({"timespec form", "vs its _ns form"});
  for (const hot_row& h : r.hot) {
    const std::string name = h.who->name();
    std::string ns_name;
    if (h.who->function == "vclock_gettime") {
      ns_name = "vclock_gettime_ns(" + h.who->clock + ")";
    } else if (h.who->function == "vclock_gettime_relaxed") {
      ns_name = "vclock_gettime_ns_relaxed(" + h.who->clock + ")";
    } else if (const std::string suffix = ", timespec"; name.ends_with(suffix)) {
      ns_name = name.substr(0, name.size() - suffix.size());
    } else {
      continue;
    }
    const double ns = min_ns_of(r.hot, ns_name);
    if (std::isfinite(ns)) {
      t.row().left(name).right(tool::strformat("%.3fx", h.min_ns / ns));
    }
  }
  return "\ntimespec forms against their _ns forms, min ns of this run (the \"called\" floor\n"
         "rows have no seqlock and no checks: the form's own cost)\n" +
         t.str();
}

std::string cold_text(const results& r) {
  tool::text_table t({"call", "median ticks", "p90 ticks", "median vs vDSO"});
  for (const tick_row& c : r.cold) {
    const double base = vdso_median_ticks(r.cold, c.who->clock);
    t.row()
        .left(c.who->name())
        .right(std::to_string(percentile(c.ticks, 0.5)))
        .right(std::to_string(percentile(c.ticks, 0.9)))
        .right(ratio_text(percentile(c.ticks, 0.5) / base));
  }
  std::string flushed;
  for (const std::string& p : r.flush.parts()) {
    flushed += (flushed.empty() ? "" : ", ") + p;
  }
  return tool::strformat(
             "\ncold cache: %zu single calls each, after CLFLUSH of %zu lines before "
             "every call:\n  %s\n",
             r.cold.empty() ? 0 : r.cold.front().ticks.size(), r.flush.lines(), flushed.c_str()) +
         t.str();
}

std::string tails_text(const results& r) {
  tool::text_table t({"call", "p50 ticks", "p99 ticks", "p99.9 ticks", "max ticks"});
  for (const tick_row& c : r.tails) {
    t.row()
        .left(c.who->name())
        .right(std::to_string(percentile(c.ticks, 0.5)))
        .right(std::to_string(percentile(c.ticks, 0.99)))
        .right(std::to_string(percentile(c.ticks, 0.999)))
        .right(std::to_string(c.ticks.empty() ? 0 : c.ticks.back()));
  }
  return tool::strformat(
             "\ntails: %zu single calls each, counter read around each, timekeeper "
             "running\n",
             r.tails.empty() ? 0 : r.tails.front().ticks.size()) +
         t.str();
}

std::string threads_text(const results& r) {
  tool::text_table t({"threads", "call", "ns per call (mean)", "slowest thread", "vs 1 thread"});
  for (const thread_row& row : r.threads) {
    t.row()
        .right(std::to_string(row.threads))
        .left(row.who->name())
        .right(fixed(row.mean_ns, 2))
        .right(fixed(row.worst_ns, 2))
        .right(ratio_text(row.mean_ns / one_thread_ns(r.threads, row.who)));
  }
  return tool::strformat(
             "\nthreads: all calling at once, each pinned to its own CPU (modulo %zu); "
             "best of %d trials of >= %.0f ms per thread\n",
             r.m.cpus.size(), r.plan.thread_trials, r.plan.thread_trial_ms) +
         t.str();
}

void json_machine(tool::json_writer& j, const results& r) {
  const status_snapshot& s = r.m.status;
  j.key("machine")
      .begin_object()
      .field("cpu_model", r.m.cpu_model)
      .field("kernel", r.m.kernel_release)
      .field("cpus", r.m.cpus.size())
      .field("pinned_cpu", r.m.pinned_cpu)
      .field("load_average", r.m.load_average)
      .field("counter", s.counter)
      .field("counter_hz", s.counter_hz)
      .field("invariant_counter", s.invariant_counter)
      .field("ordering", s.ordering)
      .field("has_rdtscp", r.m.rdtscp)
      .field("kernel_clocksource", s.kernel_clocksource)
      .field("source", s.source)
      .field("has_vdso", s.has_vdso)
      .field("mode", s.counter_mode ? "counter" : "fallback")
      .field("reason", s.reason)
      .end_object();
}

void json_hot(tool::json_writer& j, const results& r) {
  const double base = vdso_min_ns(r.hot, "MONOTONIC");
  j.key("method")
      .begin_object()
      .field("trials", r.plan.trials)
      .field("trial_ms", r.plan.trial_ms)
      .field("interleaved", true)
      .field("timer", "CLOCK_MONOTONIC_RAW")
      .field("baseline", "__vdso_clock_gettime(MONOTONIC)")
      .end_object();
  j.key("rows").begin_array();
  for (const hot_row& h : r.hot) {
    j.begin_object()
        .field("name", h.who->name())
        .field("group", h.who->group)
        .field("function", h.who->function)
        .field("clock", h.who->clock)
        .field("min_ns", round2(h.min_ns))
        .field("median_ns", round2(h.median_ns))
        .field("ratio", round2(h.min_ns / base))
        .field("ratio_same_clock", round2(h.min_ns / vdso_min_ns(r.hot, h.who->clock)))
        .end_object();
  }
  j.end_array();
}

void json_ticks(tool::json_writer& j, const std::vector<tick_row>& rows, bool tails) {
  j.key("rows").begin_array();
  for (const tick_row& c : rows) {
    j.begin_object().field("name", c.who->name()).field("group", c.who->group);
    if (tails) {
      j.field("p50_ticks", percentile(c.ticks, 0.5))
          .field("p99_ticks", percentile(c.ticks, 0.99))
          .field("p999_ticks", percentile(c.ticks, 0.999))
          .field("max_ticks", c.ticks.empty() ? 0u : c.ticks.back());
    } else {
      const double median = percentile(c.ticks, 0.5);
      j.field("median_ticks", percentile(c.ticks, 0.5))
          .field("p90_ticks", percentile(c.ticks, 0.9))
          .field("ratio_median", round2(median / vdso_median_ticks(rows, c.who->clock)));
    }
    j.end_object();
  }
  j.end_array();
}

void json_sections(tool::json_writer& j, const results& r) {
  j.key("cold").begin_object().field("samples", r.plan.cold_samples);
  j.field("flushed_lines", r.flush.lines()).key("flushed").begin_array();
  for (const std::string& p : r.flush.parts()) {
    j.value(p);
  }
  j.end_array();
  json_ticks(j, r.cold, false);
  j.end_object();
  j.key("tails").begin_object().field("calls", r.plan.tail_calls);
  json_ticks(j, r.tails, true);
  j.end_object();
  j.key("threads").begin_object().field("trials", r.plan.thread_trials);
  j.key("rows").begin_array();
  for (const thread_row& row : r.threads) {
    j.begin_object()
        .field("threads", row.threads)
        .field("name", row.who->name())
        .field("mean_ns", round2(row.mean_ns))
        .field("worst_ns", round2(row.worst_ns))
        .field("ratio", round2(row.mean_ns / one_thread_ns(r.threads, row.who)))
        .end_object();
  }
  j.end_array().end_object();
}

}  // namespace

void print_results(const results& r) {
  if (r.options.json) {
    tool::json_writer j;
    j.begin_object()
        .field("command", "bench")
        .field("quick", r.options.quick)
        .field("floor", r.options.floor_only);
    json_machine(j, r);
    json_hot(j, r);
    if (!r.options.floor_only) {
      json_sections(j, r);
    }
    j.end_object();
    std::fputs(j.str().c_str(), stdout);
    return;
  }
  const std::string text = r.options.floor_only
                               ? header_text(r) + hot_text(r)
                               : header_text(r) + hot_text(r) + timespec_text(r) + cold_text(r) +
                                     tails_text(r) + threads_text(r);
  std::fputs(text.c_str(), stdout);
}

}  // namespace vclock::cli
