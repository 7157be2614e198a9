// The vclock CLI: option parsing and the JSON writer as units, then the
// built binary (VCLOCK_CLI_PATH) end to end: bad usage exits 2 with one
// line on stderr, every --json output is valid JSON, and a 2-second warp
// run finds no warp on an ordered clock. No timing assertions.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/run/run.h"
#include "gtest/gtest.h"
#include "support/emulation.h"
#include "tool/args.h"
#include "tool/json.h"

namespace {

// ---- A small JSON reader, strict enough to reject what python's json would --------------

struct json_value {
  enum class kind { null, boolean, number, string, array, object } type = kind::null;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<json_value> items;  // an array's elements, or an object's values
  std::vector<std::string> keys;  // an object's keys, parallel to items

  const json_value* find(const std::string& key) const {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == key) return &items[i];
    }
    return nullptr;
  }
};

class json_reader {
 public:
  explicit json_reader(std::string_view text) : s_(text) {}

  // The whole text must be one value (with surrounding whitespace).
  bool parse(json_value& out) {
    if (!value(out, 0)) return false;
    skip_space();
    return pos_ == s_.size();
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  bool value(json_value& out, int depth) {
    if (depth > 64) return false;
    skip_space();
    if (pos_ >= s_.size()) return false;
    const char c = s_[pos_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      out.type = json_value::kind::string;
      return string(out.text);
    }
    if (literal("null")) return true;
    if (literal("true") || literal("false")) {
      out.type = json_value::kind::boolean;
      out.boolean = s_[pos_ - 1] == 'e' && s_[pos_ - 2] == 'u';
      return true;
    }
    out.type = json_value::kind::number;
    return number(out.number);
  }

  bool object(json_value& out, int depth) {
    out.type = json_value::kind::object;
    ++pos_;
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
    for (;;) {
      skip_space();
      std::string key;
      if (pos_ >= s_.size() || s_[pos_] != '"' || !string(key)) return false;
      skip_space();
      if (pos_ >= s_.size() || s_[pos_++] != ':') return false;
      json_value v;
      if (!value(v, depth + 1)) return false;
      out.keys.push_back(std::move(key));
      out.items.push_back(std::move(v));
      skip_space();
      if (pos_ >= s_.size()) return false;
      if (s_[pos_] == '}') return ++pos_, true;
      if (s_[pos_++] != ',') return false;
    }
  }

  bool array(json_value& out, int depth) {
    out.type = json_value::kind::array;
    ++pos_;
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
    for (;;) {
      json_value v;
      if (!value(v, depth + 1)) return false;
      out.items.push_back(std::move(v));
      skip_space();
      if (pos_ >= s_.size()) return false;
      if (s_[pos_] == ']') return ++pos_, true;
      if (s_[pos_++] != ',') return false;
    }
  }

  // Escapes are checked, not decoded beyond what the tests compare.
  bool string(std::string& out) {
    ++pos_;
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) return false;
      const char e = s_[pos_++];
      if (e == 'u') {
        if (pos_ + 4 > s_.size()) return false;
        for (int i = 0; i < 4; ++i) {
          if (!std::isxdigit(static_cast<unsigned char>(s_[pos_ + static_cast<std::size_t>(i)])))
            return false;
        }
        out += '?';
        pos_ += 4;
      } else if (std::string_view("\"\\/bfnrt").find(e) != std::string_view::npos) {
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        return false;
      }
    }
    return false;
  }

  // JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool number(double& out) {
    const std::size_t start = pos_;
    const auto digits = [this] {
      const std::size_t from = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ > from;
    };
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else if (!digits()) {
      return false;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!digits()) return false;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digits()) return false;
    }
    out = std::strtod(std::string(s_.substr(start, pos_ - start)).c_str(), nullptr);
    return true;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

json_value parse_or_fail(const std::string& text) {
  json_value v;
  EXPECT_TRUE(json_reader(text).parse(v)) << "not valid JSON:\n" << text;
  return v;
}

// ---- Running the binary -------------------------------------------------------------------

struct cli_result {
  int status = -1;
  std::string out;
  std::string err;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool have_cli() {
#if defined(VCLOCK_CLI_PATH)
  return true;
#else
  return false;
#endif
}

// Runs the CLI with `args`, stdout and stderr captured in temporary files.
cli_result run_cli(const std::vector<std::string>& args) {
  cli_result r;
#if defined(VCLOCK_CLI_PATH)
  char dir_template[] = "/tmp/vclock_cli_test.XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (dir == nullptr) return r;
  const std::string out_path = std::string(dir) + "/out";
  const std::string err_path = std::string(dir) + "/err";
  std::vector<std::string> argv_storage = {VCLOCK_CLI_PATH};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(argv_storage.size() + 1);
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(127);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int wstatus = 0;
  if (pid > 0 && waitpid(pid, &wstatus, 0) == pid && WIFEXITED(wstatus)) {
    r.status = WEXITSTATUS(wstatus);
  }
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  rmdir(dir);
#else
  (void)args;
#endif
  return r;
}

std::size_t count_lines(const std::string& s) {
  std::size_t n = 0;
  for (const char c : s) n += c == '\n' ? 1 : 0;
  return n;
}

// python3's json module, when there is one, as a second opinion.
void expect_python_accepts(const std::string& text) {
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) return;
  char path[] = "/tmp/vclock_cli_json.XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  const std::string cmd = std::string("python3 -m json.tool ") + path + " >/dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "python3 rejects:\n" << text;
  unlink(path);
}

using vclock::tool::json_writer;
using vclock::tool::option_parser;

// ---- Units --------------------------------------------------------------------------------

TEST(CliJson, WritesNestedDocumentsWithCommasInPlace) {
  json_writer j;
  j.begin_object()
      .field("a", 1)
      .key("list")
      .begin_array()
      .value(-2)
      .value(std::uint64_t{18446744073709551615u})
      .value(0.5)
      .end_array()
      .key("empty")
      .begin_object()
      .end_object()
      .key("none")
      .begin_array()
      .end_array()
      .field("t", true)
      .end_object();
  EXPECT_EQ(j.str(),
            "{\n  \"a\": 1,\n  \"list\": [\n    -2,\n    18446744073709551615,\n    0.5\n  ],\n"
            "  \"empty\": {},\n  \"none\": [],\n  \"t\": true\n}\n");
  const json_value v = parse_or_fail(j.str());
  EXPECT_EQ(v.find("list")->items.size(), 3u);
}

TEST(CliJson, EscapesStringsAndKeys) {
  const std::string nasty = std::string("q\"b\\n\nt\tc\x01 d\x7f \xc3\xa9", 16);
  json_writer j;
  j.begin_object().field(nasty, nasty).end_object();
  const json_value v = parse_or_fail(j.str());
  ASSERT_EQ(v.keys.size(), 1u);
  EXPECT_EQ(v.keys[0], v.items[0].text);
  EXPECT_EQ(v.items[0].text.substr(0, 8), "q\"b\\n\nt\t");
  expect_python_accepts(j.str());
}

TEST(CliJson, WritesNonFiniteNumbersAsNull) {
  json_writer j;
  j.begin_array()
      .value(std::numeric_limits<double>::quiet_NaN())
      .value(std::numeric_limits<double>::infinity())
      .value(1e-300)
      .end_array();
  const json_value v = parse_or_fail(j.str());
  ASSERT_EQ(v.items.size(), 3u);
  EXPECT_EQ(v.items[0].type, json_value::kind::null);
  EXPECT_EQ(v.items[1].type, json_value::kind::null);
  EXPECT_EQ(v.items[2].number, 1e-300);
}

struct parsed {
  bool ok;
  std::string error;
  bool flag = false;
  std::int64_t n = 7;
  double s = 2;
  std::string c = "a";
};

parsed parse_args(std::vector<std::string> args) {
  parsed p{};
  option_parser parser("test");
  parser.add_flag("--flag", &p.flag, "a flag");
  parser.add_int("--n", "N", 1, 100, &p.n, "an integer");
  parser.add_real("--s", "S", 0.5, 10, &p.s, "a number");
  parser.add_choice("--c", {"a", "b"}, &p.c, "a choice");
  std::vector<char*> argv;
  argv.reserve(args.size());
  for (std::string& a : args) argv.push_back(a.data());
  p.ok = parser.parse(argv);
  p.error = parser.error();
  return p;
}

TEST(CliArgs, ParsesBothValueFormsAndKeepsDefaults) {
  const parsed p = parse_args({"--n", "42", "--s=2.5", "--c", "b", "--flag"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_TRUE(p.flag);
  EXPECT_EQ(p.n, 42);
  EXPECT_EQ(p.s, 2.5);
  EXPECT_EQ(p.c, "b");
  const parsed d = parse_args({});
  ASSERT_TRUE(d.ok);
  EXPECT_FALSE(d.flag);
  EXPECT_EQ(d.n, 7);
  EXPECT_EQ(d.c, "a");
}

TEST(CliArgs, RejectsBadUsageWithAReason) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--nope"}, "unknown option '--nope'"},
      {{"--n"}, "option '--n' needs a value (N)"},
      {{"--n", "x"}, "invalid value 'x' for '--n' (expected an integer from 1 to 100)"},
      {{"--n", "0"}, "invalid value '0' for '--n' (expected an integer from 1 to 100)"},
      {{"--n", "5x"}, "invalid value '5x' for '--n' (expected an integer from 1 to 100)"},
      {{"--s", "nan"}, "invalid value 'nan' for '--s' (expected a number from 0.5 to 10)"},
      {{"--c", "z"}, "invalid value 'z' for '--c' (expected one of a|b)"},
      {{"--flag=1"}, "option '--flag' takes no value"},
      {{"extra"}, "unexpected argument 'extra'"},
  };
  for (const auto& [args, error] : cases) {
    const parsed p = parse_args(args);
    EXPECT_FALSE(p.ok) << args[0];
    EXPECT_EQ(p.error, error);
  }
}

// ---- The binary ---------------------------------------------------------------------------

TEST(Cli, BadUsageExitsTwoWithOneLineOnStderr) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  if (!have_cli()) GTEST_SKIP() << "VCLOCK_CLI_PATH not defined";
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"frobnicate"},
      {"bench", "--foo"},
      {"bench", "--threads"},
      {"bench", "--threads", "zero"},
      {"bench", "--threads", "0"},
      {"bench", "--json=yes"},
      {"bench", "--gettime-perf=1"},
      {"bench", "--gettime-perf", "--cold"},
      {"bench", "--gettime-perf", "--threads", "2"},
      {"bench", "--floor", "--cold"},
      {"bench", "--floor", "--threads", "2"},
      {"bench", "--floor", "--gettime-perf"},
      {"warp", "--seconds", "-1"},
      {"warp", "--clock", "sundial"},
      {"warp", "stray"},
      {"status", "--verbose"},
      {"status", "--pid", "me"},
      {"help", "nope"},
      {"run"},
      {"run", "--"},
      {"run", "--shim"},
      {"run", "--offset", "1s", "--", "true"},  // time options: the virtual-time issue
  };
  for (const auto& args : cases) {
    const cli_result r = run_cli(args);
    const std::string what = args.empty() ? "(no arguments)" : args[0] + " ...";
    EXPECT_EQ(r.status, 2) << what;
    EXPECT_EQ(count_lines(r.err), 1u) << what << ": " << r.err;
    EXPECT_EQ(r.err.rfind("vclock: ", 0), 0u) << what << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << what;
  }
}

TEST(Cli, HelpExitsZero) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  if (!have_cli()) GTEST_SKIP() << "VCLOCK_CLI_PATH not defined";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--help"}, {"help"}, {"help", "warp"}, {"bench", "--help"}, {"status", "-h"}}) {
    const cli_result r = run_cli(args);
    EXPECT_EQ(r.status, 0) << args[0];
    EXPECT_NE(r.out.find("Usage: vclock"), std::string::npos) << args[0];
    EXPECT_TRUE(r.err.empty()) << r.err;
  }
}

TEST(Cli, StatusJsonIsOneValidObject) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  if (!have_cli()) GTEST_SKIP() << "VCLOCK_CLI_PATH not defined";
  const cli_result r = run_cli({"status", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json_value v = parse_or_fail(r.out);
  ASSERT_EQ(v.type, json_value::kind::object);
  for (const char* key :
       {"mode", "counter_hz", "ordering", "update_age_ns", "offset_monotonic_ns"}) {
    EXPECT_NE(v.find(key), nullptr) << key;
  }
  expect_python_accepts(r.out);
}

TEST(Cli, BenchQuickJsonHasEveryRowAndSection) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  if (!have_cli()) GTEST_SKIP() << "VCLOCK_CLI_PATH not defined";
  const cli_result r = run_cli({"bench", "--quick", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json_value v = parse_or_fail(r.out);
  const json_value* rows = v.find("rows");
  ASSERT_NE(rows, nullptr);
  ASSERT_FALSE(rows->items.empty());
  for (const json_value& row : rows->items) {
    ASSERT_NE(row.find("name"), nullptr);
    const std::string& name = row.find("name")->text;
    ASSERT_NE(row.find("min_ns"), nullptr) << name;
    ASSERT_NE(row.find("median_ns"), nullptr) << name;
    EXPECT_EQ(row.find("min_ns")->type, json_value::kind::number) << name;
  }
  for (const char* section : {"machine", "cold", "tails", "threads"}) {
    EXPECT_NE(v.find(section), nullptr) << section;
  }
  expect_python_accepts(r.out);
}

// --floor: the rows the floor is compared with and the floor itself, and nothing else (no
// other clock, no single-call section), in its own many short trials.
TEST(Cli, BenchFloorHasTheFloorsRowsOnly) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  if (!have_cli()) GTEST_SKIP() << "VCLOCK_CLI_PATH not defined";
  const cli_result r = run_cli({"bench", "--floor", "--quick", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json_value v = parse_or_fail(r.out);
  ASSERT_NE(v.find("floor"), nullptr);
  EXPECT_EQ(v.find("floor")->type, json_value::kind::boolean);
  const json_value* method = v.find("method");
  ASSERT_NE(method, nullptr);
  ASSERT_NE(method->find("trial_ms"), nullptr);
  EXPECT_LE(method->find("trial_ms")->number, 5);
  const json_value* rows = v.find("rows");
  ASSERT_NE(rows, nullptr);
  std::vector<std::string> names;
  for (const json_value& row : rows->items) {
    ASSERT_NE(row.find("name"), nullptr);
    ASSERT_NE(row.find("clock"), nullptr);
    const std::string& name = row.find("name")->text;
    const std::string& clock = row.find("clock")->text;
    EXPECT_TRUE(clock.empty() || clock == "MONOTONIC") << name;
    ASSERT_NE(row.find("min_ns"), nullptr) << name;
    EXPECT_GT(row.find("min_ns")->number, 0) << name;
    names.push_back(name);
  }
  const auto has = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  EXPECT_TRUE(has("vclock_gettime_ns(MONOTONIC)"));
  EXPECT_TRUE(has("vclock::steady_clock::now"));
  EXPECT_TRUE(has("call+ret"));
  EXPECT_FALSE(has("vclock_gettime(MONOTONIC)"));
  EXPECT_FALSE(has("vclock_time"));
  for (const char* section : {"cold", "tails", "threads"}) {
    EXPECT_EQ(v.find(section), nullptr) << section;
  }
  expect_python_accepts(r.out);
}

// The kernel selftest's loop: vclock's two forms counted for each of its five clocks, in
// rows that carry what every `bench --json` row carries (API.md). The counts themselves
// are timing, which a test does not judge; that they are there and positive can fail.
TEST(Cli, BenchGettimePerfCountsEveryClock) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  if (!have_cli()) GTEST_SKIP() << "VCLOCK_CLI_PATH not defined";
  const cli_result r = run_cli({"bench", "--gettime-perf", "--quick", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json_value v = parse_or_fail(r.out);
  ASSERT_NE(v.find("gettime_perf"), nullptr);
  const json_value* rows = v.find("rows");
  ASSERT_NE(rows, nullptr);
  std::vector<std::string> names;
  for (const json_value& row : rows->items) {
    ASSERT_NE(row.find("name"), nullptr);
    const std::string& name = row.find("name")->text;
    for (const char* key : {"calls", "min_ns", "median_ns"}) {
      ASSERT_NE(row.find(key), nullptr) << name << " " << key;
      EXPECT_GT(row.find(key)->number, 0) << name << " " << key;
    }
    names.push_back(name);
  }
  for (const char* clock :
       {"MONOTONIC", "MONOTONIC_COARSE", "MONOTONIC_RAW", "BOOTTIME", "REALTIME"}) {
    for (const std::string form : {"vclock_gettime(", "vclock_gettime_ns("}) {
      const std::string name = form + clock + ")";
      EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    }
  }
  expect_python_accepts(r.out);
}

TEST(Cli, WarpFindsNoWarpOnOrderedClocks) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  if (!have_cli()) GTEST_SKIP() << "VCLOCK_CLI_PATH not defined";
  // A warp is one CPU's reading behind another's: with one CPU there is nothing to find,
  // and a pass would prove nothing.
  cpu_set_t usable;
  CPU_ZERO(&usable);
  ASSERT_EQ(sched_getaffinity(0, sizeof(usable), &usable), 0);
  if (CPU_COUNT(&usable) < 2) GTEST_SKIP() << "one usable CPU: no reading crosses CPUs";
  const cli_result r = run_cli({"warp", "--seconds", "2", "--json"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  const json_value v = parse_or_fail(r.out);
  ASSERT_NE(v.find("threads"), nullptr);
  ASSERT_NE(v.find("cpus"), nullptr);
  EXPECT_GE(v.find("threads")->number, 2);
  EXPECT_GE(v.find("cpus")->items.size(), 2u) << r.out;
  const json_value* results = v.find("results");
  ASSERT_NE(results, nullptr);
  int ordered = 0;
  for (const json_value& res : results->items) {
    for (const char* key :
         {"clock", "samples", "warps", "max_warp_ns", "handoffs", "cross_cpu_handoffs"}) {
      ASSERT_NE(res.find(key), nullptr) << key;
    }
    if (res.find("ordered")->boolean) {
      ++ordered;
      EXPECT_EQ(res.find("warps")->number, 0) << res.find("clock")->text;
      EXPECT_GT(res.find("samples")->number, 0) << res.find("clock")->text;
      // Readings compared across CPUs, which is what a warp needs.
      EXPECT_GT(res.find("cross_cpu_handoffs")->number, 0) << res.find("clock")->text;
    }
  }
  EXPECT_GT(ordered, 0);
  expect_python_accepts(r.out);
}

}  // namespace

// ---- vclock run and status --pid ------------------------------------------------------------

TEST(CliRun, PreloadPutsTheShimFirstAfterSanitizersWithoutDuplicates) {
  using vclock::cli::preload_with_shim;
  EXPECT_EQ(preload_with_shim("/s.so", nullptr), "/s.so");
  EXPECT_EQ(preload_with_shim("/s.so", ""), "/s.so");
  EXPECT_EQ(preload_with_shim("/s.so", "/a.so /b.so"), "/s.so:/a.so:/b.so");
  EXPECT_EQ(preload_with_shim("/s.so", "/a.so:/s.so::/b.so"), "/s.so:/a.so:/b.so");
  EXPECT_EQ(preload_with_shim("/s.so", "/j/libjemalloc.so.2 /l/libasan.so.8"),
            "/l/libasan.so.8:/s.so:/j/libjemalloc.so.2");
}

#if defined(VCLOCK_SHIM_PATH)
constexpr bool have_shim = true;
#else
constexpr bool have_shim = false;
#  define VCLOCK_SHIM_PATH ""
#endif

TEST(CliRun, ExitStatusIsTheCommandsOrAShellsForAMissingOne) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  if (!have_cli() || !have_shim) GTEST_SKIP() << "no CLI or no shim in this build";
  const std::string shim = VCLOCK_SHIM_PATH;
  cli_result r = run_cli({"run", "--shim", shim, "--", "sh", "-c", "exit 7"});
  EXPECT_EQ(r.status, 7) << r.err;
  r = run_cli({"run", "--shim", shim, "sh", "-c", "echo \"$LD_PRELOAD\""});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind(shim, 0), 0u) << "LD_PRELOAD: " << r.out;
  r = run_cli({"run", "--shim", shim, "--", "/no/such/command"});
  EXPECT_EQ(r.status, 127);
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  r = run_cli({"run", "--shim", shim, "--", "/etc/passwd"});
  EXPECT_EQ(r.status, 126);
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  r = run_cli({"run", "--shim", "/no/such/shim.so", "--", "true"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  r = run_cli({"run", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("Usage: vclock run"), std::string::npos);
}

// A command under `vclock run` (no vclockd here: a private one) maps that daemon's page
// through the shim, and `vclock status --pid` says so from outside.
TEST(CliStatus, PidShowsTheShimAndThePageOfARunningCommand) {
  VCLOCK_SKIP_UNDER_EMULATION(VCLOCK_EMULATION_NO_CHILD_PROCESSES);
  if (!have_cli() || !have_shim) GTEST_SKIP() << "no CLI or no shim in this build";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 1);
    dup2(null, 2);
    execl(VCLOCK_CLI_PATH, VCLOCK_CLI_PATH, "run", "--shim", VCLOCK_SHIM_PATH, "--", "sleep", "30",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // `vclock run` becomes sleep (same pid) once its private daemon is ready.
  std::string exe;
  for (int i = 0; i < 500 && exe.find("sleep") == std::string::npos; ++i) {
    char buf[4096];
    const ssize_t n = readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), buf, sizeof(buf));
    exe = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
    usleep(10'000);
  }
  const cli_result r = run_cli({"status", "--pid", std::to_string(pid), "--json"});
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  ASSERT_NE(exe.find("sleep"), std::string::npos) << "vclock run never became sleep";
  ASSERT_EQ(r.status, 0) << r.err;
  const json_value v = parse_or_fail(r.out);
  const json_value* shim = v.find("shim");
  const json_value* page = v.find("page");
  ASSERT_NE(shim, nullptr);
  ASSERT_NE(page, nullptr);
  EXPECT_EQ(shim->text, VCLOCK_SHIM_PATH);
  EXPECT_NE(page->text.find("/vclock-run."), std::string::npos) << page->text;
  const cli_result gone = run_cli({"status", "--pid", "4194304"});
  EXPECT_EQ(gone.status, 1);
  EXPECT_EQ(count_lines(gone.err), 1u) << gone.err;
}
