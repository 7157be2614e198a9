// The page's history of lines: the encoding is page.h's (stamp_history);
// why it is shaped so, docs/stamps.md.
#include "lib/history.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vclock/detail/arch.h"
#include "vclock/detail/seqlock.h"

namespace vclock::detail {
namespace {

__extension__ typedef __int128 i128;

constexpr int max_snapshot_tries = 1 << 12;  // as reader.h's max_spins
// Then yields, each a time slice for a preempted writer: a writer stopped or
// killed inside its history update ends the wait within milliseconds.
constexpr int max_snapshot_yields = 256;

// The fields of a slot word (page.h, stamp_history).
constexpr std::uint32_t delta_bits = 26;
constexpr std::uint32_t run_bits = 10;
constexpr std::uint32_t run_unit = 16;  // ticks
constexpr std::uint32_t mult_bits = 16;
constexpr std::uint32_t raw_bits = 12;
constexpr std::uint32_t run_at = delta_bits;
constexpr std::uint32_t mult_at = run_at + run_bits;
constexpr std::uint32_t raw_at = mult_at + mult_bits;
static_assert(raw_at + raw_bits == 64);
constexpr std::uint32_t key_mark = 1u << (mult_bits - 1);  // the lowest mult step
static_assert(key_mark == history_key_mark);

constexpr std::uint32_t field(std::uint64_t word, std::uint32_t at, std::uint32_t bits) noexcept {
  return static_cast<std::uint32_t>(word >> at) & ((1u << bits) - 1);
}
// A two's complement step of `bits`, sign-extended.
constexpr std::int32_t step(std::uint64_t word, std::uint32_t at, std::uint32_t bits) noexcept {
  const std::uint32_t v = field(word, at, bits);
  return v >= (1u << (bits - 1)) ? static_cast<std::int32_t>(v) - (1 << bits)
                                 : static_cast<std::int32_t>(v);
}
constexpr std::int64_t step_max(std::uint32_t bits) noexcept { return (1 << (bits - 1)) - 1; }
constexpr bool is_key(std::uint64_t word) noexcept {
  return field(word, mult_at, mult_bits) == key_mark;
}
constexpr std::uint32_t key_pos(std::uint64_t word) noexcept { return field(word, raw_at, 8); }
constexpr std::uint32_t gap_of(std::uint64_t word) noexcept {
  return static_cast<std::uint32_t>(word);
}
constexpr std::uint32_t delta_of(std::uint64_t word) noexcept { return field(word, 0, delta_bits); }
constexpr std::uint32_t run_of(std::uint64_t word) noexcept {
  return field(word, run_at, run_bits) * run_unit;
}
history_line advance_by(const history_line& l, std::uint64_t word) noexcept {
  return advance_line(l, delta_of(word), step(word, mult_at, mult_bits),
                      step(word, raw_at, raw_bits));
}

history_line line_of_key(const history_key& k) noexcept {
  history_line l;
  l.cycle_last = k.cycle_last;
  l.max_delta = k.max_delta;
  l.mono_ns = k.mono_ns;
  l.realtime_ns = k.realtime_ns;
  l.boottime_ns = k.boottime_ns;
  l.raw_ns = k.raw_ns;
  l.mult = k.mult;
  l.raw_mult = k.raw_mult;
  l.shift = k.shift;
  l.tai_offset_s = k.tai_offset_s;
  return l;
}

void store_key(history_key& k, const history_line& l, std::uint32_t begin) noexcept {
  store(k.cycle_last, l.cycle_last);
  store(k.max_delta, l.max_delta);
  store(k.mono_ns, l.mono_ns);
  store(k.realtime_ns, l.realtime_ns);
  store(k.boottime_ns, l.boottime_ns);
  store(k.raw_ns, l.raw_ns);
  store(k.mult, l.mult);
  store(k.raw_mult, l.raw_mult);
  store(k.shift, static_cast<std::uint8_t>(l.shift));
  store(k.tai_offset_s, l.tai_offset_s);
  store(k.begin, begin);
}

void copy_key(const history_key& from, history_key& to) noexcept {
  to.cycle_last = load(from.cycle_last);
  to.max_delta = load(from.max_delta);
  to.mono_ns = load(from.mono_ns);
  to.realtime_ns = load(from.realtime_ns);
  to.boottime_ns = load(from.boottime_ns);
  to.raw_ns = load(from.raw_ns);
  to.mult = load(from.mult);
  to.raw_mult = load(from.raw_mult);
  to.begin = load(from.begin);
  to.shift = load(from.shift);
  to.tai_offset_s = load(from.tai_offset_s);
}

// One try at a copy; false if the writer was (or became) busy: the
// history's own seq, and hot's when `closed` (no update under way, so the
// newest entry's line is the one hot holds, and where it ends is known).
bool try_copy(const page& p, history_snapshot& out, bool closed) noexcept {
  const std::uint32_t hot = load(p.hot.seq);
  if (closed && (hot & 1u) != 0) return false;
  const stamp_history& h = p.history;
  const std::uint32_t seq = load(h.header.seq);
  if ((seq & 1u) != 0) return false;
  if (closed && load(h.header.open) != 0) return false;
  out.h.header.epoch = load(h.header.epoch);
  out.h.header.entries = load(h.header.entries);
  out.h.header.first_entry = load(h.header.first_entry);
  out.h.header.keys = load(h.header.keys);
  for (std::uint32_t i = 0; i < history_keys; ++i) copy_key(h.keys[i], out.h.keys[i]);
  for (std::uint32_t i = 0; i < history_slots; ++i) out.h.slots[i] = load(h.slots[i]);
  if (load(h.header.seq) != seq) return false;
  if (closed && load(p.hot.seq) != hot) return false;
  out.open = !closed;
  return true;
}

std::uint32_t fnv1a(const std::uint8_t (&bytes)[16]) noexcept {
  std::uint32_t hash = 2166136261u;
  for (const std::uint8_t b : bytes) {
    hash = (hash ^ b) * 16777619u;
  }
  return hash;
}

// Clock K's base, whole seconds included, and its mult: as reader.h's
// load_base_ns and load_mult read them from a clock_line.
std::int64_t base_of(const history_line& l, clock_kind k) noexcept {
  switch (k) {
    case clock_kind::monotonic_raw:
      return l.raw_ns;
    case clock_kind::realtime:
      return l.realtime_ns;
    case clock_kind::tai:
      return l.realtime_ns + std::int64_t{l.tai_offset_s} * ns_per_s;
    case clock_kind::boottime:
      return l.boottime_ns;
    default:
      return l.mono_ns;
  }
}

std::uint32_t mult_of(const history_line& l, clock_kind k) noexcept {
  return k == clock_kind::monotonic_raw ? l.raw_mult : l.mult;
}

unsigned shift_of(const history_line& l) noexcept {
  if constexpr (arch::fixed_shift != 0) {
    return arch::fixed_shift;
  } else {
    return l.shift;
  }
}

}  // namespace

history_line line_of(const clock_line& l) noexcept {
  history_line h;
  h.cycle_last = l.cycle_last;
  h.max_delta = l.max_delta;
  h.mono_ns = l.mono_ns;
  h.realtime_ns = l.realtime_ns;
  h.boottime_ns = l.boottime_ns;
  h.raw_ns = l.raw_ns;
  h.mult = l.mult;
  h.raw_mult = l.raw_mult;
  h.shift = l.shift;
  h.tai_offset_s = l.tai_offset_s;
  return h;
}

std::uint64_t stamp_epoch(const std::uint8_t (&boot_id)[16], std::uint32_t counter_epoch) noexcept {
  return std::uint64_t{fnv1a(boot_id)} << 32 | (counter_epoch == 0 ? 1u : counter_epoch);
}

history_line advance_line(const history_line& prev, std::uint32_t delta, std::int32_t mult_step,
                          std::int32_t raw_mult_step) noexcept {
  history_line n = prev;
  const std::int64_t mono = delta_to_ns(delta, prev.mult, prev.shift);
  n.cycle_last = prev.cycle_last + delta;
  n.mono_ns = prev.mono_ns + mono;
  n.realtime_ns = prev.realtime_ns + mono;
  n.boottime_ns = prev.boottime_ns + mono;
  n.raw_ns = prev.raw_ns + delta_to_ns(delta, prev.raw_mult, prev.shift);
  n.mult = prev.mult + static_cast<std::uint32_t>(mult_step);
  n.raw_mult = prev.raw_mult + static_cast<std::uint32_t>(raw_mult_step);
  return n;
}

// ---- Writer.

void history_writer::begin_epoch(std::uint64_t epoch) noexcept {
  const std::uint32_t seq = write_begin(h_.header.seq);
  store(h_.header.slot_count, history_slots);
  store(h_.header.key_count, history_keys);
  store(h_.header.first_entry, load_relaxed(h_.header.entries));
  store(h_.header.epoch, epoch);
  write_end(h_.header.seq, seq);
  have_last_ = false;
}

void history_writer::take_over(const std::uint8_t (&boot_id)[16]) noexcept {
  have_last_ = false;
  const std::uint64_t epoch = load_relaxed(h_.header.epoch);
  const std::uint64_t fresh = stamp_epoch(boot_id, 1);
  if (epoch == 0 || (epoch >> 32) != (fresh >> 32)) {
    begin_epoch(fresh);
    return;
  }
  // A writer killed inside append(): a key may be half written over an
  // older one that entries still name. Close the seq and start over, so
  // that no stamp converts through it (its stamps get -ESTALE).
  const std::uint32_t seq = load_relaxed(h_.header.seq);
  if ((seq & 1u) != 0) {
    write_end(h_.header.seq, seq);
    next_counter_epoch();
  }
}

// Behind the newest line of this epoch by more than another CPU's counter
// can lag (reader.h, max_lag_ticks): the counter was reset (a suspend,
// a restarted daemon's first line after one).
bool history_writer::counter_went_back(std::uint64_t cycle_last) const noexcept {
  const auto behind = [cycle_last](std::uint64_t newer) {
    const std::uint64_t d = newer - cycle_last;
    return static_cast<std::int64_t>(d) > 0 && d > max_lag_ticks;
  };
  if (have_last_) return behind(last_.cycle_last);
  // A new writer (a restarted daemon): the keys of this epoch.
  const std::uint64_t entries = load_relaxed(h_.header.entries);
  const std::uint64_t first = load_relaxed(h_.header.first_entry);
  const std::uint64_t oldest = entries > history_slots ? entries - history_slots : 0;
  for (std::uint64_t e = oldest > first ? oldest : first; e < entries; ++e) {
    const std::uint64_t word = load_relaxed(h_.slots[e % history_slots]);
    if (is_key(word) && behind(load_relaxed(h_.keys[key_pos(word)].cycle_last))) return true;
  }
  return false;
}

void history_writer::next_counter_epoch() noexcept {
  const std::uint64_t epoch = load_relaxed(h_.header.epoch);
  const auto old = static_cast<std::uint32_t>(epoch);
  // A private page's epochs stay private (the bit kept, the count wrapping
  // below it); a shared page's skip 0, which means "no history".
  const std::uint32_t counter_epoch =
      (old & private_counter_epoch) | ((old + 1) & ~private_counter_epoch);
  begin_epoch((epoch & ~std::uint64_t{0xffffffff}) | (counter_epoch == 0 ? 1u : counter_epoch));
}

void history_writer::begin_private_epoch(std::uint32_t salt) noexcept {
  const std::uint64_t epoch = load_relaxed(h_.header.epoch);
  begin_epoch((epoch & ~std::uint64_t{0xffffffff}) | private_counter_epoch | salt);
}

// An ordinary entry (page.h) when `next` is exactly what it encodes.
bool history_writer::fits_slot(const history_line& next, std::uint64_t freeze, bool freeze_known,
                               std::uint64_t run, std::uint64_t& word) const noexcept {
  // The run rounded up to whole units: a reader whose counter is past the
  // update's end by less than a unit is taken for one that read the backup
  // line, as one within the writer's last counter read may have anyway.
  const std::uint64_t units = (run + run_unit - 1) / run_unit;
  if (!have_last_ || since_key_ + 1 >= history_key_every || last_.max_delta == 0 || !freeze_known ||
      freeze != next.cycle_last || units >= (1u << run_bits)) {
    return false;
  }
  const std::uint64_t delta = next.cycle_last - last_.cycle_last;
  if (delta >= last_.max_delta || delta >= (1u << delta_bits)) return false;
  const std::int64_t mult_step = std::int64_t{next.mult} - std::int64_t{last_.mult};
  const std::int64_t raw_step = std::int64_t{next.raw_mult} - std::int64_t{last_.raw_mult};
  // The lowest mult step is the key mark.
  if (mult_step < -step_max(mult_bits) || mult_step > step_max(mult_bits) ||
      raw_step < -step_max(raw_bits) - 1 || raw_step > step_max(raw_bits)) {
    return false;
  }
  const auto m = static_cast<std::int32_t>(mult_step);
  const auto r = static_cast<std::int32_t>(raw_step);
  if (advance_line(last_, static_cast<std::uint32_t>(delta), m, r) != next) return false;
  word = delta | units << run_at |
         (static_cast<std::uint64_t>(m) & ((1u << mult_bits) - 1)) << mult_at |
         (static_cast<std::uint64_t>(r) & ((1u << raw_bits) - 1)) << raw_at;
  return true;
}

void history_writer::open() noexcept {
  const std::uint32_t seq = write_begin(h_.header.seq);
  store(h_.header.open, 1u);
  write_end(h_.header.seq, seq);
}

void history_writer::append(const clock_line& line, std::uint64_t freeze, bool freeze_known,
                            std::uint64_t end) noexcept {
  const history_line next = line_of(line);
  if (counter_went_back(next.cycle_last)) next_counter_epoch();
  // The update's end, from cycle_last: never before it (the writer's
  // counter read after the switch), saturated where it cannot be held.
  const std::uint64_t since = end - next.cycle_last;
  const std::uint64_t run = static_cast<std::int64_t>(since) < 0
                                ? 0
                                : (since < history_gap_none ? since : history_gap_none);
  std::uint64_t word = 0;
  const bool slot = fits_slot(next, freeze, freeze_known, run, word);
  const std::uint32_t seq = write_begin(h_.header.seq);
  const std::uint64_t e = load_relaxed(h_.header.entries);
  if (slot) {
    ++since_key_;
  } else {
    const std::uint64_t k = load_relaxed(h_.header.keys);
    const auto pos = static_cast<std::uint32_t>(k % history_keys);
    store_key(h_.keys[pos], next, static_cast<std::uint32_t>(run));
    std::uint64_t gap = history_gap_none;
    if (have_last_ && freeze_known && last_.max_delta != 0) {
      const std::uint64_t d = next.cycle_last - freeze;
      if (static_cast<std::int64_t>(d) >= 0 && d < history_gap_none) gap = d;
    }
    word = gap | std::uint64_t{history_key_mark} << mult_at | std::uint64_t{pos} << raw_at;
    store(h_.header.keys, k + 1);
    since_key_ = 0;
  }
  store(h_.slots[e % history_slots], word);
  store(h_.header.entries, e + 1);
  store(h_.header.open, 0u);
  write_end(h_.header.seq, seq);
  last_ = next;
  have_last_ = true;
}

// ---- Reader.

bool take_snapshot(const page& p, history_snapshot& out) noexcept {
  bool copied = false;
  for (int i = 0; i < max_snapshot_tries && !copied; ++i) {
    copied = try_copy(p, out, true);
    if (!copied) arch::relax();
  }
  // A writer that stays mid-update (stopped, or killed there): the history
  // is whole, but where its newest line ends is not known.
  for (int i = 0; i < max_snapshot_tries && !copied; ++i) {
    copied = try_copy(p, out, false);
    if (!copied) arch::relax();
  }
  // A writer preempted inside its history update (a loaded machine, more
  // runnable threads than cores): spinning cannot let it finish, giving up
  // the CPU can. Conversion is not the reader's hot path; a bounded wait
  // here is cheaper for the caller than a conversion refused.
  for (int i = 0; i < max_snapshot_yields && !copied; ++i) {
    syscall(SYS_sched_yield);
    copied = try_copy(p, out, false);
  }
  if (copied) {
    const std::int64_t lead = load_relaxed(p.lead_ns);
    const std::int64_t lag = load_relaxed(p.lag_ns);
    out.kernel_slack_ns = (lead > 0 ? lead : 0) + (lag > 0 ? lag : 0);
  }
  return copied && out.h.header.epoch != 0;
}

bool find_segment(const history_snapshot& s, std::uint64_t counter, history_segment& out) noexcept {
  const stamp_history& h = s.h;
  const std::uint64_t entries = h.header.entries;
  std::uint64_t oldest = entries > history_slots ? entries - history_slots : 0;
  if (h.header.first_entry > oldest) oldest = h.header.first_entry;
  if (entries <= oldest) return false;
  out.slack_ns = s.kernel_slack_ns;
  // The keys still usable: the newest entry marked with each position,
  // newest first.
  std::uint64_t keys[history_keys];
  std::uint32_t seen = 0;
  int count = 0;
  for (std::uint64_t e = entries; e-- > oldest;) {
    const std::uint64_t word = h.slots[e % history_slots];
    if (!is_key(word) || key_pos(word) >= history_keys) continue;
    const std::uint32_t bit = 1u << key_pos(word);
    if ((seen & bit) != 0) continue;
    seen |= bit;
    keys[count++] = e;
  }
  if (count == 0) return false;
  const auto key_of = [&](std::uint64_t e) -> const history_key& {
    return h.keys[key_pos(h.slots[e % history_slots])];
  };
  // The newest key whose line has begun at `counter`.
  int j = 0;
  while (j < count && key_of(keys[j]).cycle_last + key_of(keys[j]).begin > counter) ++j;
  out.has_freeze = false;
  out.freeze = 0;
  if (j == count) {  // before the history: its oldest line, extrapolated back
    const history_key& k = key_of(keys[count - 1]);
    out.line = line_of_key(k);
    out.lo = 0;
    out.hi = k.cycle_last + k.begin;
    out.exact_ok = false;
    // Past its cycle_last, before its begin: inside the update that published it, whose
    // readers had the line before it (no longer held) frozen at the switch point, or the
    // kernel: not this line run on, but its time at cycle_last, as inside any update.
    out.freeze = k.cycle_last;
    out.has_freeze = true;
    return true;
  }
  const history_key& key = key_of(keys[j]);
  history_line l = line_of_key(key);
  std::uint64_t e = keys[j];
  std::uint64_t begins = key.cycle_last + key.begin;
  out.hi = ~std::uint64_t{0};
  // Forward from the key, entry by entry, to the last line that has begun.
  while (e + 1 < entries) {
    const std::uint64_t word = h.slots[(e + 1) % history_slots];
    if (is_key(word)) {
      const history_key& next = h.keys[key_pos(word)];
      out.hi = next.cycle_last + next.begin;
      if (gap_of(word) != history_gap_none) {
        out.freeze = next.cycle_last - gap_of(word);
        out.has_freeze = true;
      }
      break;
    }
    const std::uint64_t next_cycle_last = l.cycle_last + delta_of(word);
    const std::uint64_t next_begins = next_cycle_last + run_of(word);
    if (next_begins > counter) {
      out.hi = next_begins;
      out.freeze = next_cycle_last;
      out.has_freeze = true;
      break;
    }
    l = advance_by(l, word);
    begins = next_begins;
    ++e;
  }
  out.line = l;
  out.lo = begins;
  const bool newest = e + 1 == entries;
  out.exact_ok = l.max_delta != 0 && !(s.open && newest);
  if (newest && s.known_until != ~std::uint64_t{0}) {
    if (counter > s.known_until) {  // after the copy: an estimate
      out.lo = s.known_until + 1 > begins ? s.known_until + 1 : begins;
      out.exact_ok = false;
    } else {
      out.hi = s.known_until + 1;
    }
  }
  return true;
}

stamp_time time_in_segment(const history_segment& seg, clock_kind k,
                           std::uint64_t counter) noexcept {
  const history_line& l = seg.line;
  const std::int64_t base = base_of(l, k);
  const std::uint32_t mult = mult_of(l, k);
  const unsigned shift = shift_of(l);
  const std::uint64_t delta = counter - l.cycle_last;
  stamp_time t;
  if (seg.has_freeze && counter > seg.freeze) {
    // Inside an update, past its switch point: readers took the backup
    // line, frozen there, or the kernel's time less the page's lag where
    // that was more (reader.h), which depends on when they read, not on
    // the counter alone. The frozen time, and how far the line ran on.
    const std::uint64_t frozen = seg.freeze >= l.cycle_last ? seg.freeze - l.cycle_last : 0;
    t.status = stamp_estimate;
    t.ns = base + delta_to_ns(frozen, mult, shift);
    const std::uint64_t ran = delta < l.max_delta ? delta : l.max_delta;
    t.bound_ns = delta_to_ns(ran, mult, shift) - delta_to_ns(frozen, mult, shift) + 1000;
    return t;
  }
  if (seg.exact_ok && counter >= l.cycle_last && delta < l.max_delta) {
    t.ns = base + delta_to_ns(delta, mult, shift);  // the fast path's sum
    return t;
  }
  // An estimate: the line extrapolated (back, before the history), with
  // its error bound (docs/stamps.md).
  const auto signed_delta = static_cast<std::int64_t>(delta);
  const i128 elapsed = (i128{signed_delta} * mult) >> shift;
  const i128 ns = i128{base} + elapsed;
  t.status = stamp_estimate;
  t.ns = ns > INT64_MAX ? INT64_MAX : (ns < INT64_MIN ? INT64_MIN : static_cast<std::int64_t>(ns));
  // 1000 ppm and 1 us (docs/stamps.md); divided in 64 bits (no libgcc
  // call on the way: the conversions stay async-signal-safe). And the page's lead and lag:
  // where readers asked the kernel (stale, off, inside an update), they were up to lag_ns
  // behind it, and the line up to lead_ns ahead.
  const i128 magnitude = elapsed < 0 ? -elapsed : elapsed;
  const std::uint64_t m =
      magnitude > INT64_MAX / 2 ? INT64_MAX / 2 : static_cast<std::uint64_t>(magnitude);
  const std::int64_t slack = seg.slack_ns < INT64_MAX / 4 ? seg.slack_ns : INT64_MAX / 4;
  t.bound_ns = static_cast<std::int64_t>(m / 1000 + 1000) + slack;
  return t;
}

exact_range exact_range_of(const history_segment& seg, clock_kind k) noexcept {
  exact_range r;
  const history_line& l = seg.line;
  if (!seg.exact_ok || seg.lo < l.cycle_last) return r;
  // Exact from lo up to the first of: the next segment, the counter past
  // the switch point, the end of the line's validity.
  std::uint64_t end = seg.hi;
  if (seg.has_freeze && seg.freeze < end - 1) end = seg.freeze + 1;
  if (l.max_delta < end - l.cycle_last) end = l.cycle_last + l.max_delta;
  if (end <= seg.lo) return r;
  r.lo = seg.lo;
  r.span = end - seg.lo;
  r.cycle_last = l.cycle_last;
  r.base = base_of(l, k);
  r.mult = mult_of(l, k);
  r.shift = shift_of(l);
  return r;
}

int stamp_to_time(const history_snapshot& s, clock_kind k, std::uint64_t epoch,
                  std::uint64_t counter, history_segment& seg, bool& have_seg,
                  stamp_time& t) noexcept {
  if (epoch == 0) return -ENODATA;
  if (epoch != s.h.header.epoch) return -ESTALE;
  if (!have_seg || counter < seg.lo || counter >= seg.hi) {
    if (!find_segment(s, counter, seg)) return -ENODATA;
    have_seg = true;
  }
  t = time_in_segment(seg, k, counter);
  return t.status;
}

}  // namespace vclock::detail
