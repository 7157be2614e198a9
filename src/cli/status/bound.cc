// `vclock bound`: the interval, its half-width, its status and its source.
#include "cli/status/bound.h"

#include <time.h>

#include <cstdio>
#include <string>

#include "lib/runtime.h"
#include "tool/args.h"
#include "tool/json.h"
#include "vclock/detail/reader.h"
#include "vclock/detail/seqlock.h"
#include "vclock/page.h"
#include "vclock/vclock.h"

namespace vclock::cli {
namespace {

const char* source_name(std::uint32_t source) {
  switch (static_cast<bound_source_kind>(source)) {
    case bound_source_kind::kernel:
      return "kernel";
    case bound_source_kind::chrony:
      return "chrony";
    case bound_source_kind::fake:
      return "fake";
    case bound_source_kind::none:
      break;
  }
  return "none";
}

std::string utc(std::int64_t ns) {
  if (ns == INT64_MIN || ns == INT64_MAX) return ns < 0 ? "-infinity" : "+infinity";
  const time_t seconds = static_cast<time_t>(ns / detail::ns_per_s);
  tm t{};
  gmtime_r(&seconds, &t);
  char text[64];
  std::snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", t.tm_year + 1900,
                t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                static_cast<long long>(ns % detail::ns_per_s));
  return text;
}

}  // namespace

const char* sync_status_name(int status) {
  switch (status) {
    case VCLOCK_SYNC_SYNCED:
      return "synced";
    case VCLOCK_SYNC_FREE_RUNNING:
      return "free_running";
    case VCLOCK_SYNC_UNSYNCED:
      return "unsynced";
    case VCLOCK_SYNC_DISRUPTED:
      return "disrupted";
    default:
      return "unknown";
  }
}

int run_bound(std::span<char* const> args) {
  bool json = false;
  tool::option_parser parser("bound");
  parser.add_flag("json", &json, "print one JSON object");
  if (!parser.parse(args)) return tool::usage_error("bound", parser.error());
  if (parser.help_requested()) {
    std::printf(
        "Usage: vclock bound [--json]\n\n"
        "REALTIME's error interval now: the true time lies in [earliest, latest] whenever\n"
        "the synchronisation source's own claims hold (vclock's deviation from the kernel\n"
        "included). The midpoint is not the true time.\n\n%s",
        parser.options_help().c_str());
    return tool::exit_ok;
  }
  // Let an in-process timekeeper calibrate first (the kernel answers, with no
  // bound, until then).
  (void)vclock_gettime_ns(CLOCK_REALTIME);
  for (int i = 0; i < 200; ++i) {
    if (detail::load_relaxed(detail::host_page->updates) >= 4) break;
    const timespec ms{0, 10'000'000};
    nanosleep(&ms, nullptr);
  }
  vclock_bounds b{};
  vclock_now_bounded(CLOCK_REALTIME, &b);
  const bool bounded = b.earliest_ns != INT64_MIN && b.latest_ns != INT64_MAX;
  const std::int64_t half = bounded ? (b.latest_ns - b.earliest_ns) / 2 : -1;
  const page& p = *detail::host_page;
  const std::uint32_t source = detail::load_relaxed(p.bound.source);
  const std::int64_t source_error = detail::load_relaxed(p.bound.source_error_ns);
  const std::int64_t source_drift = detail::load_relaxed(p.bound.source_drift_ppb);
  if (json) {
    tool::json_writer j;
    j.begin_object()
        .field("command", "bound")
        .field("status", sync_status_name(b.status))
        .field("earliest_ns", b.earliest_ns)
        .field("latest_ns", b.latest_ns)
        .field("bound_ns", half)
        .field("source", source_name(source))
        .field("source_error_ns", source_error)
        .field("source_drift_ppb", source_drift)
        .end_object();
    std::printf("%s\n", j.str().c_str());
    return tool::exit_ok;
  }
  tool::text_table t({"field", "value"});
  const auto add = [&t](const char* name, std::string value) {
    t.row().left(name).left(std::move(value));
  };
  add("status", sync_status_name(b.status));
  add("earliest", utc(b.earliest_ns));
  add("latest", utc(b.latest_ns));
  add("bound", bounded ? tool::strformat("+-%lld ns", static_cast<long long>(half)) : "none");
  add("source", source_name(source));
  add("source_error", tool::strformat("%lld ns", static_cast<long long>(source_error)));
  add("source_drift", tool::strformat("%lld ppb", static_cast<long long>(source_drift)));
  std::fputs(t.str().c_str(), stdout);
  return tool::exit_ok;
}

}  // namespace vclock::cli
