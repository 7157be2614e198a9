// `vclock`: the command-line tool. Dispatches to the subcommands; each
// parses its own options (tool/args.h) and returns the exit status of API.md.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "cli/bench/bench.h"
#include "cli/measure/track.h"
#include "cli/measure/warp.h"
#include "cli/ns/ns_command.h"
#include "cli/run/run.h"
#include "cli/stamps/stamps_command.h"
#include "cli/status/bound.h"
#include "cli/status/status_command.h"
#include "tool/args.h"
#include "tool/version.h"

namespace vclock::cli {
namespace {

struct command {
  std::string_view name;
  std::string_view summary;
  int (*run)(std::span<char* const> args);
};

constexpr command commands[] = {
    {"status", "timekeeper state: mode, counter frequency, ordering, offsets", run_status},
    {"bench", "ns per call side by side: vclock, the vDSO, the system call, the counter",
     run_bench},
    {"warp", "time-warp test: do readings on different CPUs ever go backwards?", run_warp},
    {"track", "vclock against the kernel over time: error per interval", run_track},
    {"run", "run a command with its clock reads served by vclock (the LD_PRELOAD shim)", run_run},
    {"ns", "virtual-time namespaces: create, set, show, list, rm", run_ns},
    {"bound", "REALTIME's error interval now (vclock_now_bounded)", run_bound},
    {"stamps", "stamps converted later: export the page's history, convert with it", run_stamps},
};

void print_usage() {
  std::string text =
      "Usage: vclock <command> [options]\n\n"
      "clock_gettime() from the CPU counter, in user space: inspect and measure it.\n\n"
      "commands:\n";
  for (const command& c : commands) {
    text += tool::strformat("  %-8.*s%.*s\n", static_cast<int>(c.name.size()), c.name.data(),
                            static_cast<int>(c.summary.size()), c.summary.data());
  }
  text +=
      "  help    this text; 'vclock help <command>' for a command's options\n\n"
      "options:\n"
      "  --help     this text\n"
      "  --version  the version and the page ABI, one line\n\n"
      "exit status: 0 success, 1 a check failed, 2 bad usage ('vclock run': the command's)\n";
  std::fputs(text.c_str(), stdout);
}

const command* find_command(std::string_view name) {
  for (const command& c : commands) {
    if (c.name == name) {
      return &c;
    }
  }
  return nullptr;
}

// `vclock help [command]`: the command's own --help.
int run_help(std::span<char* const> args) {
  if (args.empty()) {
    print_usage();
    return tool::exit_ok;
  }
  if (args.size() > 1) {
    return tool::usage_error("help", "unexpected argument '" + std::string(args[1]) + "'");
  }
  if (std::string_view(args[0]) == "help") {
    print_usage();
    return tool::exit_ok;
  }
  const command* c = find_command(args[0]);
  if (c == nullptr) {
    return tool::usage_error("help", "unknown command '" + std::string(args[0]) + "'");
  }
  static char help_flag[] = "--help";
  char* const help_args[] = {help_flag};
  return c->run(std::span<char* const>(help_args));
}

int run(std::span<char* const> args) {
  if (args.empty()) {
    return tool::usage_error("", "missing command (try 'vclock --help')");
  }
  const std::string_view name = args[0];
  if (name == "help" || name == "--help" || name == "-h") {
    return run_help(args.subspan(1));
  }
  if (name == "--version") {
    if (args.size() > 1) {
      return tool::usage_error("", "unexpected argument '" + std::string(args[1]) + "'");
    }
    std::fputs(tool::version_line("vclock").c_str(), stdout);
    return tool::exit_ok;
  }
  const command* c = find_command(name);
  if (c == nullptr) {
    return tool::usage_error("",
                             "unknown command '" + std::string(name) + "' (try 'vclock --help')");
  }
  return c->run(args.subspan(1));
}

// `vclock run` only starts a command: it reads no clock of its own, so the
// library's in-process timekeeper (a thread, created as the library loads,
// and again in every child that fork() makes: the tracer, the private
// daemon's starters) would be pure start-up cost on the command's way.
// VCLOCK_DISABLE=1 keeps the library's constructor from starting it; this
// constructor runs before the library's (a lower priority runs first) and
// the variable is given back its value in main(), before anything reads
// it, so that the command sees the environment it was given. `vclock run`
// asks itself whether a vclockd serves (cli/run/run.cc): the library did
// not attach.
// Constant-initialised (no static constructor of its own, which would run
// after this one and undo it).
struct saved_variable {
  bool saved = false;
  char* value = nullptr;  // nullptr: it was unset
};
saved_variable disable_before_run;
constexpr const char* disable_variable = "VCLOCK_DISABLE";

[[gnu::constructor(101)]] void no_timekeeper_for_run(int argc, char** argv, char**) {
  if (argc < 2 || argv == nullptr || argv[1] == nullptr || std::strcmp(argv[1], "run") != 0) {
    return;
  }
  const char* value = std::getenv(disable_variable);
  disable_before_run.value = value != nullptr ? strdup(value) : nullptr;
  if (value != nullptr && disable_before_run.value == nullptr) return;  // out of memory: leave it
  disable_before_run.saved = setenv(disable_variable, "1", 1) == 0;
}

void restore_environment() {
  if (!disable_before_run.saved) return;
  if (disable_before_run.value == nullptr) {
    unsetenv(disable_variable);
  } else {
    setenv(disable_variable, disable_before_run.value, 1);
  }
  disable_before_run.saved = false;
}

}  // namespace
}  // namespace vclock::cli

int main(int argc, char** argv) {
  vclock::cli::restore_environment();
  const std::span<char* const> args(argv, static_cast<std::size_t>(argc));
  const int status = vclock::cli::run(args.subspan(1));
  // A full pipe (`vclock bench | head`) is not a failed check.
  std::fflush(stdout);
  return status;
}
