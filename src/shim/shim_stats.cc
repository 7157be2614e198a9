// The shim's counters and the line it appends at exit.
#include "shim/shim_stats.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>

#include "lib/runtime.h"
#include "shim/startup_environment.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/reader.h"
#include "vclock/detail/seqlock.h"

namespace vclock::shim {
namespace {

// The slots (shim_stats.h). 256 threads at once; more take over the
// slots of ended threads, or count into the shared total.
constexpr int slot_count = 256;
thread_counts slots[slot_count];

// Calls of threads without a slot, and the counts of slots taken over.
// Apart, so that threads counting one do not bounce the other's line.
alignas(64) std::atomic<std::uint64_t> shared_served{0};
alignas(64) std::atomic<std::uint64_t> shared_forwarded{0};

std::int32_t this_thread_id() noexcept { return static_cast<std::int32_t>(syscall(SYS_gettid)); }

// False once thread `tid` of this process has ended (tgkill with signal 0
// sends nothing). errno is left as it was: the caller is a clock call.
bool thread_alive(std::int32_t tid) noexcept {
  const int saved = errno;
  const bool gone = syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH;
  errno = saved;
  return !gone;
}

std::atomic_ref<std::int32_t> owner_of(thread_counts& s) noexcept {
  return std::atomic_ref<std::int32_t>(s.owner);
}

// A free slot, else one whose thread has ended (its counts folded into
// the shared total first: a line written at exit meanwhile may count them
// twice, never lose them), else null.
thread_counts* take_slot() noexcept {
  const std::int32_t tid = this_thread_id();
  for (thread_counts& s : slots) {
    std::int32_t owner = owner_of(s).load(std::memory_order_relaxed);
    if (owner == 0 && owner_of(s).compare_exchange_strong(owner, tid, std::memory_order_acquire)) {
      return &s;
    }
  }
  for (thread_counts& s : slots) {
    std::int32_t owner = owner_of(s).load(std::memory_order_relaxed);
    if (owner == 0 || thread_alive(owner)) continue;
    if (owner_of(s).compare_exchange_strong(owner, tid, std::memory_order_acquire)) {
      std::atomic_ref<std::uint64_t> served(s.served);
      std::atomic_ref<std::uint64_t> forwarded(s.forwarded);
      shared_served.fetch_add(served.load(std::memory_order_relaxed), std::memory_order_relaxed);
      shared_forwarded.fetch_add(forwarded.load(std::memory_order_relaxed),
                                 std::memory_order_relaxed);
      served.store(0, std::memory_order_relaxed);
      forwarded.store(0, std::memory_order_relaxed);
      return &s;
    }
  }
  return nullptr;
}

void count(bool served) noexcept {
  thread_counts* const c = this_thread_counts;
  if (reinterpret_cast<std::uintptr_t>(c) <= no_slot) [[unlikely]] {
    count_without_slot(served);
    return;
  }
  bump(served ? c->served : c->forwarded);
}

// Captured by the constructor: the destructor runs after the program may
// have changed its environment (or cleared it).
char stats_path[4096] = {};

bool page_serves(clockid_t clock) noexcept { return detail::kind_of(clock).served; }

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

// A child starts its own count: its line is about its own calls. Its one
// thread (the one that forked) keeps its slot, under its new id; the
// slots of the parent's other threads, which the child does not have,
// are free again.
void reset_in_child() noexcept {
  const thread_counts* const mine = this_thread_counts;
  const std::int32_t tid = this_thread_id();
  for (thread_counts& s : slots) {
    std::atomic_ref<std::uint64_t>(s.served).store(0, std::memory_order_relaxed);
    std::atomic_ref<std::uint64_t>(s.forwarded).store(0, std::memory_order_relaxed);
    owner_of(s).store(&s == mine ? tid : 0, std::memory_order_relaxed);
  }
  shared_served.store(0, std::memory_order_relaxed);
  shared_forwarded.store(0, std::memory_order_relaxed);
}

// Every thread's counts, ended threads' included. Threads still running
// may add to them meanwhile: a line of a process that exits while its
// threads read clocks is a snapshot.
void sum_counts(std::uint64_t& served, std::uint64_t& forwarded) noexcept {
  served = shared_served.load(std::memory_order_relaxed);
  forwarded = shared_forwarded.load(std::memory_order_relaxed);
  for (thread_counts& s : slots) {
    served += std::atomic_ref<std::uint64_t>(s.served).load(std::memory_order_relaxed);
    forwarded += std::atomic_ref<std::uint64_t>(s.forwarded).load(std::memory_order_relaxed);
  }
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
  std::uint64_t served = 0;
  std::uint64_t forwarded = 0;
  sum_counts(served, forwarded);
  char line[2300];
  const int n = std::snprintf(
      line, sizeof(line),
      "{\"pid\": %d, \"exe\": \"%s\", \"source\": \"%s\", \"served\": %llu, \"forwarded\": %llu}\n",
      static_cast<int>(getpid()), escaped, source_name(), static_cast<unsigned long long>(served),
      static_cast<unsigned long long>(forwarded));
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

// The model again on the definition: GCC compiles this file's own accesses with the
// definition's model (the declaration's in shim_stats.h does not carry over), and the default
// for a shared object, global-dynamic, reads the variable through a call on the counting path:
// __tls_get_addr on x86-64, a TLS-descriptor call on arm64.
__thread thread_counts* this_thread_counts __attribute__((tls_model("initial-exec"))) = nullptr;

void count_without_slot(bool served) noexcept {
  thread_counts* c = this_thread_counts;
  if (c == nullptr) {
    c = take_slot();
    this_thread_counts = c != nullptr ? c : reinterpret_cast<thread_counts*>(no_slot);
  }
  if (reinterpret_cast<std::uintptr_t>(c) > no_slot) {
    bump(served ? c->served : c->forwarded);
  } else {
    (served ? shared_served : shared_forwarded).fetch_add(1, std::memory_order_relaxed);
  }
}

void count_read(clockid_t clock, bool ok) noexcept {
  count(ok && page_serves(clock) && page_in_counter_mode());
}

void count_forwarded() noexcept { count(false); }

}  // namespace vclock::shim
