// `vclock stamps export|convert`: the page's history to a stamp file, and
// a stream of stamps converted with one (docs/stamps.md, "Offline").
#include "cli/stamps/stamps_command.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "lib/history.h"
#include "lib/runtime.h"
#include "lib/stamp_convert.h"
#include "lib/stamp_file.h"
#include "lib/stamp_span.h"
#include "tool/args.h"
#include "vclock/vclock.h"

namespace vclock::cli {
namespace {

constexpr int exit_failed = 1;

struct clock_name {
  const char* option;
  clockid_t id;
};
constexpr clock_name clock_names[] = {
    {"monotonic", CLOCK_MONOTONIC},
    {"realtime", CLOCK_REALTIME},
    {"monotonic_raw", CLOCK_MONOTONIC_RAW},
    {"boottime", CLOCK_BOOTTIME},
    {"tai", CLOCK_TAI},
};

void print_help(const tool::option_parser& parser) {
  std::printf(
      "Usage: vclock stamps export FILE [--seconds N]\n"
      "       vclock stamps convert FILE [--clock NAME]\n\n"
      "Stamps (vclock_stamp(): the counter now, the time later) converted after the\n"
      "process that took them is gone, here or on another machine.\n"
      "  export   writes vclockd's page's history of lines (the last second or more) to\n"
      "           FILE, a stamp file; a program exports its own page's with\n"
      "           vclock_stamps_export(); with --seconds N, one more record every 0.5 s\n"
      "           for N seconds (vclock_stamps_export_append), so FILE covers them all\n"
      "  convert  reads stamps from stdin, one a line as 'COUNTER EPOCH' (decimal), and\n"
      "           prints for each 'NS exact' (the time vclock_stamp_to_ns gave while the\n"
      "           history held it, bit for bit), 'NS estimate', or '- stale' (another boot\n"
      "           or counter epoch) or '- nodata' (no line for it)\n\n"
      "exit status: 0 every stamp converted, 1 a stamp refused or the file unusable,\n"
      "2 bad usage or a line that is not a stamp\n\n%s",
      parser.options_help().c_str());
}

std::string file_error(const std::string& path, int err) {
  if (err == -EBADMSG) return path + ": not a whole, intact stamp file";
  if (err == -EPROTONOSUPPORT) return path + ": a stamp file of another format version";
  if (err == -EFBIG) return path + ": more records than a stamp file may hold (16384)";
  return path + ": " + std::strerror(-err);
}

// Waits out a page that has just begun counting: its first line comes
// within a tick.
int export_once(const std::string& path, int (*how)(const char*)) {
  int r = how(path.c_str());
  for (int i = 0; i < 100 && r == -ENODATA; ++i) {
    const timespec ms10{0, 10'000'000};
    nanosleep(&ms10, nullptr);
    r = how(path.c_str());
  }
  return r;
}

std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int export_file(const std::string& path, std::int64_t seconds) {
  // Another process's stamps convert with vclockd's page only: a page of
  // this process's own (no vclockd) has lines no other process read.
  if (detail::current_source() != detail::page_source::shared) {
    std::fprintf(stderr,
                 "vclock stamps export: no vclockd page (%s): this process's own page would not "
                 "convert other processes' stamps\n",
                 detail::page_path());
    return exit_failed;
  }
  int r = export_once(path, vclock_stamps_export);
  // A record each 0.5 s: the history holds 1 s or more, so each stamp's
  // line is in the first record after it, with room for a late wakeup.
  const std::int64_t until = monotonic_ns() + seconds * 1'000'000'000;
  while (r == 0 && monotonic_ns() < until) {
    const timespec half{0, 500'000'000};
    nanosleep(&half, nullptr);
    r = export_once(path, vclock_stamps_export_append);
  }
  if (r != 0) {
    const std::string why = r == -EAGAIN    ? "a virtual-time namespace is joined (VCLOCK_NS)"
                            : r == -ENODATA ? "the page has no history yet"
                                            : file_error(path, r);
    std::fprintf(stderr, "vclock stamps export: %s\n", why.c_str());
    return exit_failed;
  }
  return tool::exit_ok;
}

// "COUNTER EPOCH", decimal, spaces or tabs around.
bool parse_stamp(std::string_view line, vclock_stamp_t& out) {
  const auto skip = [&line] {
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  };
  std::uint64_t v[2] = {0, 0};
  for (std::uint64_t& x : v) {
    skip();
    const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), x);
    if (ec != std::errc{} || end == line.data()) return false;
    line.remove_prefix(static_cast<std::size_t>(end - line.data()));
    if (!line.empty() && line.front() != ' ' && line.front() != '\t') return false;
  }
  skip();
  if (!line.empty()) return false;
  out.counter = v[0];
  out.epoch = v[1];
  return true;
}

int convert(const std::string& path, clockid_t clock) {
  detail::clock_kind k{};
  detail::stamp_clock_kind(clock, k);
  detail::stamp_file_map file;
  const int r = file.open(path.c_str());
  if (r != 0) {
    std::fprintf(stderr, "vclock stamps convert: %s\n", file_error(path, r).c_str());
    return exit_failed;
  }
  detail::stamp_span_converter converter(file.records());
  char* line = nullptr;
  std::size_t cap = 0;
  ssize_t len = 0;
  std::uint64_t number = 0;
  bool refused = false;
  while ((len = ::getline(&line, &cap, stdin)) >= 0) {
    ++number;
    std::string_view text(line, static_cast<std::size_t>(len));
    if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    vclock_stamp_t stamp{};
    if (!parse_stamp(text, stamp)) {
      std::free(line);
      std::fflush(stdout);
      return tool::usage_error(
          "stamps convert",
          "line " + std::to_string(number) + ": not a stamp (expected 'COUNTER EPOCH', decimal)");
    }
    std::int64_t ns = 0;
    const int status = converter.convert(k, &stamp, 1, &ns);
    if (status < 0) {
      refused = true;
      std::fputs(status == -ESTALE ? "- stale\n" : "- nodata\n", stdout);
    } else {
      std::printf("%lld %s\n", static_cast<long long>(ns), status == 0 ? "exact" : "estimate");
    }
  }
  std::free(line);
  return refused ? exit_failed : tool::exit_ok;
}

}  // namespace

int run_stamps(std::span<char* const> args) {
  std::string clock = "monotonic";
  std::int64_t seconds = 0;
  tool::option_parser parser("stamps");
  std::vector<std::string> names;
  for (const clock_name& c : clock_names) names.emplace_back(c.option);
  parser.add_choice("--clock", names, &clock, "convert: the clock (default monotonic)");
  parser.add_int("--seconds", "N", 0, 86400, &seconds,
                 "export: append a record every 0.5 s for N seconds (default 0: one record)");
  if (args.empty()) return tool::usage_error("stamps", "missing subcommand (export, convert)");
  const std::string_view sub = args[0];
  if (sub == "--help" || sub == "-h" || sub == "help") {
    print_help(parser);
    return tool::exit_ok;
  }
  if (sub != "export" && sub != "convert") {
    return tool::usage_error("stamps", "unknown subcommand '" + std::string(sub) + "'");
  }
  const std::string command = "stamps " + std::string(sub);
  // FILE is the one word that is not an option or --clock's value; the
  // parser takes the rest.
  std::string file;
  std::vector<char*> options;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string_view a = args[i];
    if (a.starts_with("-")) {
      options.push_back(args[i]);
      if ((a == "--clock" || a == "--seconds") && i + 1 < args.size()) {
        options.push_back(args[++i]);
      }
      continue;
    }
    if (!file.empty())
      return tool::usage_error(command, "unexpected argument '" + std::string(a) + "'");
    file = a;
  }
  if (!parser.parse(options)) return tool::usage_error(command, parser.error());
  if (parser.help_requested()) {
    print_help(parser);
    return tool::exit_ok;
  }
  if (file.empty()) return tool::usage_error(command, "missing FILE");
  if (sub == "export") {
    if (clock != "monotonic") return tool::usage_error(command, "--clock is convert's option");
    return export_file(file, seconds);
  }
  if (seconds != 0) return tool::usage_error(command, "--seconds is export's option");
  clockid_t id = CLOCK_MONOTONIC;
  for (const clock_name& c : clock_names) {
    if (clock == c.option) id = c.id;
  }
  return convert(file, id);
}

}  // namespace vclock::cli
