// `vclock bench`: every way this process can ask for the time, measured side
// by side in one pinned process, so that a claim like "0.78x the vDSO" can
// be checked on any machine with one command.
//
// Method, after the seeds' "fastest of 20 trials of 100M iterations":
//  - Hot: each contender runs in its own non-inlined loop of calls (the call
//    inlined into the loop, the result folded into a sum that is forced into
//    a register, so nothing is optimised away). Iterations are sized so that
//    one trial lasts at least trial_ms. The trial loop is outside and the
//    contender loop inside, with a rotating start, so slow phases of a noisy
//    VM hit every contender alike. Reported: min and median ns per call over
//    the trials, and the min against the vDSO's CLOCK_MONOTONIC of this run
//    (and against the vDSO's own reading of the same clock).
//  - Floor (hot only): between the bare counter read and vclock's entry
//    points, the same loop calls functions of this file that each add one
//    step of vclock's fast path: a call, the counter read, the multiply and
//    shift (as ns and as timespec), and vclock's own reader (the seqlock)
//    called directly. What is left above the last is the clock-id dispatch
//    and the PLT/ifunc jump. Rows for the ordering the library uses and for
//    the bare rdtsc of the relaxed entry points.
//  - Cold: before every single call, the cache lines of the code and data
//    that the call uses are flushed with CLFLUSH (the same set before every
//    call, whichever contender is next: see cold_flush_set()), then the call
//    is bracketed by LFENCE;RDTSC. Reported: median and p90 ticks.
//  - Tails: a million (--quick: 200,000) single calls per contender, each
//    bracketed by LFENCE;RDTSC, while the timekeeper publishes at its normal
//    rate; interleaved in blocks. Reported: p50, p99, p99.9 and max ticks.
//  - Threads: 1..N threads, each pinned to its own CPU, calling at once;
//    per-thread ns per call.
#include "bench.h"

#include <sched.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#  include <cpuid.h>
#endif

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "args.h"
#include "gettime_perf.h"
#include "json.h"
#include "lib/kernel_clock.h"
#include "lib/ordering.h"
#include "lib/runtime.h"
#include "lib/status.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/reader.h"
#include "vclock/vclock.h"
#if __has_include("vclock/vclock.hpp")
#  include "vclock/vclock.hpp"
#  define VCLOCK_BENCH_HAVE_HPP 1
#endif
#if defined(VCLOCK_HAVE_ABSL)
#  include "absl/time/clock.h"
#endif

namespace vclock::cli {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) {
        cpus.push_back(cpu);
      }
    }
  }
  return cpus;
}

bool pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

bool has_rdtscp() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(0x80000001u, &a, &b, &c, &d) != 0 && (d & (1u << 27)) != 0;
#else
  return false;
#endif
}

namespace {

// Kernel CLOCK_MONOTONIC_RAW through the vDSO: the timer of the hot trials,
// independent of both the library under test and of NTP slewing.
std::int64_t raw_now_ns() {
  timespec ts{};
  kernel::gettime(CLOCK_MONOTONIC_RAW, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The counter read that brackets a single timed call. LFENCE (or the
// generic header's ordered read) waits until every earlier instruction,
// the call included, has completed.
[[gnu::always_inline]] inline std::uint64_t ticks() noexcept {
#if defined(__x86_64__)
  return arch::read_counter<arch::counter_ordering::lfence>().value;
#else
  return arch::read_counter<arch::counter_ordering::ordered>().value;
#endif
}

}  // namespace

double counter_hz_or_measure(double calibrated_hz, int measure_ms) {
  if (calibrated_hz > 0) {
    return calibrated_hz;
  }
  const std::uint64_t c0 = ticks();
  const std::int64_t t0 = raw_now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(measure_ms));
  const std::uint64_t c1 = ticks();
  const std::int64_t t1 = raw_now_ns();
  return t1 > t0 ? static_cast<double>(c1 - c0) * 1e9 / static_cast<double>(t1 - t0) : 0;
}

namespace {

// ---- What is measured ---------------------------------------------------------------------

// Forces `v` into a register, so the computation of `v` cannot be dropped.
template <class T>
[[gnu::always_inline]] inline void keep(T v) noexcept {
  asm volatile("" : : "r"(v));
}

using read_fn = std::uint64_t (*)() noexcept;

// A result returned through a pointer, used as the kernel's gettime_perf
// uses it: the struct is not initialised before the call, and both fields
// are read back after it (gettime_perf's loop condition reads tv_sec and
// tv_nsec). The read-back is a store-to-load forward that the next ordered
// counter read waits for: part of what any caller of a timespec API pays.
[[gnu::always_inline]] inline std::uint64_t fold(const timespec& ts) noexcept {
  return static_cast<std::uint64_t>(ts.tv_sec) + static_cast<std::uint64_t>(ts.tv_nsec);
}

[[gnu::always_inline]] inline std::uint64_t fold(const timeval& tv) noexcept {
  return static_cast<std::uint64_t>(tv.tv_sec) + static_cast<std::uint64_t>(tv.tv_usec);
}

template <clockid_t C>
std::uint64_t vclock_ns() noexcept {
  return static_cast<std::uint64_t>(vclock_gettime_ns(C));
}

template <clockid_t C>
std::uint64_t vclock_ns_relaxed() noexcept {
  return static_cast<std::uint64_t>(vclock_gettime_ns_relaxed(C));
}

template <clockid_t C>
std::uint64_t vclock_ts() noexcept {
  timespec ts;
  vclock_gettime(C, &ts);
  return fold(ts);
}

template <clockid_t C>
std::uint64_t vclock_ts_relaxed() noexcept {
  timespec ts;
  vclock_gettime_relaxed(C, &ts);
  return fold(ts);
}

// The vDSO's clock_gettime, called through its own pointer as libc does.
// Set once in run_bench(), before anything is measured.
kernel::gettime_fn vdso_gettime = nullptr;

template <clockid_t C>
std::uint64_t vdso_ts() noexcept {
  timespec ts;
  vdso_gettime(C, &ts);
  return fold(ts);
}

template <clockid_t C>
std::uint64_t syscall_ts() noexcept {
  timespec ts;
  syscall(SYS_clock_gettime, C, &ts);
  return fold(ts);
}

template <clockid_t C>
std::uint64_t libc_ts() noexcept {
  timespec ts;
  clock_gettime(C, &ts);
  return fold(ts);
}

std::uint64_t libc_gettimeofday() noexcept {
  timeval tv;
  gettimeofday(&tv, nullptr);
  return fold(tv);
}

std::uint64_t vclock_tod() noexcept {
  timeval tv;
  vclock_gettimeofday(&tv, nullptr);
  return fold(tv);
}

std::uint64_t libc_time() noexcept { return static_cast<std::uint64_t>(time(nullptr)); }

std::uint64_t vclock_time_s() noexcept { return static_cast<std::uint64_t>(vclock_time(nullptr)); }

template <arch::counter_ordering O>
std::uint64_t bare_counter() noexcept {
  return arch::read_counter<O>().value;
}

// The floor of the single-call measurements: the two bracketing reads.
std::uint64_t nothing() noexcept { return 0; }

// ---- The floor -------------------------------------------------------------------------------
//
// Where the ns between a bare counter read (inlined in the loop) and
// vclock_gettime_ns(MONOTONIC) go. Each function is reached by a direct
// call from the loop and adds one step to the one before; none calls the
// library (but the last inlines its reader). add_floor() instantiates them
// for the ordering the library chose and for the relaxed rdtsc.

// A page of the bench's own (vclock/page.h), of which only the hot line is
// used. Written once by init_floor_page(), before anything is measured, and
// never again: the seq stays even, so the reader always takes its fast path.
page floor_page{};

void init_floor_page() noexcept {
  clock_line& l = floor_page.hot;
  l.seq = 0;
  l.mult = 1'652'000'000;  // 0.3846 ns per tick (2.6 GHz) in 32.32 fixed point
  l.cycle_last = ticks();
  // Nothing republishes this line, so every delta of the run must pass the
  // check; the compare costs the same whatever the bound. (delta * mult
  // wraps after a few seconds: harmless, the result is only summed.)
  l.max_delta = std::numeric_limits<std::uint64_t>::max();
  l.mono_ns = 1'000'000'000'000'000'000;
}

// x86-64's fixed shift, an immediate as in the reader (detail::load_shift);
// elsewhere the reader loads it from the page, a difference of one load.
constexpr unsigned floor_shift = arch::fixed_shift != 0 ? arch::fixed_shift : 32;

// The cost of a call from this loop. The empty volatile asm emits nothing;
// it keeps GCC from finding the function const and hoisting the call out
// of the loop, which noinline alone does not forbid.
[[gnu::noinline]] std::uint64_t call_ret() noexcept {
  asm volatile("");
  return 0;
}

template <arch::counter_ordering O>
[[gnu::noinline]] std::uint64_t called_read() noexcept {
  return arch::read_counter<O>().value;
}

// "The floor: the fenced read plus the multiply chain." Plain loads, after
// the counter read as in the reader, so they overlap the ordered read.
template <arch::counter_ordering O>
[[gnu::noinline]] std::uint64_t called_read_scaled() noexcept {
  const std::uint64_t now = arch::read_counter<O>().value;
  const clock_line& l = floor_page.hot;
  return static_cast<std::uint64_t>(l.mono_ns) + (((now - l.cycle_last) * l.mult) >> floor_shift);
}

// The same, returned as a timespec through the caller's pointer, as
// vclock_gettime() does: the split of the base into seconds overlaps the
// counter read; what the timespec form adds after it is the carry test and
// the two stores, which the next ordered read waits for.
template <arch::counter_ordering O>
[[gnu::noinline]] int called_read_scaled_timespec(timespec* ts) noexcept {
  const std::uint64_t now = arch::read_counter<O>().value;
  const clock_line& l = floor_page.hot;
  const auto elapsed = static_cast<std::int64_t>(((now - l.cycle_last) * l.mult) >> floor_shift);
  *ts = detail::as_timespec::finish(detail::as_timespec::prepare(l.mono_ns, 0), elapsed);
  return 0;
}

template <arch::counter_ordering O>
std::uint64_t floor_timespec() noexcept {
  timespec ts;
  called_read_scaled_timespec<O>(&ts);
  return fold(ts);
}

// The reader's way out, as careful_ns() in src/lib/api.cc: out of line and
// cold, so the fast path has the same shape. Never taken.
[[gnu::cold, gnu::noinline]] std::uint64_t floor_careful() noexcept {
  return static_cast<std::uint64_t>(vclock_gettime_ns(CLOCK_MONOTONIC));
}

[[gnu::cold, gnu::noinline]] int floor_careful_timespec(timespec* ts) noexcept {
  return vclock_gettime(CLOCK_MONOTONIC, ts);
}

// The library's own hot path (detail::try_read_fast(), the code every
// entry point inlines) for MONOTONIC on floor_page, called directly: the
// gap between these rows and vclock_gettime_ns / vclock_gettime
// (MONOTONIC) is the clock-id dispatch and the PLT/ifunc jump.
template <arch::counter_ordering O>
[[gnu::noinline]] std::uint64_t reader_ns() noexcept {
  std::int64_t r = 0;
  if (detail::try_read_fast<detail::clock_kind::monotonic>(
          floor_page, [] { return arch::read_counter<O>(); }, r)) [[likely]] {
    return static_cast<std::uint64_t>(r);
  }
  return floor_careful();
}

template <arch::counter_ordering O>
[[gnu::noinline]] int reader_timespec(timespec* ts) noexcept {
  timespec r{};
  if (detail::try_read_fast<detail::clock_kind::monotonic, detail::as_timespec>(
          floor_page, [] { return arch::read_counter<O>(); }, r)) [[likely]] {
    *ts = r;
    return 0;
  }
  return floor_careful_timespec(ts);
}

template <arch::counter_ordering O>
std::uint64_t reader_timespec_call() noexcept {
  timespec ts;
  reader_timespec<O>(&ts);
  return fold(ts);
}

#if defined(VCLOCK_BENCH_HAVE_HPP)
std::uint64_t vclock_steady_now() noexcept {
  return static_cast<std::uint64_t>(vclock::steady_clock::now().time_since_epoch().count());
}
#endif

#if defined(VCLOCK_HAVE_ABSL)
std::uint64_t absl_now() noexcept {
  return static_cast<std::uint64_t>(absl::GetCurrentTimeNanos());
}
#endif

// ---- The measuring loops --------------------------------------------------------------------

// A set of byte ranges whose cache lines are flushed before each cold call.
class flush_set {
 public:
  void add(const void* begin, std::size_t bytes, const std::string& what) {
    constexpr std::uintptr_t line = 64;
    const auto first = reinterpret_cast<std::uintptr_t>(begin) & ~(line - 1);
    const auto end = reinterpret_cast<std::uintptr_t>(begin) + bytes;
    for (std::uintptr_t a = first; a < end; a += line) {
      lines_.push_back(reinterpret_cast<const char*>(a));
    }
    std::sort(lines_.begin(), lines_.end());
    lines_.erase(std::unique(lines_.begin(), lines_.end()), lines_.end());
    parts_.push_back(strformat("%s (%zu B)", what.c_str(), bytes));
  }

  // CLFLUSH evicts the line from every cache level of every CPU; MFENCE
  // waits until all of them are done, before the timed call starts.
  void evict() const noexcept {
#if defined(__x86_64__)
    for (const char* p : lines_) {
      asm volatile("clflush %0" : : "m"(*p) : "memory");
    }
    asm volatile("mfence" ::: "memory");
#endif
  }

  std::size_t lines() const { return lines_.size(); }
  const std::vector<std::string>& parts() const { return parts_; }

 private:
  std::vector<const char*> lines_;
  std::vector<std::string> parts_;
};

template <read_fn Read>
[[gnu::noinline]] std::uint64_t hot_loop(std::uint64_t iterations) noexcept {
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    sum += Read();
  }
  return sum;
}

[[gnu::always_inline]] inline std::uint32_t clamp_ticks(std::uint64_t t) noexcept {
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(t, 0xffffffffu));
}

template <read_fn Read>
[[gnu::noinline]] void timed_calls(std::uint32_t* out, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t t0 = ticks();
    keep(Read());
    const std::uint64_t t1 = ticks();
    out[i] = clamp_ticks(t1 - t0);
  }
}

template <read_fn Read>
[[gnu::noinline]] std::uint32_t cold_call(const flush_set& flush) noexcept {
  flush.evict();
  const std::uint64_t t0 = ticks();
  keep(Read());
  const std::uint64_t t1 = ticks();
  return clamp_ticks(t1 - t0);
}

struct contender {
  std::string group;     // vdso, vclock, kernel, libc, c++, absl, counter, floor
  std::string function;  // what is called
  std::string clock;     // "MONOTONIC"; empty for calls that take no clock
  std::uint64_t (*loop)(std::uint64_t) noexcept;
  void (*timed)(std::uint32_t*, std::size_t) noexcept;
  std::uint32_t (*cold)(const flush_set&) noexcept;

  std::string name() const { return clock.empty() ? function : function + "(" + clock + ")"; }
};

template <read_fn Read>
contender make(std::string group, std::string function, std::string clock = "") {
  return {std::move(group), std::move(function), std::move(clock),
          hot_loop<Read>,   timed_calls<Read>,   cold_call<Read>};
}

// The vDSO and vclock forms of one clock.
template <clockid_t C>
void add_clock(std::vector<contender>& out, const std::string& clock, bool all_forms) {
  if (vdso_gettime != nullptr) {
    out.push_back(make<vdso_ts<C>>("vdso", "__vdso_clock_gettime", clock));
  }
  out.push_back(make<vclock_ns<C>>("vclock", "vclock_gettime_ns", clock));
  out.push_back(make<vclock_ns_relaxed<C>>("vclock", "vclock_gettime_ns_relaxed", clock));
  out.push_back(make<vclock_ts<C>>("vclock", "vclock_gettime", clock));
  if (all_forms) {
    out.push_back(make<vclock_ts_relaxed<C>>("vclock", "vclock_gettime_relaxed", clock));
  }
}

void add_all_clocks(std::vector<contender>& out, bool all_forms) {
  add_clock<CLOCK_MONOTONIC>(out, "MONOTONIC", all_forms);
  add_clock<CLOCK_REALTIME>(out, "REALTIME", all_forms);
  add_clock<CLOCK_MONOTONIC_RAW>(out, "MONOTONIC_RAW", all_forms);
  add_clock<CLOCK_BOOTTIME>(out, "BOOTTIME", all_forms);
  add_clock<CLOCK_TAI>(out, "TAI", all_forms);
  add_clock<CLOCK_MONOTONIC_COARSE>(out, "MONOTONIC_COARSE", all_forms);
  add_clock<CLOCK_REALTIME_COARSE>(out, "REALTIME_COARSE", all_forms);
}

void add_counters(std::vector<contender>& out) {
#if defined(__x86_64__)
  using arch::counter_ordering;
  using arch::ordering_name;
  out.push_back(
      make<bare_counter<counter_ordering::none>>("counter", ordering_name(counter_ordering::none)));
  out.push_back(make<bare_counter<counter_ordering::lfence>>(
      "counter", ordering_name(counter_ordering::lfence)));
  out.push_back(make<bare_counter<counter_ordering::mfence>>(
      "counter", ordering_name(counter_ordering::mfence)));
  if (has_rdtscp()) {
    out.push_back(make<bare_counter<counter_ordering::rdtscp>>(
        "counter", ordering_name(counter_ordering::rdtscp)));
  }
#else
  out.push_back(make<bare_counter<arch::counter_ordering::none>>("counter", arch::counter_name));
#endif
}

template <arch::counter_ordering O>
void add_floor_reads(std::vector<contender>& out) {
  const std::string read = arch::ordering_name(O);
  out.push_back(make<called_read<O>>("floor", "called " + read));
  out.push_back(make<called_read_scaled<O>>("floor", "called " + read + " + mult/shift"));
  out.push_back(make<floor_timespec<O>>("floor", "called " + read + " + mult/shift, timespec"));
  out.push_back(make<reader_ns<O>>("floor", "vclock's reader, no dispatch (" + read + ")"));
  out.push_back(make<reader_timespec_call<O>>(
      "floor", "vclock's reader, no dispatch (" + read + "), timespec"));
}

// The floor rows, with the ordering the library's ordered entry points use:
// the same choice as the ifunc resolvers in src/lib/api.cc.
void add_floor(std::vector<contender>& out) {
  out.push_back(make<call_ret>("floor", "call+ret"));
#if defined(__x86_64__)
  // The relaxed entry points' floor: the bare rdtsc.
  add_floor_reads<arch::counter_ordering::none>(out);
  using arch::counter_ordering;
  switch (chosen_ordering()) {
    case counter_ordering::mfence:
      add_floor_reads<counter_ordering::mfence>(out);
      break;
    case counter_ordering::rdtscp:
      add_floor_reads<counter_ordering::rdtscp>(out);
      break;
    default:
      add_floor_reads<counter_ordering::lfence>(out);
      break;
  }
#else
  add_floor_reads<arch::counter_ordering::ordered>(out);
#endif
}

// Every contender of the hot table, grouped by clock.
std::vector<contender> hot_contenders() {
  std::vector<contender> out;
  add_all_clocks(out, /*all_forms=*/true);
  out.push_back(make<syscall_ts<CLOCK_MONOTONIC>>("kernel", "SYS_clock_gettime", "MONOTONIC"));
  out.push_back(make<libc_ts<CLOCK_MONOTONIC>>("libc", "clock_gettime", "MONOTONIC"));
  out.push_back(make<libc_gettimeofday>("libc", "gettimeofday"));
  out.push_back(make<vclock_tod>("vclock", "vclock_gettimeofday"));
  out.push_back(make<libc_time>("libc", "time"));
  out.push_back(make<vclock_time_s>("vclock", "vclock_time"));
#if defined(VCLOCK_BENCH_HAVE_HPP)
  out.push_back(make<vclock_steady_now>("c++", "vclock::steady_clock::now"));
#endif
#if defined(VCLOCK_HAVE_ABSL)
  out.push_back(make<absl_now>("absl", "absl::GetCurrentTimeNanos"));
#endif
  add_counters(out);
  add_floor(out);
  return out;
}

// The single-call sections: the headline clock in every form, or (--cold)
// every clock; always the floor.
std::vector<contender> single_call_contenders(bool every_clock) {
  std::vector<contender> out;
  if (every_clock) {
    add_all_clocks(out, /*all_forms=*/false);
  } else {
    add_clock<CLOCK_MONOTONIC>(out, "MONOTONIC", /*all_forms=*/false);
  }
  out.push_back(make<nothing>("floor", "(two counter reads, no call)"));
  return out;
}

// ---- Statistics -----------------------------------------------------------------------------

// Nearest-rank percentile of sorted `v`; p in [0, 1].
template <class T>
T percentile(const std::vector<T>& sorted, double p) {
  if (sorted.empty()) {
    return T{};
  }
  const double rank = std::ceil(p * static_cast<double>(sorted.size()));
  const auto i = static_cast<std::size_t>(std::max(rank, 1.0)) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

template <class T>
std::vector<T> sorted(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// ---- The plan of a run ----------------------------------------------------------------------

struct bench_options {
  bool quick = false;
  bool json = false;
  bool cold_every_clock = false;
  bool gettime_perf = false;
  std::int64_t threads = 0;  // 0: as many as the process may use
};

struct bench_plan {
  int trials;
  double trial_ms;
  std::size_t cold_samples;  // per contender
  std::size_t tail_calls;    // per contender
  int thread_trials;
  double thread_trial_ms;
};

// The full run takes about a minute; --quick well under 15 s.
constexpr bench_plan full_plan{20, 50, 5000, 1'000'000, 5, 50};
constexpr bench_plan quick_plan{10, 10, 1000, 200'000, 5, 10};

struct machine {
  status_snapshot status;
  std::string cpu_model;
  std::string kernel_release;
  std::vector<int> cpus;  // allowed
  int pinned_cpu = -1;
  bool rdtscp = false;
  double load_average = -1;  // 1-minute, at the start: a busy machine widens the medians
};

double read_load_average() {
  std::ifstream in("/proc/loadavg");
  double load = -1;
  in >> load;
  return in ? load : -1;
}

std::string read_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("model name") || line.starts_with("Hardware")) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) {
        return line.substr(colon + 2);
      }
    }
  }
  return "unknown";
}

// Starts the timekeeper and waits for calibration first, so that vclock is
// in counter mode before anything is measured; then pins this thread. The
// timekeeper thread was created before the pinning and stays unpinned.
machine prepare_machine() {
  machine m;
  m.status = read_status(2000);
  m.cpu_model = read_cpu_model();
  utsname u{};
  m.kernel_release = uname(&u) == 0 ? u.release : "unknown";
  m.cpus = allowed_cpus();
  m.rdtscp = has_rdtscp();
  m.load_average = read_load_average();
  const int here = sched_getcpu();
  const bool here_allowed = std::find(m.cpus.begin(), m.cpus.end(), here) != m.cpus.end();
  const int target = here_allowed ? here : (m.cpus.empty() ? -1 : m.cpus.front());
  if (target >= 0 && pin_current_thread(target)) {
    m.pinned_cpu = target;
  }
  return m;
}

// ---- Hot ------------------------------------------------------------------------------------

struct hot_row {
  const contender* who;
  double min_ns;
  double median_ns;
};

double time_loop_ns(const contender& c, std::uint64_t iterations) {
  const std::int64_t t0 = raw_now_ns();
  keep(c.loop(iterations));
  const std::int64_t t1 = raw_now_ns();
  return static_cast<double>(t1 - t0);
}

// Iterations for one trial of at least trial_ns. Sized from the faster of
// two timed passes, so that a preempted pass cannot shorten the trials.
std::uint64_t iterations_for(const contender& c, double trial_ns) {
  std::uint64_t n = 64;
  while (time_loop_ns(c, n) < trial_ns / 16 && n < (std::uint64_t{1} << 40)) {
    n *= 4;
  }
  const double per_call = std::min(time_loop_ns(c, n), time_loop_ns(c, n)) / static_cast<double>(n);
  const double wanted = std::ceil(1.05 * trial_ns / std::max(per_call, 0.01));
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(wanted));
}

std::vector<hot_row> measure_hot(const std::vector<contender>& cs, const bench_plan& plan) {
  const double trial_ns = plan.trial_ms * 1e6;
  std::vector<std::uint64_t> iterations;
  for (const contender& c : cs) {
    iterations.push_back(iterations_for(c, trial_ns));
  }
  const auto trials = static_cast<std::size_t>(plan.trials);
  std::vector<std::vector<double>> per_call(cs.size(), std::vector<double>(trials));
  for (std::size_t t = 0; t < trials; ++t) {
    for (std::size_t k = 0; k < cs.size(); ++k) {
      const std::size_t i = (k + t) % cs.size();  // rotate who goes first
      per_call[i][t] = time_loop_ns(cs[i], iterations[i]) / static_cast<double>(iterations[i]);
    }
  }
  std::vector<hot_row> rows;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const std::vector<double> s = sorted(per_call[i]);
    rows.push_back({&cs[i], s.front(), percentile(s, 0.5)});
  }
  return rows;
}

// min_ns of the vDSO row of `clock`, or NaN.
double vdso_min_ns(const std::vector<hot_row>& rows, const std::string& clock) {
  for (const hot_row& r : rows) {
    if (r.who->group == "vdso" && r.who->clock == clock) {
      return r.min_ns;
    }
  }
  return std::nan("");
}

// ---- Single calls: cold and tails -----------------------------------------------------------

struct tick_row {
  const contender* who;
  std::vector<std::uint32_t> ticks;  // sorted
};

// The code and data of vclock's and the vDSO's entry points. vDSO: its
// whole text and its time-data page (the first page of [vvar]; the others
// may be unmapped and would fault). vclock: its page, and its code from
// 4 KiB below the lowest entry point measured to 4 KiB above the highest,
// which takes in the per-clock helpers the entry points jump to. Left warm
// for every contender alike: the caller's code, the PLT/GOT slot or
// function pointer it calls through, the stack, TLBs, branch predictors.
flush_set cold_flush_set() {
  flush_set f;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const bool vdso = line.ends_with("[vdso]");
    const bool vvar = line.ends_with("[vvar]");
    if (!vdso && !vvar) {
      continue;
    }
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &begin, &end) != 2 || end <= begin) {
      continue;
    }
    const std::size_t bytes = vdso ? end - begin : std::min<std::size_t>(end - begin, 4096);
    f.add(reinterpret_cast<const void*>(begin), bytes, vdso ? "vDSO text" : "vDSO data page");
  }
  // Resolved entry points: taking the address of an ifunc yields the
  // implementation it chose.
  const std::uintptr_t entries[] = {
      reinterpret_cast<std::uintptr_t>(&vclock_gettime_ns),
      reinterpret_cast<std::uintptr_t>(&vclock_gettime_ns_relaxed),
      reinterpret_cast<std::uintptr_t>(&vclock_gettime),
      reinterpret_cast<std::uintptr_t>(&vclock_gettime_relaxed),
  };
  constexpr std::uintptr_t margin = 4096;
  const std::uintptr_t low = *std::min_element(std::begin(entries), std::end(entries)) - margin;
  const std::uintptr_t high = *std::max_element(std::begin(entries), std::end(entries)) + margin;
  f.add(reinterpret_cast<const void*>(low), high - low, "vclock code");
  f.add(&detail::the_page, sizeof detail::the_page, "vclock page");
  return f;
}

std::vector<tick_row> measure_cold(const std::vector<contender>& cs, std::size_t samples,
                                   const flush_set& flush) {
  std::vector<tick_row> rows;
  for (const contender& c : cs) {
    rows.push_back({&c, std::vector<std::uint32_t>(samples)});
  }
  // One call per contender in turn: the same flush before every call.
  for (std::size_t s = 0; s < samples; ++s) {
    for (tick_row& r : rows) {
      r.ticks[s] = r.who->cold(flush);
    }
  }
  for (tick_row& r : rows) {
    std::sort(r.ticks.begin(), r.ticks.end());
  }
  return rows;
}

std::vector<tick_row> measure_tails(const std::vector<contender>& cs, std::size_t calls) {
  constexpr std::size_t block = 4096;
  std::vector<tick_row> rows;
  for (const contender& c : cs) {
    rows.push_back({&c, std::vector<std::uint32_t>(calls)});
  }
  for (std::size_t done = 0; done < calls; done += block) {
    const std::size_t n = std::min(block, calls - done);
    for (tick_row& r : rows) {
      r.who->timed(r.ticks.data() + done, n);
    }
  }
  for (tick_row& r : rows) {
    std::sort(r.ticks.begin(), r.ticks.end());
  }
  return rows;
}

// Median ticks of the vDSO's row, or NaN.
double vdso_median_ticks(const std::vector<tick_row>& rows, const std::string& clock) {
  for (const tick_row& r : rows) {
    if (r.who->group == "vdso" && r.who->clock == clock) {
      return percentile(r.ticks, 0.5);
    }
  }
  return std::nan("");
}

// ---- Threads --------------------------------------------------------------------------------

struct thread_row {
  int threads;
  const contender* who;
  double mean_ns;   // mean over threads of each thread's best trial
  double worst_ns;  // the slowest thread's best trial
};

// Each thread's best ns per call over `trials` trials, all threads starting
// each trial together.
std::vector<double> run_threads(const contender& c, std::uint64_t iterations, int threads,
                                int trials, const std::vector<int>& cpus) {
  std::vector<double> best(static_cast<std::size_t>(threads),
                           std::numeric_limits<double>::infinity());
  std::barrier sync(threads);
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&, i] {
      const auto me = static_cast<std::size_t>(i);
      if (!cpus.empty()) {
        pin_current_thread(cpus[me % cpus.size()]);
      }
      for (int t = 0; t < trials; ++t) {
        sync.arrive_and_wait();
        const double ns = time_loop_ns(c, iterations) / static_cast<double>(iterations);
        best[me] = std::min(best[me], ns);
      }
    });
  }
  for (std::thread& t : pool) {
    t.join();
  }
  return best;
}

// 1..N, or powers of two and N when N is large.
std::vector<int> thread_counts(int n) {
  std::vector<int> counts;
  for (int k = 1; k <= n; k = n <= 8 ? k + 1 : k * 2) {
    counts.push_back(k);
  }
  if (counts.back() != n) {
    counts.push_back(n);
  }
  return counts;
}

std::vector<thread_row> measure_threads(const std::vector<hot_row>& hot, int max_threads,
                                        const bench_plan& plan, const std::vector<int>& cpus) {
  std::vector<thread_row> rows;
  for (const int n : thread_counts(max_threads)) {
    for (const hot_row& h : hot) {
      const contender& c = *h.who;
      const bool wanted =
          c.clock == "MONOTONIC" && (c.function == "vclock_gettime_ns" || c.group == "vdso");
      if (!wanted) {
        continue;
      }
      const auto iterations = static_cast<std::uint64_t>(plan.thread_trial_ms * 1e6 / h.min_ns);
      const std::vector<double> best =
          run_threads(c, std::max<std::uint64_t>(iterations, 1), n, plan.thread_trials, cpus);
      double sum = 0;
      for (const double b : best) {
        sum += b;
      }
      rows.push_back({n, &c, sum / n, *std::max_element(best.begin(), best.end())});
    }
  }
  return rows;
}

double one_thread_ns(const std::vector<thread_row>& rows, const contender* who) {
  for (const thread_row& r : rows) {
    if (r.threads == 1 && r.who == who) {
      return r.mean_ns;
    }
  }
  return std::nan("");
}

// ---- Output ---------------------------------------------------------------------------------

struct results {
  machine m;
  bench_plan plan = full_plan;
  bench_options options;
  std::vector<hot_row> hot;
  flush_set flush;
  std::vector<tick_row> cold;
  std::vector<tick_row> tails;
  std::vector<thread_row> threads;
};

std::string fixed(double v, int decimals) {
  return std::isfinite(v) ? strformat("%.*f", decimals, v) : "-";
}

std::string ratio_text(double v) { return std::isfinite(v) ? strformat("%.2fx", v) : "-"; }

// Rounded for JSON: sub-0.01 ns digits are noise.
double round2(double v) { return std::round(v * 100) / 100; }

std::string header_text(const results& r) {
  const status_snapshot& s = r.m.status;
  std::string out = "vclock bench";
  out += r.options.quick ? " --quick\n" : "\n";
  out += strformat("cpu        %s; %zu CPUs usable, pinned to CPU %d; load average %.2f\n",
                   r.m.cpu_model.c_str(), r.m.cpus.size(), r.m.pinned_cpu, r.m.load_average);
  out += strformat("counter    %s at %.3f MHz%s; ordered reads use %s; rdtscp %s\n",
                   s.counter.c_str(), s.counter_hz / 1e6, s.invariant_counter ? " (invariant)" : "",
                   s.ordering.c_str(), r.m.rdtscp ? "yes" : "no");
  out += strformat("kernel     %s; clocksource %s; vDSO %s\n", r.m.kernel_release.c_str(),
                   s.kernel_clocksource.c_str(), s.has_vdso ? "yes" : "no");
  out += "vclock     " +
         (s.counter_mode ? std::string("counter mode")
                         : "FALLBACK mode (" + s.reason + "): vclock rows measure the kernel") +
         "\n";
  return out;
}

std::string hot_text(const results& r) {
  const double base = vdso_min_ns(r.hot, "MONOTONIC");
  text_table t({"group", "call", "min ns", "median ns", "vs vDSO MONOTONIC", "vs vDSO same clock"});
  for (const hot_row& h : r.hot) {
    t.row()
        .left(h.who->group)
        .left(h.who->name())
        .right(fixed(h.min_ns, 2))
        .right(fixed(h.median_ns, 2))
        .right(ratio_text(h.min_ns / base))
        .right(ratio_text(h.min_ns / vdso_min_ns(r.hot, h.who->clock)));
  }
  return strformat(
             "\nhot cache: fastest of %d trials of >= %.0f ms, contenders interleaved; "
             "ratios of min ns\n",
             r.plan.trials, r.plan.trial_ms) +
         t.str();
}

std::string cold_text(const results& r) {
  text_table t({"call", "median ticks", "p90 ticks", "median vs vDSO"});
  for (const tick_row& c : r.cold) {
    const double base = vdso_median_ticks(r.cold, c.who->clock);
    t.row()
        .left(c.who->name())
        .right(std::to_string(percentile(c.ticks, 0.5)))
        .right(std::to_string(percentile(c.ticks, 0.9)))
        .right(ratio_text(percentile(c.ticks, 0.5) / base));
  }
  std::string flushed;
  for (const std::string& p : r.flush.parts()) {
    flushed += (flushed.empty() ? "" : ", ") + p;
  }
  return strformat(
             "\ncold cache: %zu single calls each, after CLFLUSH of %zu lines before "
             "every call:\n  %s\n",
             r.cold.empty() ? 0 : r.cold.front().ticks.size(), r.flush.lines(), flushed.c_str()) +
         t.str();
}

std::string tails_text(const results& r) {
  text_table t({"call", "p50 ticks", "p99 ticks", "p99.9 ticks", "max ticks"});
  for (const tick_row& c : r.tails) {
    t.row()
        .left(c.who->name())
        .right(std::to_string(percentile(c.ticks, 0.5)))
        .right(std::to_string(percentile(c.ticks, 0.99)))
        .right(std::to_string(percentile(c.ticks, 0.999)))
        .right(std::to_string(c.ticks.empty() ? 0 : c.ticks.back()));
  }
  return strformat(
             "\ntails: %zu single calls each, counter read around each, timekeeper "
             "running\n",
             r.tails.empty() ? 0 : r.tails.front().ticks.size()) +
         t.str();
}

std::string threads_text(const results& r) {
  text_table t({"threads", "call", "ns per call (mean)", "slowest thread", "vs 1 thread"});
  for (const thread_row& row : r.threads) {
    t.row()
        .right(std::to_string(row.threads))
        .left(row.who->name())
        .right(fixed(row.mean_ns, 2))
        .right(fixed(row.worst_ns, 2))
        .right(ratio_text(row.mean_ns / one_thread_ns(r.threads, row.who)));
  }
  return strformat(
             "\nthreads: all calling at once, each pinned to its own CPU (modulo %zu); "
             "best of %d trials of >= %.0f ms per thread\n",
             r.m.cpus.size(), r.plan.thread_trials, r.plan.thread_trial_ms) +
         t.str();
}

void json_machine(json_writer& j, const results& r) {
  const status_snapshot& s = r.m.status;
  j.key("machine")
      .begin_object()
      .field("cpu_model", r.m.cpu_model)
      .field("kernel", r.m.kernel_release)
      .field("cpus", r.m.cpus.size())
      .field("pinned_cpu", r.m.pinned_cpu)
      .field("load_average", r.m.load_average)
      .field("counter", s.counter)
      .field("counter_hz", s.counter_hz)
      .field("invariant_counter", s.invariant_counter)
      .field("ordering", s.ordering)
      .field("has_rdtscp", r.m.rdtscp)
      .field("kernel_clocksource", s.kernel_clocksource)
      .field("has_vdso", s.has_vdso)
      .field("mode", s.counter_mode ? "counter" : "fallback")
      .field("reason", s.reason)
      .end_object();
}

void json_hot(json_writer& j, const results& r) {
  const double base = vdso_min_ns(r.hot, "MONOTONIC");
  j.key("method")
      .begin_object()
      .field("trials", r.plan.trials)
      .field("trial_ms", r.plan.trial_ms)
      .field("interleaved", true)
      .field("timer", "CLOCK_MONOTONIC_RAW")
      .field("baseline", "__vdso_clock_gettime(MONOTONIC)")
      .end_object();
  j.key("rows").begin_array();
  for (const hot_row& h : r.hot) {
    j.begin_object()
        .field("name", h.who->name())
        .field("group", h.who->group)
        .field("function", h.who->function)
        .field("clock", h.who->clock)
        .field("min_ns", round2(h.min_ns))
        .field("median_ns", round2(h.median_ns))
        .field("ratio", round2(h.min_ns / base))
        .field("ratio_same_clock", round2(h.min_ns / vdso_min_ns(r.hot, h.who->clock)))
        .end_object();
  }
  j.end_array();
}

void json_ticks(json_writer& j, const std::vector<tick_row>& rows, bool tails) {
  j.key("rows").begin_array();
  for (const tick_row& c : rows) {
    j.begin_object().field("name", c.who->name()).field("group", c.who->group);
    if (tails) {
      j.field("p50_ticks", percentile(c.ticks, 0.5))
          .field("p99_ticks", percentile(c.ticks, 0.99))
          .field("p999_ticks", percentile(c.ticks, 0.999))
          .field("max_ticks", c.ticks.empty() ? 0u : c.ticks.back());
    } else {
      const double median = percentile(c.ticks, 0.5);
      j.field("median_ticks", percentile(c.ticks, 0.5))
          .field("p90_ticks", percentile(c.ticks, 0.9))
          .field("ratio_median", round2(median / vdso_median_ticks(rows, c.who->clock)));
    }
    j.end_object();
  }
  j.end_array();
}

void json_sections(json_writer& j, const results& r) {
  j.key("cold").begin_object().field("samples", r.plan.cold_samples);
  j.field("flushed_lines", r.flush.lines()).key("flushed").begin_array();
  for (const std::string& p : r.flush.parts()) {
    j.value(p);
  }
  j.end_array();
  json_ticks(j, r.cold, false);
  j.end_object();
  j.key("tails").begin_object().field("calls", r.plan.tail_calls);
  json_ticks(j, r.tails, true);
  j.end_object();
  j.key("threads").begin_object().field("trials", r.plan.thread_trials);
  j.key("rows").begin_array();
  for (const thread_row& row : r.threads) {
    j.begin_object()
        .field("threads", row.threads)
        .field("name", row.who->name())
        .field("mean_ns", round2(row.mean_ns))
        .field("worst_ns", round2(row.worst_ns))
        .field("ratio", round2(row.mean_ns / one_thread_ns(r.threads, row.who)))
        .end_object();
  }
  j.end_array().end_object();
}

void print_results(const results& r) {
  if (r.options.json) {
    json_writer j;
    j.begin_object().field("command", "bench").field("quick", r.options.quick);
    json_machine(j, r);
    json_hot(j, r);
    json_sections(j, r);
    j.end_object();
    std::fputs(j.str().c_str(), stdout);
    return;
  }
  const std::string text =
      header_text(r) + hot_text(r) + cold_text(r) + tails_text(r) + threads_text(r);
  std::fputs(text.c_str(), stdout);
}

int print_help(const option_parser& parser) {
  std::printf(
      "usage: vclock bench [--quick] [--json] [--cold] [--threads N]\n"
      "       vclock bench --gettime-perf [--quick] [--json]\n\n"
      "Measures, side by side in one process pinned to one CPU: vclock (ordered and\n"
      "relaxed, timespec and _ns forms) and the kernel's vDSO for every fast-path clock,\n"
      "the system call, libc's clock_gettime, gettimeofday and time, the bare counter,\n"
      "and the floor between the counter and vclock (a call, the ordered read, the\n"
      "multiply and shift, vclock's own reader without the dispatch).\n"
      "Hot cache: fastest of %d trials of >= %.0f ms (--quick: %d of >= %.0f ms), ratios\n"
      "to the vDSO's CLOCK_MONOTONIC. Cold cache: median and p90 ticks per call after\n"
      "CLFLUSH of the code and data lines. Tails: p50..max ticks of single calls.\n"
      "Threads: per-thread ns per call with 1..N threads calling at once.\n"
      "A full run takes about a minute; --quick under 15 s.\n"
      "--gettime-perf runs instead the kernel selftest's loop (gettime_perf.c): the calls\n"
      "that fit in a span of the clock itself, for the vDSO and vclock's timespec and\n"
      "_ns forms; best of 10 rounds of 0.3 s, about 45 s (--quick: 3 of 0.1 s, 5 s).\n\n%s",
      full_plan.trials, full_plan.trial_ms, quick_plan.trials, quick_plan.trial_ms,
      parser.options_help().c_str());
  return exit_ok;
}

}  // namespace

int run_bench(std::span<char* const> args) {
  bench_options o;
  option_parser parser("bench");
  parser.add_flag("--quick", &o.quick, "fewer, shorter trials: under 15 s in all");
  parser.add_flag("--json", &o.json, "print one JSON document instead of tables");
  parser.add_flag("--cold", &o.cold_every_clock,
                  "cold-cache figures for every clock, not only MONOTONIC");
  parser.add_flag("--gettime-perf", &o.gettime_perf,
                  "only the kernel's gettime_perf loop: calls per span of the clock");
  parser.add_int("--threads", "N", 1, 1024, &o.threads,
                 "measure 1..N threads at once (default: every usable CPU)");
  if (!parser.parse(args)) {
    return usage_error("bench", parser.error());
  }
  if (parser.help_requested()) {
    return print_help(parser);
  }
  if (o.gettime_perf) {
    return run_gettime_perf(o.quick, o.json);
  }

  vdso_gettime = kernel::vdso_gettime();
  init_floor_page();
  results r;
  r.m = prepare_machine();
  r.plan = o.quick ? quick_plan : full_plan;
  r.options = o;
  const std::vector<contender> hot = hot_contenders();
  const std::vector<contender> cold = single_call_contenders(o.cold_every_clock);
  const std::vector<contender> tails = single_call_contenders(false);
  r.hot = measure_hot(hot, r.plan);
  r.flush = cold_flush_set();
  r.cold = measure_cold(cold, r.plan.cold_samples, r.flush);
  r.tails = measure_tails(tails, r.plan.tail_calls);
  const int max_threads = o.threads > 0 ? static_cast<int>(o.threads)
                                        : std::max<int>(1, static_cast<int>(r.m.cpus.size()));
  r.threads = measure_threads(r.hot, max_threads, r.plan, r.m.cpus);
  print_results(r);
  return exit_ok;
}

}  // namespace vclock::cli
