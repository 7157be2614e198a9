// The shim's counters and the line it appends at exit.
#include "shim/shim_stats.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>

#include "lib/runtime.h"
#include "shim/startup_environment.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/seqlock.h"

namespace vclock::shim {
namespace {

// Apart, so that threads counting one do not bounce the other's line.
alignas(64) std::atomic<std::uint64_t> served{0};
alignas(64) std::atomic<std::uint64_t> forwarded{0};

// Captured by the constructor: the destructor runs after the program may
// have changed its environment (or cleared it).
char stats_path[4096] = {};

bool page_serves(clockid_t clock) noexcept {
  switch (clock) {
    case CLOCK_REALTIME:
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_BOOTTIME:
    case CLOCK_TAI:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_MONOTONIC_COARSE:
      return true;
    default:
      return false;
  }
}

// The page in counter mode and not stale: the fast path answered (or the
// careful path from the page). A read racing a mode change may be counted
// on either side.
bool page_in_counter_mode() noexcept {
  const clock_line& hot = detail::host_page->hot;
  const std::uint64_t max_delta = detail::load_relaxed(hot.max_delta);
  if (max_delta == 0) return false;
  const std::uint64_t delta = arch::read_counter<arch::counter_ordering::none>().value -
                              detail::load_relaxed(hot.cycle_last);
  return delta < max_delta;
}

const char* source_name() noexcept {
  switch (detail::current_source()) {
    case detail::page_source::shared:
      return "shared";
    case detail::page_source::in_process:
      return "in-process";
    case detail::page_source::kernel:
      break;
  }
  return "kernel";
}

// `text` as the inside of a JSON string, truncated to fit `out`.
void json_escape(const char* text, char* out, std::size_t size) noexcept {
  std::size_t n = 0;
  for (const char* p = text; *p != '\0' && n + 7 < size; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      out[n++] = '\\';
      out[n++] = static_cast<char>(c);
    } else if (c < 0x20) {
      n += static_cast<std::size_t>(std::snprintf(out + n, size - n, "\\u%04x", c));
    } else {
      out[n++] = static_cast<char>(c);
    }
  }
  out[n] = '\0';
}

// A child starts its own count: its line is about its own calls.
void reset_in_child() noexcept {
  served.store(0, std::memory_order_relaxed);
  forwarded.store(0, std::memory_order_relaxed);
}

[[gnu::constructor]] void capture_stats_path() noexcept {
  // The resolvers chose the counting entry points only if the variable was
  // set; secure_getenv: a setuid program writes nothing where its caller says.
  if (!stats_wanted()) return;
  const char* path = secure_getenv(stats_env);
  if (path == nullptr || path[0] == '\0') return;
  std::snprintf(stats_path, sizeof(stats_path), "%s", path);
  pthread_atfork(nullptr, nullptr, reset_in_child);
}

// Plain open/write: coreutils close stdout and stderr at exit, and stdio
// may be torn down by now. One write() of one line under O_APPEND, so that
// processes ending together do not interleave their lines.
[[gnu::destructor]] void write_stats_line() noexcept {
  if (stats_path[0] == '\0') return;
  char exe[1024] = {};
  const ssize_t length = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  exe[length > 0 ? length : 0] = '\0';
  char escaped[2048];
  json_escape(exe, escaped, sizeof(escaped));
  char line[2300];
  const int n = std::snprintf(
      line, sizeof(line),
      "{\"pid\": %d, \"exe\": \"%s\", \"source\": \"%s\", \"served\": %llu, \"forwarded\": %llu}\n",
      static_cast<int>(getpid()), escaped, source_name(),
      static_cast<unsigned long long>(served.load(std::memory_order_relaxed)),
      static_cast<unsigned long long>(forwarded.load(std::memory_order_relaxed)));
  if (n <= 0 || static_cast<std::size_t>(n) >= sizeof(line)) return;
  const int fd = open(stats_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!write(fd, line, static_cast<std::size_t>(n));
  close(fd);
}

}  // namespace

__attribute__((no_stack_protector)) bool stats_wanted() noexcept {
  return read_startup_settings().stats;
}

void count_read(clockid_t clock, bool ok) noexcept {
  if (ok && page_serves(clock) && page_in_counter_mode()) {
    served.fetch_add(1, std::memory_order_relaxed);
  } else {
    forwarded.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace vclock::shim
