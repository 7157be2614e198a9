// `vclock run`: the shim's front door.
//
// Where the shim is: --shim PATH, else $VCLOCK_SHIM, else next to this
// program's install (VCLOCK_SHIM_FROM_BINDIR: the library directory
// relative to the binary directory, from CMake), else beside this binary
// (a build tree). The path must be absolute and free of the characters
// that separate LD_PRELOAD's entries.
#include "cli/run/run.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "cli/run/exit_cleaner.h"
#include "cli/run/private_daemon.h"
#include "cli/run/vdso_handover.h"
#include "lib/ordering.h"
#include "lib/page_identity.h"
#include "lib/shared_page.h"
#include "lib/timens_join.h"
#include "lib/trust.h"
#include "timens/kernel_timens.h"
#include "timens/store.h"
#include "timens/time_options.h"
#include "tool/args.h"

#ifndef VCLOCK_SHIM_FROM_BINDIR
#  define VCLOCK_SHIM_FROM_BINDIR "../lib"
#endif

namespace vclock::cli {
namespace {

constexpr const char* shim_name = "libvclock_preload.so";
constexpr int exit_no_shim = 1;
constexpr int exit_not_executable = 126;
constexpr int exit_not_found = 127;
// Asked once (a readlink of /proc/self/exe is a /proc lookup, on every
// command's way): the shim, the image and vclockd are all found from it.
const std::string& own_directory() {
  static const std::string dir = [] {
    char path[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0) return std::string();
    path[n] = '\0';
    const char* slash = std::strrchr(path, '/');
    return slash == nullptr ? std::string()
                            : std::string(path, static_cast<std::size_t>(slash - path));
  }();
  return dir;
}

bool is_readable_file(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

// The machine's vclockd page, where one serves and the command's shim
// would attach to it ("" otherwise). `vclock run` asks this itself: it
// runs with the library's timekeeper off (main.cc), so the library has
// not attached. Asked once, with VCLOCK_PAGE unset.
const std::string& machine_page() {
  static const std::string path = [] {
    // No page, no vclockd (the attach would say not_found): asked first,
    // because the checks below cost a dozen CPUID instructions, each an
    // exit to the hypervisor in a guest, and the private daemon's case,
    // where there is no page, is the one that has the most to do.
    if (access(default_page_path, F_OK) != 0 && errno == ENOENT) return std::string();
    if (decide_trust().reason != fallback_reason::none) return std::string();
    alignas(page_bytes) static page probe;  // mapped over, and left so: 4 KiB
    const attach_result r =
        attach_shared_page(default_page_path, &probe, read_machine_identity(), true);
    return r.refusal == page_refusal::none ? std::string(default_page_path) : std::string();
  }();
  return path;
}

}  // namespace

std::string find_shim(const std::string& requested, std::string& why) {
  std::vector<std::string> candidates;
  if (!requested.empty()) {
    candidates.push_back(requested);
  } else if (const char* env = std::getenv("VCLOCK_SHIM"); env != nullptr && env[0] != '\0') {
    candidates.emplace_back(env);
  } else {
    const std::string& dir = own_directory();
    candidates.push_back(dir + "/" + VCLOCK_SHIM_FROM_BINDIR + "/" + shim_name);
    candidates.push_back(dir + "/" + shim_name);
  }
  for (const std::string& c : candidates) {
    if (!is_readable_file(c)) continue;
    char resolved[PATH_MAX];
    if (realpath(c.c_str(), resolved) == nullptr) continue;
    std::string path = resolved;
    if (path.find_first_of(" :\t\n") != std::string::npos) {
      why = "the shim's path '" + path + "' has a space or ':' (LD_PRELOAD cannot hold it)";
      return "";
    }
    return path;
  }
  why = "cannot find " + std::string(shim_name) + " (looked at '" + candidates.front() + "'" +
        (candidates.size() > 1 ? " and '" + candidates.back() + "'" : "") +
        "; use --shim PATH or VCLOCK_SHIM)";
  return "";
}

namespace {

void print_help() {
  std::printf(
      "Usage: vclock run [--shim PATH] [TIME OPTIONS] [--] CMD [ARGS...]\n\n"
      "Runs CMD with libvclock_preload.so preloaded (added before any LD_PRELOAD): its\n"
      "clock_gettime, clock_getres, gettimeofday, time, timespec_get, timespec_getres and\n"
      "ftime are vclock's (and, with time options, its sleeps, waits and timers).\n"
      "With time options, CMD and every process it starts share a virtual time of their\n"
      "own (an anonymous namespace, removed when CMD exits); --ns joins a named one.\n"
      "exit status: CMD's; 1 no shim, or an error before CMD starts; 2 bad usage, or a\n"
      "namespace that cannot be joined; 126 CMD cannot run; 127 CMD not found.\n\n"
      "options:\n"
      "  --shim PATH           the shim to preload (default: $VCLOCK_SHIM, else the installed "
      "one)\n"
      "  --kernel-timens       also run CMD in a kernel time namespace with the --monotonic and\n"
      "                        --boottime offsets, so that static and Go programs and raw\n"
      "                        system calls see those two (not the rate, not REALTIME)\n"
      "  --vdso                give dynamic programs the vclock vDSO too (static ones get it\n"
      "                        by default: the shim cannot reach them)\n"
      "  --no-vdso             no vDSO handover: static and Go programs read the host's time\n"
      "  --allow-unreached     with time options, run CMD even where static programs cannot\n"
      "                        be reached (ptrace refused): they read the host's time\n"
      "  --help                this text\n"
      "time options:\n%s",
      timens::time_options_help("run").c_str());
}

// An anonymous namespace for this command: a file in a fresh private
// directory, removed with it when the command exits.
bool make_anonymous_namespace(const timens::time_options& options, const timens::host_times& frame,
                              std::string& path, std::string& error) {
  const char* base = std::getenv("TMPDIR");
  std::string dir =
      std::string(base != nullptr && base[0] == '/' ? base : "/tmp") + "/vclock-ns.XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    error = std::string("cannot create a temporary directory: ") + std::strerror(errno);
    return false;
  }
  // Readable by the command's processes whatever uid they drop to.
  chmod(dir.c_str(), 0755);
  path = dir + "/ns";
  if (!timens::create_timens_file(path, "", options, error, frame)) {
    rmdir(dir.c_str());
    return false;
  }
  if (!remove_at_exit({path}, dir, error)) {
    unlink(path.c_str());
    rmdir(dir.c_str());
    return false;
  }
  return true;
}

// A named namespace must exist and be one this user may join: said now, in
// one line, rather than found out by the command's clocks.
bool check_named_namespace(const std::string& name, std::string& path, std::string& error) {
  path = timens::timens_file_of(name);
  if (path.empty()) {
    error = "'" + name + "' is neither a namespace name nor an absolute path";
    return false;
  }
  alignas(4096) static ns_page probe;
  const timens_join_result r = join_timens_page(path.c_str(), &probe);
  if (r.refusal != timens_refusal::none) {
    error = path + ": " + timens_refusal_text(r.refusal);
    return false;
  }
  return true;
}

// A user namespace (what --kernel-timens needs without root) can be
// created only by a single-threaded process, and this one may have
// vclock's parked timekeeper thread (not where main.cc kept the library
// from starting it, as it does for every `vclock run`: then a fallback). Re-executes this very
// command line with VCLOCK_DISABLE=1 (no thread) once; run_run() restores the variable before
// anything else, so that the command never sees it.
constexpr const char* reexec_marker = "VCLOCK_RUN_REEXEC_DISABLE";

bool single_threaded() {
  struct stat task {};
  return stat("/proc/self/task", &task) == 0 && task.st_nlink == 3;  // ., .., one thread
}

void restore_after_reexec() {
  const char* saved = std::getenv(reexec_marker);
  if (saved == nullptr) return;
  if (std::strcmp(saved, "-") == 0) {
    unsetenv("VCLOCK_DISABLE");
  } else {
    setenv("VCLOCK_DISABLE", saved + 1, 1);  // "=VALUE"
  }
  unsetenv(reexec_marker);
}

void reexec_single_threaded(std::span<char* const> args) {
  const char* disable = std::getenv("VCLOCK_DISABLE");
  setenv(reexec_marker, disable == nullptr ? "-" : ("=" + std::string(disable)).c_str(), 1);
  setenv("VCLOCK_DISABLE", "1", 1);
  // The page this process attached to, so that the next one need not
  // start a private daemon in its stead.
  if (std::getenv("VCLOCK_PAGE") == nullptr && !machine_page().empty()) {
    setenv("VCLOCK_PAGE", machine_page().c_str(), 1);
  }
  std::vector<char*> argv{const_cast<char*>("vclock"), const_cast<char*>("run")};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  execv("/proc/self/exe", argv.data());
}

// Where execvp() would find `command`: the first directory of PATH that
// holds an executable regular file of that name ("" where the command has a
// '/', PATH is unset, or there is none).
std::string command_in_path(const char* command) {
  const char* path = std::getenv("PATH");
  if (path == nullptr || command[0] == '\0' || std::strchr(command, '/') != nullptr) return "";
  std::string_view rest = path;
  for (;;) {
    const std::size_t colon = rest.find(':');
    const std::string_view dir = rest.substr(0, colon);
    // An empty entry is the current directory, as execvp() takes it.
    std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + command;
    struct stat file {};
    if (stat(candidate.c_str(), &file) == 0 && S_ISREG(file.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (colon == std::string_view::npos) return "";
    rest.remove_prefix(colon + 1);
  }
}

enum class handover_mode { off, static_programs, all_programs };

// Starts the tracer that gives static programs (all with --vdso) the vclock
// vDSO image, serving the page and the namespace the shim would read.
bool hand_over_vdso(const std::string& shim, const std::string& ns_path, bool dynamic_too,
                    const char* command, private_daemon* daemon, std::string& reason) {
  handover_options h;
  h.command = command;
  h.dynamic_too = dynamic_too;
  h.daemon = daemon;
  const std::string& own = own_directory();
  h.plan.image = find_vdso_image(shim, own + "/" + VCLOCK_SHIM_FROM_BINDIR);
  if (h.plan.image.empty()) h.plan.image = find_vdso_image(own + "/", "");  // a build tree
  if (h.plan.image.empty()) {
    reason = "no vclock-vdso.so beside " + shim;
    return false;
  }
  const char* page = std::getenv("VCLOCK_PAGE");
  if (page == nullptr && !machine_page().empty()) page = machine_page().c_str();
  if (page != nullptr && page[0] == '/' && access(page, R_OK) == 0) h.plan.host_page = page;
  h.plan.ns_page = ns_path;
  h.plan.ordering = static_cast<std::uint32_t>(chosen_ordering());
  return prepare_image_plan(h.plan, reason) && start_handover(h, reason);
}

}  // namespace

std::string preload_with_shim(const std::string& shim, const char* existing) {
  // A sanitizer's runtime must stay first (ASan refuses to start otherwise);
  // the shim goes right after it, before everything else.
  const auto is_sanitizer_runtime = [](std::string_view entry) {
    const std::string_view base = entry.substr(entry.rfind('/') + 1);
    return base.starts_with("libasan") || base.starts_with("libtsan") ||
           base.starts_with("libclang_rt.");
  };
  std::string first, rest;
  std::string_view remaining = existing != nullptr ? existing : "";
  while (!remaining.empty()) {
    const std::size_t end = remaining.find_first_of(" :");
    const std::string_view entry = remaining.substr(0, end);
    if (!entry.empty() && entry != shim) {
      std::string& part = is_sanitizer_runtime(entry) ? first : rest;
      part += entry;
      part += ':';
    }
    if (end == std::string_view::npos) break;
    remaining.remove_prefix(end + 1);
  }
  std::string result = first + shim;
  if (!rest.empty()) result += ':' + rest.substr(0, rest.size() - 1);
  return result;
}

int run_run(std::span<char* const> args) {
  restore_after_reexec();
  std::string shim_option;
  timens::time_options options;
  bool kernel_timens = false;
  handover_mode handover = handover_mode::static_programs;
  bool allow_unreached = false;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string_view a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--help" || a == "-h") {
      print_help();
      return tool::exit_ok;
    }
    if (a == "--kernel-timens") {
      kernel_timens = true;
      continue;
    }
    if (a == "--vdso" || a == "--no-vdso") {
      handover = a == "--vdso" ? handover_mode::all_programs : handover_mode::off;
      continue;
    }
    if (a == "--allow-unreached") {
      allow_unreached = true;
      continue;
    }
    if (a == "--shim" || a.starts_with("--shim=")) {
      if (a == "--shim") {
        if (i + 1 >= args.size()) return tool::usage_error("run", "--shim needs a PATH");
        shim_option = args[++i];
      } else {
        shim_option = std::string(a.substr(7));
      }
      if (shim_option.empty()) return tool::usage_error("run", "--shim: empty path");
      continue;
    }
    std::string error;
    const int taken = timens::take_time_option("run", args, i, options, error);
    if (taken < 0) return tool::usage_error("run", error);
    if (taken > 0) continue;
    if (a.starts_with("-")) {
      return tool::usage_error("run", "unknown option '" + std::string(a) + "'");
    }
    break;  // the command
  }
  if (i >= args.size())
    return tool::usage_error("run", "missing command (vclock run -- CMD [ARGS...])");
  if (!options.ns.empty() && options.changes_clocks()) {
    return tool::usage_error("run",
                             "--ns joins a namespace as it is: change it with 'vclock ns set', or "
                             "give time options without --ns for a namespace of the command's own");
  }
  if (kernel_timens && !options.ns.empty()) {
    return tool::usage_error(
        "run", "--kernel-timens gives the command a namespace of its own: not with --ns");
  }
  if (kernel_timens && geteuid() != 0 && !single_threaded() &&
      std::getenv(reexec_marker) == nullptr) {
    reexec_single_threaded(args);  // returns only if the exec failed: carry on, and say why later
  }
  // With --kernel-timens the kernel applies the MONOTONIC and BOOTTIME
  // offsets, to every process of the command; vclock's namespace keeps the
  // rest (REALTIME, the rate, a freeze), its lines written in the terms of
  // the kernel namespace's clocks, which its readers read.
  timens::host_times frame{};
  timens::time_options vclock_options = options;
  if (kernel_timens) {
    const std::int64_t mono = options.monotonic_offset_ns.value_or(0);
    const std::int64_t boot = options.boottime_offset_ns.value_or(0);
    frame.ns[static_cast<int>(ns_family::monotonic)] = mono;
    frame.ns[static_cast<int>(ns_family::raw)] = mono;
    frame.ns[static_cast<int>(ns_family::boottime)] = boot;
    vclock_options.monotonic_offset_ns.reset();
    vclock_options.boottime_offset_ns.reset();
  }
  std::string ns_path;
  if (!options.ns.empty()) {
    std::string error;
    if (!check_named_namespace(options.ns, ns_path, error)) return tool::usage_error("run", error);
  } else if (const char* inherited = std::getenv(ns_env); inherited != nullptr &&
                                                          valid_timens_name(inherited) &&
                                                          !vclock_options.changes_clocks()) {
    // A name in VCLOCK_NS is looked up beside the host page: pinned to
    // its file now, before VCLOCK_PAGE may name a private daemon's page.
    ns_path = timens::timens_file_of(inherited);
  }

  std::string why;
  const std::string shim = find_shim(shim_option, why);
  if (shim.empty()) {
    std::fprintf(stderr, "vclock run: %s\n", why.c_str());
    return exit_no_shim;
  }
  // The page: VCLOCK_PAGE as given, else the machine's vclockd if one
  // serves, else a private vclockd for this command: its page now, the
  // daemon itself with the tracer (one double fork for both), or now where
  // there is no tracer or this process is about to enter a kernel time
  // namespace (which its children would share: the daemon must not).
  const bool needs_daemon = std::getenv("VCLOCK_PAGE") == nullptr && machine_page().empty();
  private_daemon d = needs_daemon ? prepare_private_daemon(own_directory() + "/vclockd", getpid())
                                  : private_daemon{};
  if (needs_daemon) {
    if (d.page.empty()) {
      std::fprintf(
          stderr,
          "vclock run: no vclockd serves this machine and %s: %s reads the kernel's clocks\n",
          d.error.c_str(), args[i]);
      setenv("VCLOCK_PAGE", "off", 1);
    } else {
      setenv("VCLOCK_PAGE", d.page.c_str(), 1);
      if (handover == handover_mode::off || kernel_timens) start_private_daemon(d);
    }
  }
  if (vclock_options.changes_clocks()) {
    std::string error;
    if (!make_anonymous_namespace(vclock_options, frame, ns_path, error)) {
      std::fprintf(stderr, "vclock run: %s\n", error.c_str());
      return exit_no_shim;
    }
  }
  if (kernel_timens) {
    std::string error;
    if (!timens::enter_kernel_time_namespace(frame.ns[static_cast<int>(ns_family::monotonic)],
                                             frame.ns[static_cast<int>(ns_family::boottime)],
                                             error)) {
      std::fprintf(stderr, "vclock run: --kernel-timens: %s\n", error.c_str());
      return exit_no_shim;
    }
  }
  if (!ns_path.empty()) setenv(ns_env, ns_path.c_str(), 1);
  const std::string preload = preload_with_shim(shim, std::getenv("LD_PRELOAD"));
  if (setenv("LD_PRELOAD", preload.c_str(), 1) != 0) {
    std::fprintf(stderr, "vclock run: cannot set LD_PRELOAD: %s\n", std::strerror(errno));
    return exit_no_shim;
  }
  if (handover != handover_mode::off) {
    std::string reason;
    if (!hand_over_vdso(shim, ns_path, handover == handover_mode::all_programs, args[i],
                        d.page.empty() || d.started ? nullptr : &d, reason)) {
      // Never silent (issue 22): asked for virtual time, the user learns
      // that static programs would not get it, before anything runs.
      if ((options.changes_clocks() || !options.ns.empty()) && !allow_unreached) {
        std::fprintf(stderr,
                     "vclock run: %s: static and Go programs cannot be given virtual time: %s "
                     "(--allow-unreached runs it anyway, --no-vdso without trying)\n",
                     args[i], reason.c_str());
        return exit_no_shim;
      }
      std::fprintf(stderr,
                   "vclock run: %s: static and Go programs it runs read the host's time: %s\n",
                   args[i], reason.c_str());
    }
  }
  start_private_daemon(d);  // where the tracer's starter did not (none, or it failed)
  reap_starter(d);
  std::fflush(nullptr);
  std::vector<char*> argv(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  argv.push_back(nullptr);
  // Under the exec filter every exec, failed or not, is a round trip
  // through the tracer, and execvp() tries each directory of PATH in turn:
  // the program is looked for here first, and only its exec goes out.
  // Anything else (not found, or an exec that fails) is left to execvp(),
  // which then says what it would have.
  if (const std::string found = command_in_path(argv[0]); !found.empty()) {
    execv(found.c_str(), argv.data());
  }
  execvp(argv[0], argv.data());
  const int error = errno;
  stop_handover();
  std::fprintf(stderr, "vclock run: %s: %s\n", argv[0],
               error == ENOENT ? "command not found" : std::strerror(error));
  return error == ENOENT ? exit_not_found : exit_not_executable;
}

}  // namespace vclock::cli
