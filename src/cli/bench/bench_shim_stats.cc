// The "shim with stats" helper of `vclock bench` (bench_shim_stats.h).
#include "cli/bench/bench_shim_stats.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <string_view>
#include <vector>

namespace vclock::cli {
namespace {

constexpr std::string_view helper_arg = "--shim-stats-helper";
// The helper's ends of the pipes, at fixed numbers after exec.
constexpr int helper_requests_fd = 3;
constexpr int helper_replies_fd = 4;

int request_fd = -1;  // the bench writes {kind, n} here
int reply_fd = -1;    // the helper answers here when its loop is done

enum loop_kind : std::uint64_t { gettime_loop = 1, time_loop = 2 };

std::uint64_t ask(loop_kind kind, std::uint64_t n) noexcept {
  const std::uint64_t request[2] = {kind, n};
  std::uint64_t fold = 0;
  if (write(request_fd, request, sizeof(request)) != static_cast<ssize_t>(sizeof(request)) ||
      read(reply_fd, &fold, sizeof(fold)) != static_cast<ssize_t>(sizeof(fold))) {
    return 0;
  }
  return fold;
}

}  // namespace

bool start_shim_stats_helper(const std::string& shim) {
  int requests[2];
  int replies[2];
  if (pipe2(requests, O_CLOEXEC) != 0) return false;
  if (pipe2(replies, O_CLOEXEC) != 0) {
    close(requests[0]);
    close(requests[1]);
    return false;
  }
  // Everything the child needs, built before fork (the child only calls
  // async-signal-safe functions until exec). The counts go to /dev/null.
  std::vector<std::string> env_text{"VCLOCK_SHIM_STATS=/dev/null"};
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with("VCLOCK_SHIM_STATS=")) continue;
    env_text.emplace_back(*e);
  }
  std::vector<char*> env;
  env.reserve(env_text.size() + 1);
  for (std::string& e : env_text) env.push_back(e.data());
  env.push_back(nullptr);
  std::string arg0 = "vclock", arg1 = "bench", arg2(helper_arg), arg3 = shim;
  char* const argv[] = {arg0.data(), arg1.data(), arg2.data(), arg3.data(), nullptr};
  const pid_t child = fork();
  if (child == 0) {
    // Out of the way first (either may be 3 or 4), then to 3 and 4, where
    // dup2 clears close-on-exec: the helper keeps those two only.
    const int in = fcntl(requests[0], F_DUPFD_CLOEXEC, 10);
    const int out = fcntl(replies[1], F_DUPFD_CLOEXEC, 10);
    if (in < 0 || out < 0 || dup2(in, helper_requests_fd) < 0 || dup2(out, helper_replies_fd) < 0) {
      _exit(127);
    }
    execve("/proc/self/exe", argv, env.data());
    _exit(127);
  }
  close(requests[0]);
  close(replies[1]);
  if (child < 0) {
    close(requests[1]);
    close(replies[0]);
    return false;
  }
  request_fd = requests[1];
  reply_fd = replies[0];
  // The helper answers a first request of 0 calls once the shim is loaded;
  // it exits (and the read fails) if it could not load it. It exits when
  // the bench closes its end, however the bench ends; init reaps it.
  std::uint64_t ready = 0;
  const std::uint64_t request[2] = {gettime_loop, 0};
  if (write(request_fd, request, sizeof(request)) != static_cast<ssize_t>(sizeof(request)) ||
      read(reply_fd, &ready, sizeof(ready)) != static_cast<ssize_t>(sizeof(ready))) {
    close(request_fd);
    close(reply_fd);
    request_fd = reply_fd = -1;
    return false;
  }
  return true;
}

std::uint64_t shim_stats_gettime_loop(std::uint64_t n) noexcept { return ask(gettime_loop, n); }

std::uint64_t shim_stats_time_loop(std::uint64_t n) noexcept { return ask(time_loop, n); }

bool is_shim_stats_helper(std::span<char* const> args) {
  return args.size() == 2 && std::string_view(args[0]) == helper_arg;
}

// The loops are those of bench_contenders.cc's shim rows: a call through
// the pointer dlsym gives, its result folded in.
int run_shim_stats_helper(std::span<char* const> args) {
  void* handle = dlopen(args[1], RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return 1;
  const auto gettime =
      reinterpret_cast<int (*)(clockid_t, timespec*)>(dlsym(handle, "clock_gettime"));
  const auto time_of = reinterpret_cast<time_t (*)(time_t*)>(dlsym(handle, "time"));
  if (gettime == nullptr || time_of == nullptr) return 1;
  std::uint64_t request[2];
  while (read(helper_requests_fd, request, sizeof(request)) ==
         static_cast<ssize_t>(sizeof(request))) {
    std::uint64_t fold = 0;
    if (request[0] == gettime_loop) {
      for (std::uint64_t i = 0; i < request[1]; ++i) {
        timespec ts;
        gettime(CLOCK_MONOTONIC, &ts);
        fold += static_cast<std::uint64_t>(ts.tv_sec) + static_cast<std::uint64_t>(ts.tv_nsec);
      }
    } else {
      for (std::uint64_t i = 0; i < request[1]; ++i) {
        fold += static_cast<std::uint64_t>(time_of(nullptr));
      }
    }
    if (write(helper_replies_fd, &fold, sizeof(fold)) != static_cast<ssize_t>(sizeof(fold))) break;
  }
  return 0;
}

}  // namespace vclock::cli
