// The page, the timekeeper thread and their life cycle.
//
// Why a thread, and not readers refreshing the page themselves: the coarse
// clocks read no counter, so only a periodic writer keeps them within one
// tick of the truth; readers stay pure loads (nothing to deadlock on in a
// signal handler, no try-lock on the fast path); and the kernel samples
// (several vDSO calls per tick) never land on a caller's latency. The cost
// is one wake-up per tick (4 ms) in a thread nobody has to start: it is
// created when the library is loaded, sleeps until the process's first call
// wakes it, and is re-created (asleep again) in a child after fork().
#include "lib/runtime.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "lib/kernel_bound.h"
#include "lib/kernel_clock.h"
#include "lib/kernel_frame.h"
#include "lib/page_identity.h"
#include "lib/quiet_thread.h"
#include "lib/shared_page.h"
#include "lib/tick_loop.h"
#include "lib/timens_join.h"
#include "lib/trust.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/seqlock.h"

namespace vclock::detail {

alignas(4096) page the_page{};

// Virtual time: a process that joined a namespace reads its host time from
// a page of its own (the daemon's, mapped here, or its timekeeper's), and
// the namespace's parameters from the page mapped over the_ns_page.
alignas(4096) page the_host_page{};
alignas(4096) ns_page the_ns_page{};
const ns_page* joined_namespace = nullptr;
const page* host_page = &the_page;
std::int64_t frame_offset_ns[ns_family_count] = {};
bool kernel_frame_only = false;

namespace {

class system_sources final : public time_sources {
 public:
  std::uint64_t read_counter() override { return arch::read_counter_after_stores(); }
  std::int64_t read_kernel(clockid_t clock) override { return kernel::now_ns(clock); }
  bound_sample read_bound() override { return read_kernel_bound(); }
};

// The thread's life: created at load (or in a child after fork), parked
// until the first call wakes it, then running. Only the library's
// constructor and its fork handler create it: a call never does, so a call
// is async-signal-safe from the very first one (it may interrupt malloc or
// pthread_create, which a thread creation would deadlock on).
enum : int { not_created = 0, parked = 1, running = 2, stopped = 3 };

// The futex word the parked thread waits on.
std::atomic<int> run_state{not_created};
static_assert(sizeof(run_state) == sizeof(int) && std::atomic<int>::is_always_lock_free);

pthread_mutex_t timekeeper_lock = PTHREAD_MUTEX_INITIALIZER;
trust_verdict verdict;  // written once, in the constructor

// Where this process's time comes from; written once, in the constructor.
page_source source = page_source::kernel;
attach_result attach_outcome;
char attached_path[256] = {};
timens_join_result timens_outcome;
char ns_file[256] = {};

// Static storage, never destroyed: the thread may still tick while the
// process runs its exit handlers.
alignas(timekeeper) unsigned char timekeeper_storage[sizeof(timekeeper)];
alignas(system_sources) unsigned char sources_storage[sizeof(system_sources)];

timekeeper& the_timekeeper() noexcept {
  return *std::launder(reinterpret_cast<timekeeper*>(timekeeper_storage));
}

timekeeper_config config_from_environment() noexcept {
  timekeeper_config config;
  if (const char* v = std::getenv("VCLOCK_TICK_US")) {
    const long us = std::strtol(v, nullptr, 10);
    if (us >= 100 && us <= 1'000'000) {
      config.tick_ns = us * 1000;
    }
  }
  return config;
}

long futex(std::atomic<int>& word, int op, int value) noexcept {
  return syscall(SYS_futex, reinterpret_cast<int*>(&word), op | FUTEX_PRIVATE_FLAG, value, nullptr,
                 nullptr, 0);
}

// Parked: no tick, no wake-up, until a call wakes the thread (a process
// that links vclock but never reads a clock pays one sleeping thread).
void wait_until_woken() noexcept {
  while (run_state.load(std::memory_order_acquire) == parked) {
    futex(run_state, FUTEX_WAIT, parked);  // returns at once if no longer parked
  }
}

void* thread_main(void*) {
  wait_until_woken();
  tick_loop loop(the_timekeeper());
  for (;;) {
    loop.run_once(&timekeeper_lock);
    loop.wait(nullptr);
  }
  return nullptr;
}

// Creates the thread, parked. Not async-signal-safe: called only from the
// constructor and the fork child handler.
bool create_parked_thread() noexcept {
  run_state.store(parked, std::memory_order_release);
  if (!start_quiet_thread(thread_main, "vclock-tk")) {
    run_state.store(stopped, std::memory_order_release);
    the_timekeeper().disable(fallback_reason::timekeeper_failed);
    return false;
  }
  return true;
}

// ThreadSanitizer cannot follow a thread created in the child of a
// multi-threaded fork (it stops the process, or deadlocks on its own locks
// held across fork), and GCC 12's AddressSanitizer now and then deadlocks
// there too: its pthread_create waits for its thread registry's lock, held
// by another thread of the parent when it forked (seen in runs of
// tests/first_call_probe fork, the stack in AsanThread::Create; how often:
// docs/performance.md). Under either a child stays on the kernel.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr bool can_restart_after_fork = false;
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
constexpr bool can_restart_after_fork = false;
#  else
constexpr bool can_restart_after_fork = true;
#  endif
#else
constexpr bool can_restart_after_fork = true;
#endif

// A word of this process's own for its page's stamp epoch (history.h,
// private_counter_epoch): its pid, and the time, so that a recycled pid
// gets another word. Async-signal-safe (a fork handler calls it).
std::uint32_t process_salt() noexcept {
  const auto pid = static_cast<std::uint64_t>(static_cast<std::uint32_t>(getpid()));
  const auto now = static_cast<std::uint64_t>(kernel::now_ns(CLOCK_MONOTONIC));
  const std::uint64_t mixed = ((pid << 32) | (now & 0xffffffffu)) * 0x9e3779b97f4a7c15u;
  return static_cast<std::uint32_t>(mixed >> 32) & ~detail::private_counter_epoch;
}

void before_fork() { pthread_mutex_lock(&timekeeper_lock); }
void after_fork_in_parent() { pthread_mutex_unlock(&timekeeper_lock); }
void after_fork_in_child() {
  // Only this thread exists now; the timekeeper thread did not survive.
  // Its state is intact (fork happened between ticks, under the lock), so
  // turn the page off with its floor and give the child a parked thread,
  // which the child's first call wakes (a child that only execs never
  // does). This handler is the child's safe context: glibc has reset its
  // allocator's and its thread list's locks before it runs.
  pthread_mutex_unlock(&timekeeper_lock);
  const int state = run_state.load(std::memory_order_relaxed);
  if (state != parked && state != running) {
    return;
  }
  if (state == running) {
    the_timekeeper().pause_after_fork();
  }
  // The parent's stamps and the child's would share the page's epoch but
  // not its lines from now on.
  the_timekeeper().make_history_private(process_salt());
  if (can_restart_after_fork) {
    create_parked_thread();
  } else {
    run_state.store(stopped, std::memory_order_relaxed);
  }
}

// The page to attach to: VCLOCK_PAGE (ignored in secure-execution mode:
// a setuid program must not be pointed at a page of the caller's choice),
// else the default; nullptr for VCLOCK_PAGE=off.
const char* page_path_from_environment() noexcept {
  const char* v = secure_getenv(page_env);
  if (v == nullptr || v[0] == '\0') return default_page_path;
  return std::strcmp(v, "off") == 0 ? nullptr : v;
}

// Maps vclockd's page over the_page if there is a good one. The page's
// address stays the link-time constant every reader was compiled against.
bool attach_to_daemon(const machine_identity& identity, page* where, bool in_own_frame) noexcept {
  const char* path = page_path_from_environment();
  if (path == nullptr) return false;
  std::snprintf(attached_path, sizeof(attached_path), "%s", path);
  attach_outcome = attach_shared_page(path, where, identity, in_own_frame);
  return attach_outcome.refusal == page_refusal::none;
}

// --- Kernel time namespaces (kernel_frame.h) ------------------------------------------------
// The daemon's page is the initial namespace's time. A process whose own
// kernel time namespace offsets MONOTONIC or BOOTTIME reads it at
// the_host_page, as a process in a virtual-time namespace does, and adds
// its offsets (frame_offset_ns) to every host time the page gives; the
// careful path subtracts them from the kernel's answers it compares with
// the page. With no VCLOCK_NS, its namespace is the identity
// (kernel_frame_only): the reads are the kernel namespace's clocks, and
// the shim's waits and timers are left to the kernel.
kernel_frame frame_at_load;

void use_frame_offsets(const time_namespace_offsets& o) noexcept {
  frame_offset_ns[static_cast<int>(ns_family::monotonic)] = o.monotonic_ns;
  frame_offset_ns[static_cast<int>(ns_family::raw)] = o.monotonic_ns;
  frame_offset_ns[static_cast<int>(ns_family::boottime)] = o.boottime_ns;
  frame_offset_ns[static_cast<int>(ns_family::realtime)] = 0;
}

void join_kernel_frame_namespace() noexcept {
  write_identity_namespace(the_ns_page);
  kernel_frame_only = true;
  joined_namespace = &the_ns_page;
  host_page = &the_host_page;
}

// VCLOCK_NS (secure_getenv: a setuid program joins nothing). Joined, the
// process's host time moves to the_host_page; the_page is left odd for
// good (below), so that every read leaves the fast path for the careful
// one, which applies the namespace: a process in no namespace runs the
// same instructions as before namespaces existed.
void join_namespace_from_environment() noexcept {
  const char* spec = secure_getenv(ns_env);
  if (spec == nullptr || spec[0] == '\0') return;
  char user_directory[200];
  const bool have_user = user_timens_directory(user_directory, sizeof(user_directory));
  char system_directory[256];
  if (!system_timens_directory(system_directory, sizeof(system_directory)) ||
      !timens_path_of(spec, have_user ? user_directory : nullptr, system_directory, ns_file,
                      sizeof(ns_file))) {
    timens_outcome.refusal = timens_refusal::bad_name;
    std::snprintf(ns_file, sizeof(ns_file), "%s", spec);
    return;
  }
  timens_outcome = join_timens_page(ns_file, &the_ns_page);
  if (timens_outcome.refusal != timens_refusal::none) return;
  joined_namespace = &the_ns_page;
  host_page = &the_host_page;
}

// Both lines odd and the coarse line odd, never written again: no read of
// the_page ever completes on the fast path.
void leave_the_fast_path_for_good() noexcept {
  store(the_page.hot.seq, 1u);
  store(the_page.backup.seq, 1u);
  store(the_page.coarse.seq, 1u);
}

// A child whose parent called unshare(CLONE_NEWTIME) before fork() lives
// in another kernel time namespace than the one the library was loaded in
// (one readlink per fork tells). With the daemon's page it takes the new
// offsets, moving to the_host_page if it read the_page so far; its own
// timekeeper (libvclock.so without a daemon) re-calibrates in the child
// against the new namespace's kernel clocks (docs/virtual-time.md: after
// a negative offset it stays ahead, closing the gap at about 0.1 %). Only system calls: the
// child of a multi-threaded parent may run nothing else.
void recheck_time_namespace_in_child() {
  if (in_time_namespace(frame_at_load.link)) return;
  const kernel_frame now = read_kernel_frame();
  frame_at_load = now;
  if (source != page_source::shared) return;
  if (joined_namespace != nullptr) {
    use_frame_offsets(now.readable ? now.offsets : time_namespace_offsets{});
    return;
  }
  if (!now.offsets_clocks()) return;
  // the_page is the daemon's mapping: map the page again at the_host_page,
  // then give the_page the odd seqs of a process in a namespace.
  const machine_identity identity = read_machine_identity();
  const bool moved = attach_shared_page(attached_path, &the_host_page, identity, true).refusal ==
                     page_refusal::none;
  void* fresh = mmap(&the_page, sizeof(page), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (fresh == MAP_FAILED) return;  // the_page keeps the daemon's time: left as it was
  write_header(the_page.header, identity, 0);
  if (moved) {
    join_kernel_frame_namespace();
    use_frame_offsets(now.offsets);
    leave_the_fast_path_for_good();
  } else {
    source = page_source::kernel;  // the_page is off now: the kernel answers
  }
}

// Everything that is not async-signal-safe happens here, once, as the
// library is loaded (or dlopen'ed): the environment, /sys, the shared page,
// placement new, pthread_atfork and the thread itself. A call that comes
// before this (from another library's constructor, or a handler during
// start-up) finds the page off and asks the kernel.
//
// Built into the LD_PRELOAD shim (VCLOCK_SHIM_BUILD), it never starts a
// thread: a thread that a program did not make can break it (glibc applies
// setresuid and setresgid to every thread and aborts when one fails, as it
// does in setpriv, which changes its own thread's capabilities between the
// two). Without a daemon's page, the shim's page stays off and its calls go
// to the kernel; `vclock run` starts a private vclockd when none runs.
//
// A priority, so that it runs before the constructors that have none: the
// shim's chooses its entry points from what this one found.
[[gnu::constructor(200)]] void start_at_load() noexcept {
  pthread_mutex_lock(&timekeeper_lock);
  verdict = decide_trust();
  const machine_identity identity = read_machine_identity();
  join_namespace_from_environment();
  frame_at_load = read_kernel_frame();
  pthread_atfork(nullptr, nullptr, recheck_time_namespace_in_child);
  const bool trusted = verdict.reason == fallback_reason::none;
  bool attached = false;
  if (trusted && joined_namespace == nullptr && frame_at_load.readable &&
      frame_at_load.offsets_clocks()) {
    // Only with the daemon's page does such a process need a namespace:
    // its own timekeeper, or the kernel, gives its own namespace's time.
    attached = attach_to_daemon(identity, &the_host_page, true);
    if (attached) join_kernel_frame_namespace();
  }
  if (joined_namespace != nullptr) {
    write_header(the_page.header, identity, 0);
    leave_the_fast_path_for_good();
  }
  page& host = joined_namespace != nullptr ? the_host_page : the_page;
  if (!attached && trusted) {
    attached =
        attach_to_daemon(identity, &host, joined_namespace != nullptr && frame_at_load.readable);
  }
  if (attached) {
    if (joined_namespace != nullptr) use_frame_offsets(frame_at_load.offsets);
    source = page_source::shared;  // no timekeeper, no thread: the daemon's
    pthread_mutex_unlock(&timekeeper_lock);
    return;
  }
#if defined(VCLOCK_SHIM_BUILD)
  write_header(host.header, identity, 0);  // and the page stays off: the kernel answers
  pthread_mutex_unlock(&timekeeper_lock);
  return;
#endif
  write_header(host.header, identity, 0);
  auto* sources = new (sources_storage) system_sources();
  auto* tk = new (timekeeper_storage) timekeeper(host, *sources, config_from_environment());
  store_relaxed(host.counter_trusted, verdict.reason == fallback_reason::none ? 1u : 0u);
  tk->start();
  tk->make_history_private(process_salt());
  if (verdict.reason != fallback_reason::none) {
    tk->disable(verdict.reason);
    run_state.store(stopped, std::memory_order_release);
  } else if (create_parked_thread()) {
    source = page_source::in_process;
    pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
  }
  pthread_mutex_unlock(&timekeeper_lock);
}

}  // namespace

void ensure_started() noexcept {
  int state = run_state.load(std::memory_order_acquire);
  if (state != parked) [[likely]] {
    return;
  }
  // One system call, once per process: a futex wake is async-signal-safe
  // and never waits. A caller that loses the race leaves it to the winner.
  if (run_state.compare_exchange_strong(state, running, std::memory_order_acq_rel)) {
    const int saved = errno;
    futex(run_state, FUTEX_WAKE, 1);
    errno = saved;
  }
}

page_source current_source() noexcept { return source; }

const char* page_path() noexcept { return attached_path; }

attach_result page_attach_outcome() noexcept { return attach_outcome; }

const char* namespace_file() noexcept { return ns_file; }

timens_join_result namespace_outcome() noexcept { return timens_outcome; }

}  // namespace vclock::detail
