// `vclock ns create|set|show|list|rm`: named virtual-time namespaces.
#include "cli/ns/ns_command.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "lib/timens_join.h"
#include "timens/control.h"
#include "timens/store.h"
#include "timens/time_options.h"
#include "tool/args.h"
#include "tool/json.h"
#include "vclock/detail/reader.h"

namespace vclock::cli {
namespace {

constexpr int exit_failed = 1;

void print_help() {
  std::printf(
      "Usage: vclock ns create NAME [TIME OPTIONS]\n"
      "       vclock ns set NAME [TIME OPTIONS] [--thaw] [--allow-backward]\n"
      "       vclock ns show [NAME] [--json]\n"
      "       vclock ns list [--json]\n"
      "       vclock ns rm NAME\n\n"
      "Named virtual-time namespaces: a process joins one with VCLOCK_NS=NAME or\n"
      "'vclock run --ns NAME'; 'set' reaches running processes at once. Root's live in\n"
      "ns/ beside the host page (/run/vclock/ns), kept by vclockd when it runs; a user's in\n"
      "$XDG_RUNTIME_DIR/vclock/ns.\n\n"
      "time options:\n%s",
      timens::time_options_help("ns set").c_str());
}

std::string rate_text(std::uint64_t q32) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.9g", static_cast<double>(q32) / 4294967296.0);
  return text;
}

std::string seconds_text(std::int64_t ns) {
  char text[64];
  std::snprintf(text, sizeof(text), "%+.9f s", static_cast<double>(ns) / detail::ns_per_s);
  return text;
}

int show(const std::string& path, bool json) {
  ns_header header{};
  ns_params p{};
  std::string error;
  if (!timens::read_timens_file(path, header, p, error)) {
    std::fprintf(stderr, "vclock ns show: %s\n", error.c_str());
    return exit_failed;
  }
  const timens::host_times now = timens::kernel_host_times();
  const bool frozen = (p.flags & ns_flag_frozen) != 0;
  const char* names[ns_family_count] = {"monotonic", "monotonic_raw", "boottime", "realtime"};
  if (json) {
    tool::json_writer j;
    j.begin_object()
        .field("command", "ns show")
        .field("name", std::string(header.name))
        .field("file", path)
        .field("creator_uid", static_cast<std::int64_t>(header.creator_uid))
        .field("generation", static_cast<std::int64_t>(p.generation))
        .field("frozen", frozen)
        .field("rate", static_cast<double>(p.rate_running_q32) / 4294967296.0)
        .field("offset_monotonic_ns", p.offset_monotonic_ns)
        .field("offset_boottime_ns", p.offset_boottime_ns)
        .field("offset_realtime_ns", p.offset_realtime_ns);
    j.key("now_ns").begin_object();
    for (int i = 0; i < ns_family_count; ++i) {
      j.field(names[i], timens::virtual_time(p, static_cast<ns_family>(i), now.ns[i]));
    }
    j.end_object().end_object();
    std::printf("%s\n", j.str().c_str());
    return tool::exit_ok;
  }
  tool::text_table t({"field", "value"});
  const auto add = [&t](const char* name, std::string value) {
    t.row().left(name).left(std::move(value));
  };
  add("name", header.name[0] != '\0' ? header.name : "(anonymous)");
  add("file", path);
  add("creator_uid", std::to_string(header.creator_uid));
  add("generation", std::to_string(p.generation));
  add("state", frozen ? "frozen" : "running");
  add("rate", rate_text(p.rate_running_q32));
  add("offset_monotonic", seconds_text(p.offset_monotonic_ns) + " (at the last change)");
  add("offset_boottime", seconds_text(p.offset_boottime_ns));
  add("offset_realtime", seconds_text(p.offset_realtime_ns));
  for (int i = 0; i < ns_family_count; ++i) {
    const std::int64_t v = timens::virtual_time(p, static_cast<ns_family>(i), now.ns[i]);
    add((std::string(names[i]) + "_now").c_str(),
        seconds_text(v).substr(1) + " (host " + seconds_text(now.ns[i]).substr(1) + ")");
  }
  std::fputs(t.str().c_str(), stdout);
  return tool::exit_ok;
}

int list(bool json) {
  struct entry {
    std::string name, file;
  };
  std::vector<entry> entries;
  for (const std::string& dir : timens::timens_directories()) {
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) continue;
    while (const dirent* e = readdir(d)) {
      if (!valid_timens_name(e->d_name)) continue;
      entries.push_back({e->d_name, dir + "/" + e->d_name});
    }
    closedir(d);
  }
  std::sort(entries.begin(), entries.end(),
            [](const entry& a, const entry& b) { return a.file < b.file; });
  if (json) {
    tool::json_writer j;
    j.begin_object().field("command", "ns list").key("namespaces").begin_array();
    for (const entry& e : entries) {
      j.begin_object().field("name", e.name).field("file", e.file).end_object();
    }
    j.end_array().end_object();
    std::printf("%s\n", j.str().c_str());
    return tool::exit_ok;
  }
  for (const entry& e : entries) std::printf("%s\t%s\n", e.name.c_str(), e.file.c_str());
  return tool::exit_ok;
}

timens::timens_outcome print(const timens::timens_outcome& o) {
  if (!o.message.empty()) std::fprintf(stderr, "%s\n", o.message.c_str());
  return o;
}

// create, set, rm. Root's namespaces go through the vclockd that serves
// the system's directory, when one answers (timens/control.h), except a `set`
// of a file root wrote itself, which the daemon's user may not write.
int change(const timens::timens_request& request) {
  std::string path;
  if (request.verb == "create") {
    std::string error;
    const std::string dir = timens::own_timens_directory(error);
    if (dir.empty()) return print({exit_failed, "vclock ns create: " + error}).status;
    path = dir + "/" + request.name;
  } else {
    path = timens::timens_file_of(request.name);
  }
  const bool in_system_directory =
      request.name[0] != '/' && path == timens::system_timens_directory() + "/" + request.name;
  struct stat file {};
  const bool root_wrote_it =
      request.verb == "set" && stat(path.c_str(), &file) == 0 && file.st_uid == 0;
  timens::timens_outcome answer;
  if (geteuid() == 0 && in_system_directory && !root_wrote_it &&
      timens::ask_vclockd(timens::timens_control_socket(), request, answer)) {
    return print(answer).status;
  }
  return print(timens::apply_timens_request(request, path)).status;
}

}  // namespace

int run_ns(std::span<char* const> args) {
  if (args.empty())
    return tool::usage_error("ns", "missing subcommand (create, set, show, list, rm)");
  const std::string_view sub = args[0];
  if (sub == "--help" || sub == "-h" || sub == "help") {
    print_help();
    return tool::exit_ok;
  }
  const bool takes_name = sub == "create" || sub == "set" || sub == "rm";
  if (!takes_name && sub != "show" && sub != "list") {
    return tool::usage_error("ns", "unknown subcommand '" + std::string(sub) + "'");
  }
  const std::string command = "ns " + std::string(sub);
  std::string name;
  timens::time_options options;
  std::vector<std::string> option_args;  // as given: a request to vclockd carries them
  bool json = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string_view a = args[i];
    if (a == "--help" || a == "-h") {
      print_help();
      return tool::exit_ok;
    }
    if (a == "--json" && (sub == "show" || sub == "list")) {
      json = true;
      continue;
    }
    if (sub == "create" || sub == "set") {
      std::string error;
      const std::size_t first = i;
      const int taken = timens::take_time_option(command, args, i, options, error);
      if (taken < 0) return tool::usage_error(command, error);
      if (taken > 0) {
        option_args.insert(option_args.end(), args.begin() + static_cast<std::ptrdiff_t>(first),
                           args.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        continue;
      }
    }
    if (a.starts_with("-"))
      return tool::usage_error(command, "unknown option '" + std::string(a) + "'");
    if (!name.empty() || sub == "list") {
      return tool::usage_error(command, "unexpected argument '" + std::string(a) + "'");
    }
    name = std::string(a);
  }
  if (sub == "list") return list(json);
  if (name.empty()) {
    if (sub == "show") {
      const char* joined = secure_getenv(ns_env);
      if (joined == nullptr || joined[0] == '\0') {
        std::printf(json ? "{\"command\": \"ns show\", \"name\": null}\n"
                         : "this process is in no namespace (VCLOCK_NS is not set)\n");
        return tool::exit_ok;
      }
      name = joined;
    } else {
      return tool::usage_error(command, "missing NAME");
    }
  }
  if (name[0] != '/' && !valid_timens_name(name.c_str())) {
    return tool::usage_error(command, "'" + name +
                                          "' is not a namespace name (letters, digits, '.', '_', "
                                          "'-'; at most 63; not starting with '.')");
  }
  if (sub == "create" && name[0] == '/')
    return tool::usage_error(command, "NAME is a name, not a path");
  if (sub == "set" && !options.changes_clocks()) {
    return tool::usage_error(command, "nothing to change (see vclock ns --help)");
  }
  if (sub == "show") return show(timens::timens_file_of(name), json);
  return change(timens::timens_request{std::string(sub), name, option_args});
}

}  // namespace vclock::cli
