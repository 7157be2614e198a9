// See bench_contenders.h. The method of each section is described at the
// top of bench.cc.
#include "cli/bench/bench_contenders.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <limits>

#include "cli/bench/bench_shim_stats.h"
#include "cli/bench/bench_timens.h"
#include "cli/cpu.h"
#include "cli/run/run.h"
#include "lib/kernel_clock.h"
#include "lib/ordering.h"
#include "lib/runtime.h"
#include "timens/store.h"
#include "timens/time_options.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/arch/cpu_features.h"
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
namespace {

// ---- What is measured ---------------------------------------------------------------------

using read_fn = std::uint64_t (*)() noexcept;

// A result returned through a pointer, used as a caller that wants the
// time uses it: the struct is not initialised before the call, and both
// fields are read back after it (gettime_perf's loop reads tv_sec after
// every call and tv_nsec in its last second: `vclock bench --gettime-perf`
// runs that loop itself). The read-back is a store-to-load forward that the
// next ordered counter read waits for: part of what any caller of a
// timespec API pays.
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

// Error-bounded time: vclock's, and what ClockBound's and fbclock's clients
// pay for theirs: a clock_gettime through libc (the vDSO) and their
// arithmetic on a shared-memory segment (read under a generation count,
// the bound grown by drift times the time since the daemon's update, in
// floating point as ClockBound's client does).
std::uint64_t vclock_bounded() noexcept {
  vclock_bounds b;
  vclock_now_bounded(CLOCK_REALTIME, &b);
  return static_cast<std::uint64_t>(b.earliest_ns ^ b.latest_ns);
}

struct shm_bound {  // as a ClockBound-like daemon would publish it
  std::atomic<std::uint32_t> generation{2};
  std::int64_t as_of_ns = 0;
  std::int64_t bound_ns = 100'000;
  double drift_ppm = 15.0;
};
shm_bound shm_bound_page;

std::uint64_t gettime_plus_shm_bound() noexcept {
  for (;;) {
    const std::uint32_t g0 = shm_bound_page.generation.load(std::memory_order_acquire);
    const std::int64_t as_of = shm_bound_page.as_of_ns;
    const std::int64_t bound = shm_bound_page.bound_ns;
    const double drift = shm_bound_page.drift_ppm;
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (shm_bound_page.generation.load(std::memory_order_acquire) != g0) continue;
    const std::int64_t now = ts.tv_sec * detail::ns_per_s + ts.tv_nsec;
    const auto grown = static_cast<std::int64_t>(static_cast<double>(now - as_of) * drift / 1e6);
    return static_cast<std::uint64_t>((now - bound - grown) ^ (now + bound + grown));
  }
}

std::uint64_t libc_time() noexcept { return static_cast<std::uint64_t>(time(nullptr)); }

std::uint64_t vclock_time_s() noexcept { return static_cast<std::uint64_t>(vclock_time(nullptr)); }

// Clock shims loaded with dlopen (prepare_contenders()) and called through
// the pointer dlsym gives, as a program calls through its bound PLT slot:
// libvclock_preload.so (what `vclock run` preloads) and libfaketime (the
// widely used shim, with FAKETIME="+0": the real time, through its code).
struct loaded_shim {
  int (*gettime)(clockid_t, timespec*) = nullptr;
  time_t (*time)(time_t*) = nullptr;
};
loaded_shim vclock_shim;
loaded_shim faketime_shim;
// The shim again, in a virtual-time namespace: a copy of the file, so that
// dlopen loads a second instance, whose constructor joins the namespace
// that VCLOCK_NS names while it runs. Offsets only, and a rate.
loaded_shim ns_offsets_shim;
loaded_shim ns_rate_shim;
// The shim counting its calls (VCLOCK_SHIM_STATS), in a helper process:
// bench_shim_stats.h. Hot loop only, as the kernel time namespace's row.
bool shim_stats_helper = false;

template <const loaded_shim& S, clockid_t C>
std::uint64_t shim_ts() noexcept {
  timespec ts;
  S.gettime(C, &ts);
  return fold(ts);
}

template <const loaded_shim& S>
std::uint64_t shim_time() noexcept {
  return static_cast<std::uint64_t>(S.time(nullptr));
}

bool load_shim(const std::string& path, loaded_shim& out) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return false;
  out.gettime = reinterpret_cast<int (*)(clockid_t, timespec*)>(dlsym(handle, "clock_gettime"));
  out.time = reinterpret_cast<time_t (*)(time_t*)>(dlsym(handle, "time"));
  if (out.gettime == nullptr || out.time == nullptr) out = {};
  return out.gettime != nullptr;
}

// Loads a copy of `shim` joined to a new namespace with `options`; the
// files are removed at once (the mappings keep them).
bool load_shim_in_namespace(const std::string& shim, const timens::time_options& options,
                            loaded_shim& out) {
  std::string dir = "/tmp/vclock-bench-ns.XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) return false;
  const std::string ns = dir + "/ns";
  const std::string copy = dir + "/libvclock_preload_ns.so";
  std::string error;
  bool ok = timens::create_timens_file(ns, "", options, error);
  if (ok) {
    std::ifstream in(shim, std::ios::binary);
    std::ofstream to(copy, std::ios::binary);
    to << in.rdbuf();
    ok = static_cast<bool>(to);
  }
  if (ok) {
    setenv("VCLOCK_NS", ns.c_str(), 1);
    ok = load_shim(copy, out);
    unsetenv("VCLOCK_NS");
  }
  unlink(copy.c_str());
  unlink(ns.c_str());
  rmdir(dir.c_str());
  return ok;
}

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
// Inline readers (vclock.hpp reads the page itself: no call, no PLT).
std::uint64_t vclock_steady_now() noexcept {
  return static_cast<std::uint64_t>(vclock::steady_clock::now().time_since_epoch().count());
}
std::uint64_t vclock_relaxed_steady_now() noexcept {
  return static_cast<std::uint64_t>(
      vclock::relaxed::steady_clock::now().time_since_epoch().count());
}
std::uint64_t vclock_system_now() noexcept {
  return static_cast<std::uint64_t>(vclock::system_clock::now().time_since_epoch().count());
}
#endif

#if defined(VCLOCK_HAVE_ABSL)
std::uint64_t absl_now() noexcept {
  return static_cast<std::uint64_t>(absl::GetCurrentTimeNanos());
}
#endif

// ---- The measuring loops --------------------------------------------------------------------

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

// Every ordered read this CPU can execute, in arch::ordered_variants' order.
template <std::size_t I = 0>
void add_ordered_counters(std::vector<contender>& out) {
  if constexpr (I < std::size(arch::ordered_variants)) {
    constexpr arch::counter_ordering o = arch::ordered_variants[I];
    if (arch::ordering_available(o)) {
      out.push_back(make<bare_counter<o>>("counter", arch::ordering_name(o)));
    }
    add_ordered_counters<I + 1>(out);
  }
}

void add_counters(std::vector<contender>& out) {
  if constexpr (arch::has_counter) {
    using arch::counter_ordering;
    out.push_back(make<bare_counter<counter_ordering::none>>(
        "counter", arch::ordering_name(counter_ordering::none)));
    add_ordered_counters(out);
  } else {
    out.push_back(make<bare_counter<arch::counter_ordering::none>>("counter", arch::counter_name));
  }
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

struct floor_set {
  using adder = void (*)(std::vector<contender>&);
  template <arch::counter_ordering O>
  static adder make() noexcept {
    return add_floor_reads<O>;
  }
};

// The floor rows, with the ordering the library's ordered entry points use:
// the same choice as the ifunc resolvers in src/lib/api.cc.
void add_floor(std::vector<contender>& out) {
  out.push_back(make<call_ret>("floor", "call+ret"));
  if constexpr (arch::has_counter) {
    // The relaxed entry points' floor: the bare counter read.
    add_floor_reads<arch::counter_ordering::none>(out);
  }
  for_ordering<floor_set>(chosen_ordering())(out);
}

}  // namespace

void prepare_contenders() {
  vdso_gettime = kernel::vdso_gettime();
  shm_bound_page.as_of_ns = kernel::now_ns(CLOCK_REALTIME);
  init_floor_page();
  std::string why;
  const std::string shim = find_shim("", why);
  if (!shim.empty() && load_shim(shim, vclock_shim)) {
    // Its first call wakes its timekeeper (unless it attached to vclockd's
    // page); give it the calibration that `vclock status` waits for (about 0.5 s on a
    // VM: the rate known to 0.5 ppm, docs/performance.md).
    timespec ts;
    vclock_shim.gettime(CLOCK_MONOTONIC, &ts);
    const timespec calibration{1, 0};
    nanosleep(&calibration, nullptr);
  }
  if (vclock_shim.gettime != nullptr) {
    shim_stats_helper = start_shim_stats_helper(shim);
    timens::time_options offsets;
    offsets.realtime_offset_ns = 86400 * detail::ns_per_s;
    offsets.monotonic_offset_ns = 3600 * detail::ns_per_s;
    load_shim_in_namespace(shim, offsets, ns_offsets_shim);
    timens::time_options rate;
    rate.rate_q32 = std::uint64_t{2} << 32;
    load_shim_in_namespace(shim, rate, ns_rate_shim);
  }
  setenv("FAKETIME", "+0", 0);
  for (const char* path : {"/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                           "/usr/lib/faketime/libfaketime.so.1", "libfaketime.so.1"}) {
    if (load_shim(path, faketime_shim)) break;
  }
}

std::vector<contender> hot_contenders() {
  std::vector<contender> out;
  add_all_clocks(out, /*all_forms=*/true);
  out.push_back(make<syscall_ts<CLOCK_MONOTONIC>>("kernel", "SYS_clock_gettime", "MONOTONIC"));
  out.push_back(make<libc_ts<CLOCK_MONOTONIC>>("libc", "clock_gettime", "MONOTONIC"));
  out.push_back(make<libc_gettimeofday>("libc", "gettimeofday"));
  out.push_back(make<vclock_tod>("vclock", "vclock_gettimeofday"));
  out.push_back(make<vclock_bounded>("vclock", "vclock_now_bounded", "REALTIME"));
  out.push_back(make<gettime_plus_shm_bound>(
      "baseline", "clock_gettime + shm bound (ClockBound-like)", "REALTIME"));
  if (vclock_shim.gettime != nullptr) {
    out.push_back(make<shim_ts<vclock_shim, CLOCK_MONOTONIC>>(
        "shim", "libvclock_preload clock_gettime", "MONOTONIC"));
  }
  if (shim_stats_helper) {
    out.push_back({"shim", "shim with stats: libvclock_preload clock_gettime", "MONOTONIC",
                   shim_stats_gettime_loop, nullptr, nullptr});
  }
  if (ns_offsets_shim.gettime != nullptr) {
    out.push_back(make<shim_ts<ns_offsets_shim, CLOCK_MONOTONIC>>(
        "ns", "shim in a namespace, offsets: clock_gettime", "MONOTONIC"));
  }
  if (ns_rate_shim.gettime != nullptr) {
    out.push_back(make<shim_ts<ns_rate_shim, CLOCK_MONOTONIC>>(
        "ns", "shim in a namespace, rate 2: clock_gettime", "MONOTONIC"));
  }
  if (faketime_shim.gettime != nullptr) {
    out.push_back(make<shim_ts<faketime_shim, CLOCK_MONOTONIC>>(
        "faketime", "libfaketime clock_gettime", "MONOTONIC"));
  }
  // Started here, after prepare_machine() pinned this thread: the helper
  // inherits the CPU. Hot loop only (no single-call or thread rows).
  static const bool timens_helper = start_timens_helper();
  if (timens_helper) {
    out.push_back({"timens", "__vdso_clock_gettime in a kernel time namespace", "MONOTONIC",
                   timens_vdso_loop, nullptr, nullptr});
  }
  out.push_back(make<libc_time>("libc", "time"));
  out.push_back(make<vclock_time_s>("vclock", "vclock_time"));
  if (vclock_shim.time != nullptr) {
    out.push_back(make<shim_time<vclock_shim>>("shim", "libvclock_preload time"));
  }
  if (shim_stats_helper) {
    out.push_back({"shim", "shim with stats: libvclock_preload time", "", shim_stats_time_loop,
                   nullptr, nullptr});
  }
  if (faketime_shim.time != nullptr) {
    out.push_back(make<shim_time<faketime_shim>>("faketime", "libfaketime time"));
  }
#if defined(VCLOCK_BENCH_HAVE_HPP)
  out.push_back(make<vclock_steady_now>("c++", "vclock::steady_clock::now"));
  out.push_back(make<vclock_relaxed_steady_now>("c++", "vclock::relaxed::steady_clock::now"));
  out.push_back(make<vclock_system_now>("c++", "vclock::system_clock::now"));
#endif
#if defined(VCLOCK_HAVE_ABSL)
  out.push_back(make<absl_now>("absl", "absl::GetCurrentTimeNanos"));
#endif
  add_counters(out);
  add_floor(out);
  return out;
}

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

}  // namespace vclock::cli
