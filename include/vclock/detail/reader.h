// The reader: how a time is computed from the page. read_fast() is the hot
// path, inlined into each entry point; read_careful() is what every unusual
// case (writer mid-update, counter behind cycle_last, stale page, fallback
// mode) goes to, out of line. Both take the counter and the kernel as
// parameters so that tests drive this very code with simulated ones.
#ifndef VCLOCK_DETAIL_READER_H_
#define VCLOCK_DETAIL_READER_H_

#include <time.h>

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "vclock/detail/arch.h"
#include "vclock/detail/seqlock.h"
#include "vclock/page.h"

namespace vclock::detail {

// The clocks the page serves. Values are not clockid_t: see kind_of().
enum class clock_kind : unsigned {
  realtime,
  monotonic,
  monotonic_raw,
  boottime,
  tai,
  realtime_coarse,
  monotonic_coarse,
};

// The kernel's id for each page clock: what the fallback asks.
inline constexpr clockid_t kernel_clock_of(clock_kind k) noexcept {
  switch (k) {
    case clock_kind::realtime:
      return CLOCK_REALTIME;
    case clock_kind::monotonic:
      return CLOCK_MONOTONIC;
    case clock_kind::monotonic_raw:
      return CLOCK_MONOTONIC_RAW;
    case clock_kind::boottime:
      return CLOCK_BOOTTIME;
    case clock_kind::tai:
      return CLOCK_TAI;
    case clock_kind::realtime_coarse:
      return CLOCK_REALTIME_COARSE;
    case clock_kind::monotonic_coarse:
      return CLOCK_MONOTONIC_COARSE;
  }
  return CLOCK_MONOTONIC;
}

// What kind_of() finds for a kernel clock id: the page's clock, or that the
// page does not serve the id (the CPU-time clocks, the alarms, dynamic
// clocks, ids no kernel knows). A pair rather than std::optional: the
// freestanding vDSO image and the public header use it too.
struct served_kind {
  bool served;
  clock_kind kind;  // read only when served
};

// The page's clock for a kernel clock id: kernel_clock_of()'s inverse. The
// one place a clockid_t becomes a clock_kind; each caller decides what an
// id the page does not serve means for it.
inline constexpr served_kind kind_of(clockid_t id) noexcept {
  switch (id) {
    case CLOCK_REALTIME:
      return {true, clock_kind::realtime};
    case CLOCK_MONOTONIC:
      return {true, clock_kind::monotonic};
    case CLOCK_MONOTONIC_RAW:
      return {true, clock_kind::monotonic_raw};
    case CLOCK_BOOTTIME:
      return {true, clock_kind::boottime};
    case CLOCK_TAI:
      return {true, clock_kind::tai};
    case CLOCK_REALTIME_COARSE:
      return {true, clock_kind::realtime_coarse};
    case CLOCK_MONOTONIC_COARSE:
      return {true, clock_kind::monotonic_coarse};
    default:
      return {false, clock_kind::realtime};
  }
}

inline constexpr bool is_coarse(clock_kind k) noexcept {
  return k == clock_kind::realtime_coarse || k == clock_kind::monotonic_coarse;
}

// The one switch from a run-time clock_kind to a template instance: returns
// f.template operator()<K>() for K == k. A caller that dispatches a
// kind_of() result (the vDSO image, the shim's virtual entry points) writes
// what it does per clock once, as a template lambda, and lists no kind.
// Always inlined, the lambda with it: each case is the caller's own code, as
// if it had written the switch (no call, no table of function pointers,
// nothing to relocate: the freestanding vDSO image uses it too).
template <class F>
[[gnu::always_inline]] inline decltype(auto) with_kind(clock_kind k, F&& f) noexcept {
  switch (k) {
    case clock_kind::realtime:
      return f.template operator()<clock_kind::realtime>();
    case clock_kind::monotonic:
      return f.template operator()<clock_kind::monotonic>();
    case clock_kind::monotonic_raw:
      return f.template operator()<clock_kind::monotonic_raw>();
    case clock_kind::boottime:
      return f.template operator()<clock_kind::boottime>();
    case clock_kind::tai:
      return f.template operator()<clock_kind::tai>();
    case clock_kind::realtime_coarse:
      return f.template operator()<clock_kind::realtime_coarse>();
    case clock_kind::monotonic_coarse:
      break;
  }
  return f.template operator()<clock_kind::monotonic_coarse>();
}

inline constexpr std::int64_t ns_per_s = 1000000000;

// The pure arithmetic of the fast path: ns elapsed for `delta` ticks.
// Exact as long as delta * mult < 2^64, which the writer guarantees for
// every delta < max_delta (see choose_mult_shift()).
[[gnu::always_inline]] constexpr std::int64_t delta_to_ns(std::uint64_t delta, std::uint32_t mult,
                                                          unsigned shift) noexcept {
  return static_cast<std::int64_t>((delta * mult) >> shift);
}

// The time of clock K at cycle_last: the line holds one base per clock,
// so a reader adds the elapsed time to one load.
template <clock_kind K>
[[gnu::always_inline]] inline std::int64_t load_base(const clock_line& l) noexcept {
  if constexpr (K == clock_kind::monotonic_raw) {
    return load(l.raw_ns);
  } else if constexpr (K == clock_kind::realtime || K == clock_kind::realtime_coarse ||
                       K == clock_kind::tai) {
    return load(l.realtime_ns);
  } else if constexpr (K == clock_kind::boottime) {
    return load(l.boottime_ns);
  } else {
    return load(l.mono_ns);
  }
}

// Whole seconds clock K adds to its base: TAI's offset from REALTIME; a
// constant 0, and no load, for every other clock. Kept apart from the base
// so that a TAI timespec adds it to tv_sec after the split (one add) instead
// of to the nanoseconds before it (a multiply on the way to the split).
template <clock_kind K>
[[gnu::always_inline]] inline std::int64_t load_whole_seconds(const clock_line& l) noexcept {
  if constexpr (K == clock_kind::tai) {
    return load(l.tai_offset_s);
  } else {
    return 0;
  }
}

// The time of clock K at cycle_last in nanoseconds, whole seconds included.
template <clock_kind K>
[[gnu::always_inline]] inline std::int64_t load_base_ns(const clock_line& l) noexcept {
  return load_base<K>(l) + load_whole_seconds<K>(l) * ns_per_s;
}

// The shift: a constant where the arch fixes it, else the page's.
[[gnu::always_inline]] inline unsigned load_shift(const clock_line& l) noexcept {
  if constexpr (arch::fixed_shift != 0) {
    return arch::fixed_shift;
  } else {
    return load(l.shift);
  }
}

template <clock_kind K>
[[gnu::always_inline]] inline std::uint32_t load_mult(const clock_line& l) noexcept {
  if constexpr (K == clock_kind::monotonic_raw) {
    return load(l.raw_mult);
  } else {
    return load(l.mult);
  }
}

// How the hot path turns (base, whole seconds, elapsed ns) into its
// result: prepare() runs before the checks, on the page's values alone;
// finish() after them, adding the elapsed time. Where each step goes was
// measured: a multiply in prepare() overlaps the counter read, but the
// split of a timespec there needs more registers than are free across
// the checks (a stack frame), so it waits for finish().
struct as_ns {
  using result = std::int64_t;
  using prepared = std::int64_t;
  // TAI's whole seconds join the base early: after the checks, their
  // multiply would compete with the elapsed time's (docs/performance.md,
  // "Why the code is shaped so").
  [[gnu::always_inline]] static prepared prepare(std::int64_t base,
                                                 std::int64_t whole_seconds) noexcept {
    return base + whole_seconds * ns_per_s;
  }
  [[gnu::always_inline]] static result finish(prepared base, std::int64_t elapsed) noexcept {
    return base + elapsed;
  }
  static result from_ns(std::int64_t ns) noexcept { return ns; }
};

// timespec without dividing the counter's share: the base is split into
// seconds and nanoseconds (the division by a constant compiles to a
// multiply; it depends on the page alone, so it runs beside the counter
// read's multiply), and the elapsed time (< 1 s: the timekeeper keeps
// max_delta under half a second) needs one conditional carry. TAI's whole
// seconds are added to the seconds, not to the nanoseconds before the
// split, which is shorter (docs/performance.md, "Why the code is shaped so"). Page clocks are never
// negative (the kernel refuses to set REALTIME before 1970), so there is no
// sign fix-up ("can't ever see nsec < 0").
struct as_timespec {
  using result = timespec;
  struct prepared {
    std::int64_t base;
    std::int64_t whole_seconds;
  };
  [[gnu::always_inline]] static prepared prepare(std::int64_t base,
                                                 std::int64_t whole_seconds) noexcept {
    return {base, whole_seconds};
  }
  [[gnu::always_inline]] static result finish(prepared b, std::int64_t elapsed) noexcept {
    const auto u = static_cast<std::uint64_t>(b.base);
    std::int64_t sec = static_cast<std::int64_t>(u / 1'000'000'000u) + b.whole_seconds;
    std::int64_t nsec = static_cast<std::int64_t>(u % 1'000'000'000u) + elapsed;
    if (nsec >= ns_per_s) [[unlikely]] {  // rare: a branch (predicted), not a cmov
      nsec -= ns_per_s;
      ++sec;
    }
    timespec ts;
    ts.tv_sec = static_cast<time_t>(sec);
    ts.tv_nsec = static_cast<long>(nsec);
    return ts;
  }
  static result from_ns(std::int64_t ns) noexcept { return finish(prepare(ns, 0), 0); }
};

// The hot path. `counter()` returns arch::counter_read; `careful()` returns
// the time in ns whenever this path cannot answer.
//
// Per call: one seq load and test, the fields of one cache line, one
// counter read, one compare (delta < max_delta covers the clamp, the
// staleness bound and fallback mode at once), one multiply and shift, one
// seq re-check. No division after the counter read, no loop to normalise,
// no system call.
template <clock_kind K, class Out = as_ns, class Counter>
[[gnu::always_inline]] inline bool try_read_fast(const page& p, Counter&& counter,
                                                 typename Out::result& out) noexcept {
  const clock_line& l = p.hot;
  // Straight-line: a writer mid-update, a changed seq (a retry) and every
  // unusual delta all return false, and the caller goes to the careful
  // path, which loops if it must. With no loop here the page address is
  // not kept in a register across the counter read, and the common path
  // needs no callee-saved register.
  if constexpr (is_coarse(K)) {
    const std::uint32_t seq = load(l.seq);  // pairs with write_end()
    const std::uint64_t max_delta = load(l.max_delta);
    const std::int64_t ns = load_base<K>(l);
    if ((seq & 1u) != 0 || max_delta == 0 || load_relaxed(l.seq) != seq) [[unlikely]] {
      return false;  // mid-update, not calibrated, fallback, or a retry
    }
    out = Out::from_ns(ns);
    return true;
  } else {
    const std::uint32_t seq = load(l.seq);  // pairs with write_begin()/write_end()
    if (seq & 1u) [[unlikely]] {
      return false;  // writer mid-update: the careful path reads the backup line
    }
    const auto now = counter();
    // The fields are loaded after the counter read, which keeps only `seq`
    // live across it (the counter read clobbers rax, rdx and, for rdtscp,
    // rcx): no callee-saved register, no stack frame. It costs no latency:
    // an ordered read waits for earlier instructions, not later ones, so
    // these L1 hits run while the counter is read (docs/performance.md,
    // "Why the code is shaped so"). The seqlock still holds: they
    // are loaded after `seq` and before `seq_after`.
    const std::uint64_t cycle_last = load(l.cycle_last);
    const std::uint64_t max_delta = load(l.max_delta);
    const std::uint32_t mult = load_mult<K>(l);
    const unsigned shift = load_shift(l);
    const typename Out::prepared base = Out::prepare(load_base<K>(l), load_whole_seconds<K>(l));
    // `now.zero` is 0 but depends on the counter read: this load cannot
    // run before the counter is read, so a reader whose counter is past
    // the writer's switch point always sees the new seq (timekeeper.cc,
    // "Why the switch point is safe").
    const std::uint32_t seq_after = load_relaxed((&l.seq)[now.zero]);
    const std::uint64_t delta = now.value - cycle_last;
    if (delta >= max_delta || seq_after != seq) [[unlikely]] {
      return false;  // stale, off, counter behind cycle_last, or a retry
    }
    out = Out::finish(base, delta_to_ns(delta, mult, shift));
    return true;
  }
}

// try_read_fast(), or `careful()` (the time in ns) when it cannot answer.
template <clock_kind K, class Out = as_ns, class Counter, class Careful>
[[gnu::always_inline]] inline typename Out::result read_fast(const page& p, Counter&& counter,
                                                             Careful&& careful) noexcept {
  typename Out::result r;
  if (try_read_fast<K, Out>(p, counter, r)) [[likely]] {
    return r;
  }
  return Out::from_ns(careful());
}

// The coarse clocks' hot path: the coarse line only. `Out` is as_ns,
// as_timespec or as_seconds.
struct as_seconds {
  using result = std::int64_t;
  static result from_ns(std::int64_t ns) noexcept {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(ns) / 1'000'000'000u);
  }
};

// time(2): the one word the writer keeps for it (page.h, coarse_line's
// time_word), no seqlock; false (go to the careful path of
// REALTIME_COARSE) when the line is off or its writer died.
[[gnu::always_inline]] inline bool try_read_time(const page& p, std::int64_t& out) noexcept {
  const std::uint64_t word = load(p.coarse.time_word);
  out = static_cast<std::int64_t>(word >> 32);
  return coarse_owner_alive(static_cast<std::uint32_t>(word));
}

// A few loads between two seq loads; false (go to the careful path of the
// same clock) when the line is off, being written, or changed meanwhile.
// Straight-line like try_read_fast(): the retry is the careful path's.
template <clock_kind K, class Out>
[[gnu::always_inline]] inline bool try_read_coarse(const page& p,
                                                   typename Out::result& out) noexcept {
  static_assert(is_coarse(K));
  constexpr bool realtime = K == clock_kind::realtime_coarse;
  const coarse_line& l = p.coarse;
  const std::uint32_t seq = load(l.seq);  // pairs with write_end() in publish()
  const auto owner = static_cast<std::uint32_t>(load(l.time_word));  // page.h: owner word
  if constexpr (std::is_same_v<Out, as_timespec>) {
    out.tv_sec = static_cast<time_t>(load(realtime ? l.realtime_sec : l.mono_sec));
    out.tv_nsec = static_cast<long>(load(realtime ? l.realtime_nsec : l.mono_nsec));
  } else if constexpr (std::is_same_v<Out, as_seconds>) {
    out = load(realtime ? l.realtime_sec : l.mono_sec);
  } else {
    out = load(realtime ? l.realtime_ns : l.mono_ns);
  }
  // An odd seq never equals the reload of an even one, and a dead or off
  // line is rare: one test of each on the common path.
  return (seq & 1u) == 0 && coarse_owner_alive(owner) && load_relaxed(l.seq) == seq;
}

template <clock_kind K, class Out, class Careful>
[[gnu::always_inline]] inline typename Out::result read_coarse(const page& p,
                                                               Careful&& careful) noexcept {
  typename Out::result r;
  if (try_read_coarse<K, Out>(p, r)) [[likely]] {
    return r;
  }
  return Out::from_ns(careful());
}

// Ticks a counter may lag cycle_last and still be clamped to it rather than
// treated as broken: TSCs of different CPUs differ by a few ticks; a counter
// reset (suspend on bare metal) is billions behind. In ticks, so per
// architecture: the same count is 0.44 ms of a 2.4 GHz TSC but 42 ms of a
// 25 MHz generic timer, long enough to hide a counter that jumped back.
inline constexpr std::uint64_t max_lag_ticks = arch::counter_max_lag_ticks;

// The answer for a stale line (delta >= max_delta) whose parameters gave
// `base` at cycle_last and at most `cap` at the end of their window, when
// the kernel says `kernel` and the page may be up to `lead` ahead of it.
// Not below what the page may have given already: readers took it up to
// `cap`, but only as fast as the counter ran, which the timekeeper holds
// within 2000 ppm of the kernel, so by now at most reach = est + (est -
// base) / 512 (1953 ppm), est = kernel + lead. That keeps a reader
// monotonic across a stalled writer even when the kernel's rate changed
// after the last sample (an NTP slew starting), and keeps it near the
// kernel when the counter ran on while the kernel did not (a VM pause, a
// suspend): there the kernel barely moved, and so does the answer. Above
// that bound, the kernel's own time: the lead bounds the page's error, it
// is not one, and once the kernel has passed all the page gave (at most
// the page's true error after the window ends), a stalled writer costs
// its readers no accuracy, nor the writer's resync (its new base is this).
inline std::int64_t stale_answer(std::int64_t kernel, std::int64_t lead, std::int64_t base,
                                 std::int64_t cap) noexcept {
  const std::int64_t est = kernel + lead;
  if (est <= base) return base;
  const std::int64_t reach = est + ((est - base) >> 9);
  const std::int64_t given = reach < cap ? reach : cap;
  return given > kernel ? given : kernel;
}

// Everything the fast path does not handle, answered without waiting:
//  - a coarse clock whose line's writer lives: that line, or the hot base
//    it is being written from (read_live_coarse());
//  - writer mid-update: read the backup line, frozen at the writer's
//    switch point (time stands still for the rest of the update, but
//    follows the kernel, lag_ns behind, if the writer stalls);
//  - counter behind cycle_last by a little: clamp to cycle_last;
//  - page off (max_delta == 0): ask the kernel, and return
//    max(kernel + lead, floor): the floor is at least what the page gave;
//  - page stale (delta >= max_delta): ask the kernel, and return
//    stale_answer(): never below what the page may have given, never
//    extrapolated past it,
// so a monotonic clock never steps back.
// `kernel()` returns the kernel's time for clock K in ns.
//
// Both lines odd: the writer is between turning hot odd and freezing the
// backup (three instructions), and readers wait for it, but only up to
// max_spins. A writer that does not come back (vclockd killed or stopped
// right there) has left hot's fields untouched, the old parameters, which
// readers then use as they are, stale check included: time never waits on
// a dead writer. A writer that was merely preempted that long sees it when
// it goes on (its counter has moved past the switch point by more than
// stuck_writer_ticks) and moves its switch point to where it is now, so the
// readers that used the old parameters meanwhile stay below the new ones.
// 4096 pauses: 30 to 250 us, by the CPU's pause latency.
inline constexpr int max_spins = 1 << 12;

// The odd hot seq of a writer found stuck (0: none), so that only the first
// reader to find it waits: later calls of this process go straight on,
// until the writer (or a restarted one) moves the seq.
inline std::atomic<std::uint32_t> stuck_writer_seq{0};

// The coarse clocks while their line's writer lives (owner word alive):
// what the coarse line holds, or will hold once the write under way ends.
// Never the kernel, nor the hot line's time past its base: the coarse line
// is written after hot, from hot's bases (timekeeper.cc, write_coarse()),
// so a writer held up after its switch point c (preempted, its vCPU gone)
// publishes a coarse time of c however late it writes it, and a reader
// that answered the kernel's time of now (hot stale by then, or frozen
// past c) would be above what the readers after it get from the line:
// the coarse clock would go back by as long as the writer was held up.
// While the line is being written (seq odd), hot is even and holds the
// bases being copied (one writer, under its publish lock: hot is odd only
// outside write_coarse()), checked by reading the coarse seq again after
// hot. A hot seq odd under an unchanged odd coarse seq is a writer taking
// the line over (timekeeper.cc, take_over_coarse(): hot and backup odd, so
// the caller waits for it as for any writer between those two), or a dead
// one: false, and the caller goes on as for a dead line.
// Stale, the line stands still as its fast path does (a stopped writer,
// docs/vclockd.md); dead, the caller follows the kernel. False also leaves
// in `seq_out` the coarse seq it was judged by: a kernel answer counts
// only if the line is still at that seq after the kernel was read (a
// writer that took the line over meanwhile wrote it from a later kernel
// read, and the readers after this one answer the line).
template <clock_kind K>
inline bool read_live_coarse(const page& p, std::int64_t& out, std::uint32_t& seq_out) noexcept {
  static_assert(is_coarse(K));
  constexpr bool realtime = K == clock_kind::realtime_coarse;
  const coarse_line& c = p.coarse;
  for (;;) {
    const std::uint32_t seq = load(c.seq);
    const auto owner = static_cast<std::uint32_t>(load(c.time_word));
    const std::int64_t value = load(realtime ? c.realtime_ns : c.mono_ns);
    seq_out = seq;
    if (!coarse_owner_alive(owner)) {
      return false;
    }
    if ((seq & 1u) == 0) {
      if (load_relaxed(c.seq) != seq) continue;
      out = value;
      return true;
    }
    const std::uint32_t hot_seq = load(p.hot.seq);
    const std::int64_t base = load_base_ns<K>(p.hot);
    if (load_relaxed(p.hot.seq) != hot_seq || load_relaxed(c.seq) != seq) {
      continue;  // the writer moved on meanwhile: progress, not a wait
    }
    if ((hot_seq & 1u) != 0) {
      return false;
    }
    out = base;
    return true;
  }
}

template <clock_kind K, class Counter, class Kernel>
inline std::int64_t read_careful(const page& p, Counter&& counter, Kernel&& kernel) noexcept {
  int spins = 0;
  for (;;) {
    // A coarse clock asks again at every try: a writer may have taken its
    // line over meanwhile (read_live_coarse()).
    std::uint32_t coarse_seq = 0;
    if constexpr (is_coarse(K)) {
      std::int64_t live = 0;
      if (read_live_coarse<K>(p, live, coarse_seq)) return live;
    }
    const std::uint32_t hot_seq = load(p.hot.seq);
    bool use_backup = (hot_seq & 1u) != 0;
    std::uint32_t seq = use_backup ? load(p.backup.seq) : hot_seq;
    std::uint32_t stuck_backup_seq = 0;  // odd: reading hot under a stuck writer
    if (seq & 1u) {
      if (hot_seq != stuck_writer_seq.load(std::memory_order_relaxed) && ++spins < max_spins) {
        arch::relax();  // the writer is between turning hot odd and reading
        continue;       // the counter: a few instructions
      }
      stuck_writer_seq.store(hot_seq, std::memory_order_relaxed);
      use_backup = false;  // a stuck writer: hot still holds the old parameters
      stuck_backup_seq = seq;
      seq = hot_seq;
    }
    const clock_line& l = use_backup ? p.backup : p.hot;
    const std::uint64_t cycle_last = load(l.cycle_last);
    const std::uint64_t max_delta = load(l.max_delta);
    const std::uint32_t mult = load_mult<K>(l);
    const unsigned shift = load_shift(l);
    const std::int64_t base = load_base_ns<K>(l);
    const auto now = counter();
    if (load_relaxed((&l.seq)[now.zero]) != seq) {
      continue;
    }
    // Under a stuck writer, hot's fields are good only while the backup is
    // still open: the writer closes it before it writes hot.
    if (stuck_backup_seq != 0 && load_relaxed((&p.backup.seq)[now.zero]) != stuck_backup_seq) {
      continue;
    }
    // A kernel answer is good only if no publish began meanwhile: a reader
    // held up between its checks and its kernel read (preempted for
    // milliseconds) would otherwise return the kernel's time of later,
    // above what the parameters published since then give (they may run
    // behind the kernel, within the page's lag). So the hot seq, read again
    // after the kernel, must not have moved.
    // (No fence: x86 keeps this load after the vDSO's own loads; a TSC read
    // inside it may still complete a few ns later, but a publish that
    // starts then reads the kernel later still, and its base is above it.)
    // A coarse clock's, only if its line was not taken over either.
    const auto unchanged_after_kernel = [&p, hot_seq, stuck_backup_seq, coarse_seq] {
      return load(p.hot.seq) == hot_seq &&
             (stuck_backup_seq == 0 || load(p.backup.seq) == stuck_backup_seq) &&
             (!is_coarse(K) || load(p.coarse.seq) == coarse_seq);
    };
    // The page's bounds, validated with the line like its fields (page.h).
    const std::int64_t lead = load_relaxed(use_backup ? p.backup_lead_ns : p.lead_ns);
    if (max_delta == 0) {
      // Off: base is the floor the writer left.
      const std::int64_t k = kernel() + lead;
      if (!unchanged_after_kernel()) continue;
      return k > base ? k : base;
    }
    // A coarse clock comes here only with its line dead or off
    // (read_live_coarse()), and checks the hot line's staleness too: its
    // own line cannot tell when its writer died (page.h, owner words).
    std::uint64_t delta = now.value - cycle_last;
    if (static_cast<std::int64_t>(delta) < 0 && std::uint64_t{0} - delta <= max_lag_ticks) {
      delta = 0;  // another CPU's counter, a few ticks behind the writer's
    } else if (delta >= max_delta) {
      if (use_backup) {
        // Frozen at the writer's switch point; if the writer stalls there,
        // follow the kernel from behind, no further than the page's lag.
        const std::int64_t frozen =
            is_coarse(K) ? base : base + delta_to_ns(max_delta - 1, mult, shift);
        const std::int64_t lag = load_relaxed(p.backup_lag_ns);
        const std::int64_t k = kernel() - lag;
        if (!unchanged_after_kernel()) continue;
        return k > frozen ? k : frozen;
      }
      // Stale (or the counter far behind cycle_last): never extrapolate.
      const std::int64_t cap = base + delta_to_ns(max_delta - 1, mult, shift);
      const std::int64_t k = kernel();
      if (!unchanged_after_kernel()) continue;
      return stale_answer(k, lead, base, cap);
    }
    if constexpr (is_coarse(K)) {
      return base;
    }
    return base + delta_to_ns(delta, mult, shift);
  }
}

}  // namespace vclock::detail

#endif  // VCLOCK_DETAIL_READER_H_
