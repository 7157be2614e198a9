// `vclock status [--json]`: one snapshot of the timekeeper (status.h in
// src/lib), as aligned "name  value" lines or one JSON object.
#include "lib/status.h"

#include <cstdio>
#include <string>

#include "cli/status/bound.h"
#include "cli/status/page_presence.h"
#include "cli/status/process_status.h"
#include "cli/status/status_command.h"
#include "tool/args.h"
#include "tool/json.h"

namespace vclock::cli {
namespace {

// Long enough for calibration (a few timekeeper ticks) on a loaded machine.
constexpr int calibration_wait_ms = 2000;

std::string signed_ns(std::int64_t ns) {
  return tool::strformat("%+lld ns", static_cast<long long>(ns));
}

void print_text(const status_snapshot& s) {
  tool::text_table t({"field", "value"});
  const auto add = [&t](const char* name, std::string value) {
    t.row().left(name).left(std::move(value));
  };
  add("source", s.source);
  if (!s.page.empty()) {
    const std::string absent = page_absence(s.page);
    add("page", absent.empty() ? s.page + " (ABI " + s.page_abi + ")" : "none (" + absent + ")");
  }
  if (!s.page_refused.empty()) add("page_refused", s.page_refused);
  if (s.daemon_pid != 0) add("daemon_pid", std::to_string(s.daemon_pid));
  if (!s.ns.empty()) add("ns", s.ns + " (virtual time: offsets below are virtual - kernel)");
  if (!s.ns_refused.empty()) add("ns_refused", s.ns_refused);
  if (s.timens_monotonic_ns != 0 || s.timens_boottime_ns != 0) {
    add("kernel_timens", "MONOTONIC " + signed_ns(s.timens_monotonic_ns) + ", BOOTTIME " +
                             signed_ns(s.timens_boottime_ns) + " (added to the page's time)");
  }
  add("mode", s.counter_mode ? "counter" : "fallback: the kernel answers (" + s.reason + ")");
  add("counter", s.counter + (s.invariant_counter ? " (invariant)" : " (not invariant)"));
  if (s.emulated) {
    add("emulated", "yes: qemu-user runs this program; " + s.counter +
                        " and every figure here are the emulator's, not the hardware's");
  }
  add("counter_hz", tool::strformat("%.0f (%.3f MHz)", s.counter_hz, s.counter_hz / 1e6));
  add("ordering", s.ordering);
  add("kernel_clocksource", s.kernel_clocksource);
  add("vdso", s.has_vdso ? "yes" : "no (every kernel call is a system call)");
  add("trust", s.trust_note);
  add("tick", tool::strformat("%.3f ms", static_cast<double>(s.tick_ns) / 1e6));
  add("updates", std::to_string(s.updates));
  add("update_age", s.update_age_ns < 0
                        ? "never updated"
                        : tool::strformat("%.3f ms", static_cast<double>(s.update_age_ns) / 1e6));
  add("error_monotonic", signed_ns(s.error_mono_ns) + " (last timekeeper sample)");
  add("error_monotonic_raw", signed_ns(s.error_raw_ns));
  add("sample_bracket", tool::strformat("%lld ns", static_cast<long long>(s.bracket_ns)));
  add("rate_vs_counter", tool::strformat("%+lld ppb", static_cast<long long>(s.freq_ppb)));
  add("sync_status", sync_status_name(s.sync_status));
  add("bound", s.bound_ns < 0 ? std::string("none (unknown)")
                              : tool::strformat("+-%lld ns (vclock bound)",
                                                static_cast<long long>(s.bound_ns)));
  add("offset_realtime", signed_ns(s.offset_realtime_ns) + " (vclock - kernel, measured now)");
  add("offset_monotonic", signed_ns(s.offset_monotonic_ns));
  add("offset_monotonic_raw", signed_ns(s.offset_raw_ns));
  add("offset_boottime", signed_ns(s.offset_boottime_ns));
  add("offset_tai", signed_ns(s.offset_tai_ns));
  std::fputs(t.str().c_str(), stdout);
}

// Key names are the status_snapshot field names, so scripts and the source
// agree.
void print_json(const status_snapshot& s) {
  const std::string absent = s.page.empty() ? "" : page_absence(s.page);
  tool::json_writer j;
  j.begin_object()
      .field("command", "status")
      .field("source", s.source)
      .field("page", s.page.empty() || !absent.empty() ? "" : s.page)
      .field("page_abi", s.page_abi);
  if (!s.page.empty() && !absent.empty()) j.field("page_absent", absent);
  if (!s.page_refused.empty()) j.field("page_refused", s.page_refused);
  if (s.daemon_pid != 0) j.field("daemon_pid", s.daemon_pid);
  if (!s.ns.empty()) j.field("ns", s.ns);
  if (!s.ns_refused.empty()) j.field("ns_refused", s.ns_refused);
  if (s.timens_monotonic_ns != 0 || s.timens_boottime_ns != 0) {
    j.field("kernel_timens_monotonic_ns", s.timens_monotonic_ns)
        .field("kernel_timens_boottime_ns", s.timens_boottime_ns);
  }
  if (s.emulated) {
    j.field("emulated", true);  // only where it is: the figures are the emulator's
  }
  j.field("mode", s.counter_mode ? "counter" : "fallback")
      .field("counter_mode", s.counter_mode)
      .field("page_stale", s.page_stale)
      .field("reason", s.reason)
      .field("counter", s.counter)
      .field("ordering", s.ordering)
      .field("kernel_clocksource", s.kernel_clocksource)
      .field("trust_note", s.trust_note)
      .field("invariant_counter", s.invariant_counter)
      .field("has_vdso", s.has_vdso)
      .field("counter_hz", s.counter_hz)
      .field("tick_ns", s.tick_ns)
      .field("update_age_ns", s.update_age_ns)
      .field("error_mono_ns", s.error_mono_ns)
      .field("error_raw_ns", s.error_raw_ns)
      .field("bracket_ns", s.bracket_ns)
      .field("freq_ppb", s.freq_ppb)
      .field("updates", s.updates)
      .field("sync_status", sync_status_name(s.sync_status))
      .field("bound_ns", s.bound_ns)
      .field("offset_realtime_ns", s.offset_realtime_ns)
      .field("offset_monotonic_ns", s.offset_monotonic_ns)
      .field("offset_raw_ns", s.offset_raw_ns)
      .field("offset_boottime_ns", s.offset_boottime_ns)
      .field("offset_tai_ns", s.offset_tai_ns)
      .end_object();
  std::fputs(j.str().c_str(), stdout);
}

}  // namespace

int run_status(std::span<char* const> args) {
  bool json = false;
  std::int64_t pid = 0;
  tool::option_parser parser("status");
  parser.add_flag("--json", &json, "print one JSON object instead of a table");
  parser.add_int("pid", "P", 1, 4'194'304, &pid,
                 "another process: has it the shim or the library, which page does it read");
  if (!parser.parse(args)) {
    return tool::usage_error("status", parser.error());
  }
  if (parser.help_requested()) {
    std::printf(
        "Usage: vclock status [--json] [--pid P]\n\n"
        "Reads vclockd's page (or, when no daemon serves, starts the timekeeper in\n"
        "this process and waits up to %d ms for calibration) and prints its state:\n"
        "source, page, mode, counter frequency, ordering instruction, age of the last\n"
        "update and the measured offset to the kernel's clocks.\n\n%s",
        calibration_wait_ms, parser.options_help().c_str());
    return tool::exit_ok;
  }
  if (pid != 0) {
    const process_clock_status p = inspect_process(static_cast<pid_t>(pid));
    if (!p.error.empty()) {
      std::fprintf(stderr, "vclock: status: %s\n", p.error.c_str());
      return tool::exit_check_failed;
    }
    print_process_status(static_cast<pid_t>(pid), p, json);
    return tool::exit_ok;
  }
  const status_snapshot s = read_status(calibration_wait_ms);
  if (json) {
    print_json(s);
  } else {
    print_text(s);
  }
  return tool::exit_ok;
}

}  // namespace vclock::cli
