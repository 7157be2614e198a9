// `vclock warp`: the time-warp test, two ways, for vclock's ordered and
// relaxed reads, the kernel's vDSO and the bare counter.
//
//  - ticket-lock (Ingo Molnar's time-warp-test): threads take one global
//    lock in turn, read the clock, compare with the last reading stored
//    under the lock and store their own. The lock is a fair ticket lock:
//    with a test-and-set lock the releasing thread re-takes it almost every
//    time and hardly any comparison crosses CPUs. Hand-offs between threads
//    and those that crossed CPUs (sched_getcpu()) are counted.
//  - lock-free: each thread publishes its last reading on its own cache
//    line with a release store; before each reading it acquire-loads one
//    other thread's (rotating through them), so that value happened before
//    the reading. A reading below it is a warp. No locked instruction sits
//    next to the counter read, so an unordered read shows its warps here.
//
// A warp is a reading smaller than one that happened before it. Counter
// warps are converted to ns with the calibrated counter frequency.
#include "cli/measure/warp.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/cpu.h"
#include "lib/kernel_clock.h"
#include "lib/status.h"
#include "tool/args.h"
#include "tool/json.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/reader.h"
#include "vclock/vclock.h"

namespace vclock::cli {
namespace {

// ---- Readers --------------------------------------------------------------------------------

using read_fn = std::uint64_t (*)(clockid_t) noexcept;

std::uint64_t read_vclock(clockid_t c) noexcept {
  return static_cast<std::uint64_t>(vclock_gettime_ns(c));
}

std::uint64_t read_vclock_relaxed(clockid_t c) noexcept {
  return static_cast<std::uint64_t>(vclock_gettime_ns_relaxed(c));
}

// Set once in run_warp(), before any thread starts.
kernel::gettime_fn vdso_gettime = nullptr;

std::uint64_t read_vdso(clockid_t c) noexcept {
  timespec ts{};
  vdso_gettime(c, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * detail::ns_per_s +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

template <arch::counter_ordering O>
std::uint64_t read_bare(clockid_t) noexcept {
  return arch::read_counter<O>().value;
}

// ---- The ticket-lock method -----------------------------------------------------------------

struct warp_counts {
  std::uint64_t samples = 0;
  std::uint64_t warps = 0;
  std::uint64_t max_warp = 0;   // in the reader's unit
  std::uint64_t handoffs = 0;   // ticket-lock: consecutive samples by different threads;
                                // lock-free: comparisons with another thread's reading
  std::uint64_t cross_cpu = 0;  // of those, how many were between different CPUs

  void add(const warp_counts& o) {
    samples += o.samples;
    warps += o.warps;
    max_warp = std::max(max_warp, o.max_warp);
    handoffs += o.handoffs;
    cross_cpu += o.cross_cpu;
  }
};

// FIFO: each thread waits for its own ticket, so the lock passes to the
// longest waiter and consecutive readings come from different threads.
struct ticket_lock {
  alignas(64) std::atomic<std::uint32_t> next{0};
  alignas(64) std::atomic<std::uint32_t> serving{0};

  std::uint32_t lock() noexcept {
    const std::uint32_t ticket = next.fetch_add(1, std::memory_order_relaxed);
    // Pairs with the release store in unlock(): the previous holder's
    // writes to the guarded state are visible.
    for (unsigned spins = 1; serving.load(std::memory_order_acquire) != ticket; ++spins) {
      arch::relax();
      if (spins % 4096 == 0) {
        sched_yield();  // more threads than CPUs: let the holder run
      }
    }
    return ticket;
  }

  void unlock(std::uint32_t ticket) noexcept {
    serving.store(ticket + 1, std::memory_order_release);
  }
};

struct classic_state {
  ticket_lock lock;
  // Guarded by `lock`.
  alignas(64) std::uint64_t last = 0;
  int last_cpu = -1;
  int last_thread = -1;
  warp_counts counts;
};

template <read_fn Read>
void classic_worker(classic_state& s, int me, clockid_t clock, const std::atomic<bool>& stop) {
  while (!stop.load(std::memory_order_relaxed)) {
    const std::uint32_t ticket = s.lock.lock();
    const std::uint64_t now = Read(clock);
    const int cpu = sched_getcpu();
    if (s.last_thread >= 0) {
      if (now < s.last) {
        ++s.counts.warps;
        s.counts.max_warp = std::max(s.counts.max_warp, s.last - now);
      }
      if (s.last_thread != me) {
        ++s.counts.handoffs;
        s.counts.cross_cpu += cpu != s.last_cpu ? 1 : 0;
      }
    }
    s.last = now;
    s.last_cpu = cpu;
    s.last_thread = me;
    ++s.counts.samples;
    s.lock.unlock(ticket);
  }
}

// ---- The lock-free method -------------------------------------------------------------------

// One thread's published reading, alone on its cache line.
struct alignas(64) slot {
  std::atomic<std::uint64_t> value{0};
  int cpu = -1;  // where the owner runs; written before the threads start
};

template <read_fn Read>
warp_counts lockfree_worker(std::span<slot> slots, std::size_t me, clockid_t clock,
                            const std::atomic<bool>& stop) {
  const std::size_t n = slots.size();
  warp_counts c;
  std::size_t peer = me;
  while (!stop.load(std::memory_order_relaxed)) {
    for (int k = 0; k < 256; ++k) {
      if (n > 1) {
        peer = (peer + 1) % n;
        peer = peer == me ? (peer + 1) % n : peer;
      }
      // Pairs with the release store below in the peer's thread: the
      // peer's reading happened before this load, hence before ours.
      const std::uint64_t seen = slots[peer].value.load(std::memory_order_acquire);
      // A compiler barrier only: the CPU may still run an unordered
      // counter read early, which is what this method is here to catch.
      asm volatile("" ::: "memory");
      const std::uint64_t now = Read(clock);
      if (now < seen) {
        ++c.warps;
        c.max_warp = std::max(c.max_warp, seen - now);
      }
      if (peer != me) {
        ++c.handoffs;
        c.cross_cpu += slots[peer].cpu != slots[me].cpu ? 1 : 0;
      }
      slots[me].value.store(now, std::memory_order_release);
      ++c.samples;
    }
  }
  return c;
}

// ---- Running one reader with one method -----------------------------------------------------

struct reader {
  std::string function;
  bool ordered_vclock;  // a warp here fails the test
  bool ticks;           // readings are counter ticks, not ns
  void (*classic)(classic_state&, int, clockid_t, const std::atomic<bool>&);
  warp_counts (*lockfree)(std::span<slot>, std::size_t, clockid_t, const std::atomic<bool>&);
};

template <read_fn Read>
reader make_reader(std::string function, bool ordered_vclock, bool ticks) {
  return {std::move(function), ordered_vclock, ticks, classic_worker<Read>, lockfree_worker<Read>};
}

std::vector<reader> readers() {
  std::vector<reader> out;
  out.push_back(make_reader<read_vclock>("vclock_gettime_ns", true, false));
  out.push_back(make_reader<read_vclock_relaxed>("vclock_gettime_ns_relaxed", false, false));
  if (vdso_gettime != nullptr) {
    out.push_back(make_reader<read_vdso>("__vdso_clock_gettime", false, false));
  }
  // The bare counter, relaxed and with the default ordering, where there is
  // one (the generic "counter" is the kernel's clock, already measured).
  if constexpr (arch::has_counter) {
    constexpr arch::counter_ordering relaxed = arch::counter_ordering::none;
    constexpr arch::counter_ordering ordered = arch::ordered_variants[0];
    out.push_back(make_reader<read_bare<relaxed>>(arch::ordering_name(relaxed), false, true));
    out.push_back(make_reader<read_bare<ordered>>(arch::ordering_name(ordered), false, true));
  }
  return out;
}

struct run_config {
  std::vector<int> cpus;  // thread i runs on cpus[i % size]; empty: unpinned
  int threads = 1;
  std::chrono::nanoseconds duration{};
  clockid_t clock = CLOCK_MONOTONIC;
};

// Starts the threads together, lets them run for `duration`, stops them.
template <class Body>
void run_threads(const run_config& cfg, std::atomic<bool>& stop, Body body) {
  std::barrier start(cfg.threads + 1);
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(cfg.threads));
  for (int i = 0; i < cfg.threads; ++i) {
    pool.emplace_back([&, i] {
      if (!cfg.cpus.empty()) {
        pin_current_thread(cfg.cpus[static_cast<std::size_t>(i) % cfg.cpus.size()]);
      }
      start.arrive_and_wait();
      body(i);
    });
  }
  start.arrive_and_wait();
  std::this_thread::sleep_for(cfg.duration);
  stop.store(true, std::memory_order_relaxed);
  for (std::thread& t : pool) {
    t.join();
  }
}

warp_counts run_classic(const reader& r, const run_config& cfg) {
  auto state = std::make_unique<classic_state>();
  std::atomic<bool> stop{false};
  run_threads(cfg, stop, [&](int i) { r.classic(*state, i, cfg.clock, stop); });
  return state->counts;
}

warp_counts run_lockfree(const reader& r, const run_config& cfg) {
  const auto n = static_cast<std::size_t>(cfg.threads);
  const std::unique_ptr<slot[]> slots(new slot[n]);
  for (std::size_t i = 0; i < n; ++i) {
    slots[i].cpu = cfg.cpus.empty() ? -1 : cfg.cpus[i % cfg.cpus.size()];
  }
  std::vector<warp_counts> per_thread(n);
  std::atomic<bool> stop{false};
  run_threads(cfg, stop, [&](int i) {
    const auto me = static_cast<std::size_t>(i);
    per_thread[me] = r.lockfree(std::span<slot>(slots.get(), n), me, cfg.clock, stop);
  });
  warp_counts total;
  for (const warp_counts& c : per_thread) {
    total.add(c);
  }
  return total;
}

// ---- Options, results, output ---------------------------------------------------------------

struct clock_choice {
  const char* option;
  const char* name;
  clockid_t id;
};

constexpr clock_choice clock_choices[] = {
    {"monotonic", "MONOTONIC", CLOCK_MONOTONIC},
    {"realtime", "REALTIME", CLOCK_REALTIME},
    {"monotonic_raw", "MONOTONIC_RAW", CLOCK_MONOTONIC_RAW},
    {"boottime", "BOOTTIME", CLOCK_BOOTTIME},
    {"tai", "TAI", CLOCK_TAI},
};

const clock_choice& find_clock(const std::string& option) {
  for (const clock_choice& c : clock_choices) {
    if (option == c.option) {
      return c;
    }
  }
  return clock_choices[0];
}

struct warp_options {
  std::int64_t threads = 0;  // 0: one per usable CPU
  double seconds = 2;
  std::string clock = "monotonic";
  bool json = false;
};

struct warp_result {
  const reader* who;
  std::string clock;  // "vclock_gettime_ns(MONOTONIC)" or "rdtsc"
  const char* method;
  warp_counts counts;
  double max_warp_ns;
};

struct warp_report {
  status_snapshot status;
  run_config cfg;
  double seconds = 0;
  double counter_hz = 0;
  const char* clock_name = "";
  std::vector<warp_result> results;
  std::uint64_t ordered_warps = 0;
};

std::string cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (const int c : cpus) {
    out += (out.empty() ? "" : ",") + std::to_string(c);
  }
  return out.empty() ? "any" : out;
}

void print_text(const warp_report& w) {
  const status_snapshot& s = w.status;
  std::string out = tool::strformat(
      "vclock warp: %d threads on CPUs %s; CLOCK_%s; %.3f s per reader and method (%.3g s in "
      "all)\ncounter %s at %.3f MHz; vclock ordered reads use %s; vclock %s\n",
      w.cfg.threads, cpu_list(w.cfg.cpus).c_str(), w.clock_name,
      std::chrono::duration<double>(w.cfg.duration).count(), w.seconds, s.counter.c_str(),
      w.counter_hz / 1e6, s.ordering.c_str(),
      s.counter_mode ? "counter mode" : ("FALLBACK mode (" + s.reason + ")").c_str());
  if (w.cfg.threads < 2 || w.cfg.cpus.size() < 2) {
    out += "note: fewer than two threads or CPUs: no reading is compared across CPUs\n";
  }
  tool::text_table t(
      {"clock", "method", "samples", "warps", "max warp ns", "handoffs", "cross-CPU"});
  for (const warp_result& r : w.results) {
    t.row()
        .left(r.clock)
        .left(r.method)
        .right(std::to_string(r.counts.samples))
        .right(std::to_string(r.counts.warps))
        .right(tool::strformat("%.1f", r.max_warp_ns))
        .right(std::to_string(r.counts.handoffs))
        .right(std::to_string(r.counts.cross_cpu));
  }
  out += "\n" + t.str() + "\n";
  out += w.ordered_warps == 0
             ? "PASS: no ordered vclock clock went backwards\n"
             : tool::strformat("FAIL: ordered vclock clocks went backwards %llu times\n",
                               static_cast<unsigned long long>(w.ordered_warps));
  std::fputs(out.c_str(), stdout);
}

void print_json(const warp_report& w) {
  tool::json_writer j;
  j.begin_object()
      .field("command", "warp")
      .field("clock", std::string("CLOCK_") + w.clock_name)
      .field("threads", w.cfg.threads)
      .key("cpus")
      .begin_array();
  for (const int c : w.cfg.cpus) {
    j.value(c);
  }
  j.end_array()
      .field("seconds", w.seconds)
      .field("seconds_per_run", std::chrono::duration<double>(w.cfg.duration).count())
      .field("counter_hz", w.counter_hz)
      .field("ordering", w.status.ordering)
      .field("mode", w.status.counter_mode ? "counter" : "fallback")
      .key("results")
      .begin_array();
  for (const warp_result& r : w.results) {
    j.begin_object()
        .field("clock", r.clock)
        .field("method", r.method)
        .field("ordered", r.who->ordered_vclock)
        .field("samples", r.counts.samples)
        .field("warps", r.counts.warps)
        .field("max_warp_ns", r.max_warp_ns);
    if (r.who->ticks) {
      j.field("max_warp_ticks", r.counts.max_warp);
    }
    j.field("handoffs", r.counts.handoffs).field("cross_cpu_handoffs", r.counts.cross_cpu);
    j.end_object();
  }
  j.end_array().field("ordered_warps", w.ordered_warps).field("passed", w.ordered_warps == 0);
  j.end_object();
  std::fputs(j.str().c_str(), stdout);
}

int print_help(const tool::option_parser& parser) {
  std::printf(
      "Usage: vclock warp [--threads N] [--seconds S] [--clock C] [--json]\n\n"
      "Ingo Molnar's time-warp test: N threads, each pinned to its own CPU, read the clock\n"
      "and compare with readings other threads took before; a smaller reading is a warp.\n"
      "Two methods: a fair ticket lock (the classic test) and lock-free publication\n"
      "(release stores, acquire loads). Readers: vclock_gettime_ns (ordered),\n"
      "vclock_gettime_ns_relaxed, the vDSO, rdtsc and lfence;rdtsc. S seconds are split\n"
      "evenly over every reader and method (5 x 2 runs of S/10). Columns: handoffs are\n"
      "ticket-lock passes between threads (lock-free: comparisons with another thread's\n"
      "reading), cross-CPU those between different CPUs (sched_getcpu()). Exit status 1\n"
      "if an ordered vclock clock warped.\n\n%s",
      parser.options_help().c_str());
  return tool::exit_ok;
}

warp_report run_all(const warp_options& o) {
  warp_report w;
  w.status = read_status(2000);
  const clock_choice& clock = find_clock(o.clock);
  w.clock_name = clock.name;
  w.counter_hz = counter_hz_or_measure(w.status.counter_hz, 100);
  w.seconds = o.seconds;
  const std::vector<int> allowed = allowed_cpus();
  w.cfg.cpus = allowed;
  w.cfg.threads =
      o.threads > 0 ? static_cast<int>(o.threads) : std::max(1, static_cast<int>(allowed.size()));
  w.cfg.clock = clock.id;
  static const std::vector<reader> all = readers();
  const auto runs = static_cast<double>(2 * all.size());
  w.cfg.duration =
      std::chrono::nanoseconds(static_cast<std::int64_t>(o.seconds * detail::ns_per_s / runs));
  for (const reader& r : all) {
    const std::string name = r.ticks ? r.function : r.function + "(" + clock.name + ")";
    for (const bool classic : {true, false}) {
      warp_result res{&r, name, classic ? "ticket-lock" : "lock-free",
                      classic ? run_classic(r, w.cfg) : run_lockfree(r, w.cfg), 0};
      const double scale = r.ticks ? detail::ns_per_s / w.counter_hz : 1.0;
      res.max_warp_ns = static_cast<double>(res.counts.max_warp) * scale;
      w.ordered_warps += r.ordered_vclock ? res.counts.warps : 0;
      w.results.push_back(res);
    }
  }
  return w;
}

}  // namespace

int run_warp(std::span<char* const> args) {
  warp_options o;
  tool::option_parser parser("warp");
  parser.add_int("--threads", "N", 1, 1024, &o.threads,
                 "threads, each pinned to its own CPU (default: every usable CPU)");
  parser.add_real("--seconds", "S", 0.01, 86400, &o.seconds,
                  "total run time, split over readers and methods (default 2)");
  std::vector<std::string> names;
  for (const clock_choice& c : clock_choices) {
    names.emplace_back(c.option);
  }
  parser.add_choice("--clock", names, &o.clock, "the clock tested (default monotonic)");
  parser.add_flag("--json", &o.json, "print one JSON document instead of a table");
  if (!parser.parse(args)) {
    return tool::usage_error("warp", parser.error());
  }
  if (parser.help_requested()) {
    return print_help(parser);
  }
  vdso_gettime = kernel::vdso_gettime();
  const warp_report w = run_all(o);
  if (o.json) {
    print_json(w);
  } else {
    print_text(w);
  }
  return w.ordered_warps == 0 ? tool::exit_ok : tool::exit_check_failed;
}

}  // namespace vclock::cli
