// The timekeeper: calibration, discipline and publication.
//
// How it keeps time
// -----------------
// Every tick (4 ms by default) it takes a bracketed sample of the kernel's
// MONOTONIC and MONOTONIC_RAW: counter, kernel clock, counter, a few times,
// keeping the narrowest bracket, and taking its midpoint as the counter
// value at which the kernel was read. With those samples it:
//
//  1. checks the counter: the counter's elapsed time since the last sample,
//     at the calibrated rate, must agree with the kernel's elapsed time
//     (within jump_ns), and the kernel's rate measured in counter ticks must
//     stay within max_rate_error of the calibrated rate. Otherwise the page
//     is turned off (readers ask the kernel, floored so no clock steps back)
//     and the counter is recalibrated after a back-off.
//  2. estimates the kernel's rate: a least-squares line through the last
//     `window` samples, kernel ns against counter ticks. An NTP frequency
//     change shows as samples leaving the line; the line then restarts from
//     the newest two samples, so a slew is followed within a tick or two.
//  3. measures its own error e = vclock(c) - kernel(c) and slews it away:
//     rate = kernel rate - e / phase_time, the correction bounded by
//     max_correction. The error is never stepped away; a reader never
//     observes a rate further than max_correction from the kernel's.
//  4. publishes new parameters that are continuous: the new base at the new
//     cycle_last c is exactly what the old parameters give at c.
//
// Offsets (REALTIME, BOOTTIME, TAI relative to MONOTONIC) are constants in
// the kernel between steps. They are measured as k(REALTIME) - midpoint of
// two MONOTONIC reads around it, and republished only when they move by
// more than the measurement's width plus 1 us: a step (settimeofday, a leap
// second, a resume from suspend), which is mirrored as a step.
//
// Why the switch point is safe
// ----------------------------
// publish() makes hot.seq odd with a full barrier before it reads the
// counter value c that becomes cycle_last. A reader whose counter read
// returns more than c read it after the odd seq was visible, and its seq
// re-check is data-dependent on that counter read, so it sees the change
// and retries: no reader combines old parameters with a counter past c.
// Readers that combine new parameters with a counter before c are clamped
// to c. Since new(c) == old(c), time is continuous and monotonic across
// the switch.
//
// While hot.seq is odd, readers use the backup line: the old parameters,
// frozen at c (a reader's counter, read after it saw the odd seq, is at
// least the counter of any reader before). Freezing at c needs c, which is
// read only once hot is odd, so the backup is opened (odd) before hot turns
// odd and closed right after c is read: readers spin only if the writer is
// preempted inside those three instructions, and time stands still, rather
// than readers spinning, for the rest of the update. (A publish that turns
// the line on again also takes its coarse line over in between: one kernel
// read more; take_over_coarse().)
#include "lib/timekeeper.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "lib/bound_math.h"
#include "lib/mult_shift.h"
#include "vclock/detail/arch.h"
#include "vclock/detail/reader.h"
#include "vclock/detail/seqlock.h"

namespace vclock {
namespace {

using detail::store;
using detail::store_relaxed;

constexpr std::int64_t step_threshold_ns = 1000;

// How long after the ticker's last publish its line may still be continued
// (continue_line()): a vanished vCPU comes back within about 100 ms; a
// ticker gone longer is not coming back soon, and a line with no samples
// behind it drifts from the kernel for as long as it is continued. Past
// this the line goes stale and the kernel answers, as before.
constexpr std::int64_t max_continued_ns = 250'000'000;

std::int64_t to_ns_from_ticks(double ticks, double ns_per_tick) noexcept {
  return static_cast<std::int64_t>(std::llround(ticks * ns_per_tick));
}

clock_line load_line(const clock_line& from) noexcept {
  clock_line l{};
  l.seq = detail::load(from.seq);
  l.mult = detail::load(from.mult);
  l.cycle_last = detail::load(from.cycle_last);
  l.max_delta = detail::load(from.max_delta);
  l.mono_ns = detail::load(from.mono_ns);
  l.realtime_ns = detail::load(from.realtime_ns);
  l.boottime_ns = detail::load(from.boottime_ns);
  l.raw_ns = detail::load(from.raw_ns);
  l.raw_mult = detail::load(from.raw_mult);
  l.shift = detail::load(from.shift);
  l.tai_offset_s = detail::load(from.tai_offset_s);
  return l;
}

void store_line(clock_line& dst, const clock_line& src) noexcept {
  store(dst.mult, src.mult);
  store(dst.cycle_last, src.cycle_last);
  store(dst.max_delta, src.max_delta);
  store(dst.mono_ns, src.mono_ns);
  store(dst.realtime_ns, src.realtime_ns);
  store(dst.boottime_ns, src.boottime_ns);
  store(dst.raw_ns, src.raw_ns);
  store(dst.raw_mult, src.raw_mult);
  store(dst.shift, src.shift);
  store(dst.tai_offset_s, src.tai_offset_s);
}

// The page holds each clock's time at cycle_last (page.h: one load per
// read); the timekeeper thinks as the kernel does, of REALTIME and
// BOOTTIME as offsets from MONOTONIC. These two convert.
struct mono_offsets {
  std::int64_t realtime;
  std::int64_t boottime;
};

mono_offsets offsets_of(const clock_line& l) noexcept {
  return {l.realtime_ns - l.mono_ns, l.boottime_ns - l.mono_ns};
}

// Holds the publish lock (if any) for one page update: see
// timekeeper::share_publish_lock().
class publish_guard {
 public:
  explicit publish_guard(pthread_mutex_t* lock) noexcept : lock_(lock) {
    if (lock_ != nullptr) pthread_mutex_lock(lock_);
  }
  ~publish_guard() {
    if (lock_ != nullptr) pthread_mutex_unlock(lock_);
  }
  publish_guard(const publish_guard&) = delete;
  publish_guard& operator=(const publish_guard&) = delete;

 private:
  pthread_mutex_t* lock_;
};

// Sets the line's MONOTONIC base and, the offsets apart, its REALTIME and
// BOOTTIME bases.
void set_mono_base(clock_line& l, std::int64_t mono_ns, mono_offsets o) noexcept {
  l.mono_ns = mono_ns;
  l.realtime_ns = mono_ns + o.realtime;
  l.boottime_ns = mono_ns + o.boottime;
}

}  // namespace

timekeeper::timekeeper(page& p, time_sources& sources, const timekeeper_config& config) noexcept
    : page_(p), sources_(sources), config_(config) {}

// A writer killed mid-update (a daemon's SIGKILL) leaves a seq odd. Which
// line holds the truth depends on where it stopped (publish() above):
//  - backup odd: it was copying the old parameters into backup, or had
//    turned hot odd and not yet frozen backup; hot's fields are the old
//    parameters, untouched. Copy hot to backup and close both.
//  - backup even, hot odd: it was writing new parameters into hot; backup
//    holds the old ones, frozen at the switch point. Copy backup to hot.
// Either way every reader sees the old parameters (or the frozen ones)
// again, which is what it may already have returned; the first publish
// then resyncs forward from them.
void timekeeper::repair_half_written_update() noexcept {
  const bool backup_odd = (detail::load(page_.backup.seq) & 1u) != 0;
  const bool hot_odd = (detail::load(page_.hot.seq) & 1u) != 0;
  if (!backup_odd && !hot_odd) {
    return;
  }
  const clock_line truth = load_line(backup_odd ? page_.hot : page_.backup);
  // Hot first when its fields are intact: an even backup beside an odd hot
  // would be read as frozen, which a repaired backup is not.
  if (hot_odd) {
    if (!backup_odd) store_line(page_.hot, truth);
    detail::write_end(page_.hot.seq, detail::load(page_.hot.seq));
  }
  if (backup_odd) {
    store_line(page_.backup, truth);
    detail::write_end(page_.backup.seq, detail::load(page_.backup.seq));
  }
}

void timekeeper::start() noexcept {
  repair_half_written_update();
  store_relaxed(page_.tick_ns, config_.tick_ns);
  // Take the page as readers see it (fork, a restarted daemon): its floor
  // and offsets, or the line a previous writer left, which readers follow
  // until it goes stale and then answer from the kernel (stale_answer(),
  // with its lead). The first publish resyncs forward from exactly that
  // (publish(), `resync`), rather than from kernel + lead.
  published_ = load_line(page_.hot);
  cont_ = continuation{};  // a previous writer's line is not continued
  coarse_live_ = false;    // nor its coarse line taken as this writer's
  history_.take_over(page_.header.boot_id);
  state_ = state::calibrating;
  have_calib_ = false;
  anchor_on_page();
  reason_ = fallback_reason::calibrating;
  store_relaxed(page_.mode_reason, static_cast<std::uint32_t>(reason_));
}

// A restarted daemon continues the page's line: the previous writer's last
// switch point, where its time was the kernel's plus its last measured
// error, is a point on the kernel's time line as good as a fresh sample
// (its width: that sample's). Calibration then measures the rate from
// there rather than from a sample taken now, so the new rate spans the
// whole time since that point: the one the page held, measured again over
// a longer baseline, and continuous with it. Only a page that was counting
// (neither off nor half-calibrated) has such a point.
void timekeeper::anchor_on_page() noexcept {
  page_ns_per_tick_ = 0;
  const clock_line& l = page_.hot;
  const std::uint64_t hz = detail::load_relaxed(page_.counter_hz);
  const auto mode = static_cast<fallback_reason>(detail::load_relaxed(page_.mode_reason));
  const std::uint64_t max_delta = detail::load(l.max_delta);
  const unsigned shift = detail::load_shift(l);
  const std::uint32_t mult = detail::load(l.mult);
  if (max_delta == 0 || mode != fallback_reason::none || hz == 0 || mult == 0 || shift == 0) {
    return;
  }
  const std::int64_t width = std::max<std::int64_t>(detail::load_relaxed(page_.last_bracket_ns), 1);
  const std::uint64_t c = detail::load(l.cycle_last);
  calib_mono_ = {c, c, detail::load(l.mono_ns) - detail::load_relaxed(page_.last_error_mono_ns),
                 width, width};
  calib_raw_ = {c, c, detail::load(l.raw_ns) - detail::load_relaxed(page_.last_error_raw_ns), width,
                width};
  // The rate in use was the kernel's plus a correction of -error /
  // phase_time (discipline()); take the correction out again.
  const double correction =
      std::clamp(-static_cast<double>(detail::load_relaxed(page_.last_error_mono_ns)) /
                     static_cast<double>(config_.phase_time_ns),
                 -config_.max_correction, config_.max_correction);
  page_ns_per_tick_ =
      std::ldexp(static_cast<double>(mult), -static_cast<int>(shift)) * (1.0 - correction);
  const double raw_correction =
      std::clamp(-static_cast<double>(detail::load_relaxed(page_.last_error_raw_ns)) /
                     static_cast<double>(config_.phase_time_ns),
                 -config_.max_correction, config_.max_correction);
  page_raw_ns_per_tick_ =
      std::ldexp(static_cast<double>(detail::load(l.raw_mult)), -static_cast<int>(shift)) *
      (1.0 - raw_correction);
  have_calib_ = true;
}

double timekeeper::counter_hz() const noexcept {
  return mono_.nominal > 0 ? 1e9 / mono_.nominal : 0.0;
}

// Counter, kernel, counter; the narrowest of config_.sample_tries.
timekeeper::clock_sample timekeeper::sample(clockid_t clock) noexcept {
  clock_sample best;
  std::uint64_t best_width = ~std::uint64_t{0};
  for (int i = 0; i < config_.sample_tries; ++i) {
    const std::uint64_t c1 = sources_.read_counter();
    const std::int64_t k = sources_.read_kernel(clock);
    const std::uint64_t c2 = sources_.read_counter();
    if (c2 < c1) {
      continue;  // counter went back inside the bracket: useless
    }
    note_counter_step(c2 - c1);
    if (c2 - c1 < best_width) {
      best_width = c2 - c1;
      best.c = c1 + (c2 - c1) / 2;
      best.c_lo = c1;
      best.k = k;
    }
  }
  // Before calibration, the nominal rate the header or a previous writer
  // gives: calibration compares widths in ns with its thresholds.
  double ns_per_tick = mono_.nominal;
  if (ns_per_tick <= 0) {
    std::uint64_t hz = detail::load_relaxed(page_.header.counter_nominal_hz);
    if (hz == 0) hz = detail::load_relaxed(page_.counter_hz);
    ns_per_tick = hz != 0 ? 1e9 / static_cast<double>(hz) : 1.0;
  }
  if (best_width == ~std::uint64_t{0}) {
    best.width_ns = best.bracket_ns = INT64_MAX;
    return best;
  }
  best.bracket_ns = to_ns_from_ticks(static_cast<double>(best_width), ns_per_tick);
  best.width_ns =
      to_ns_from_ticks(static_cast<double>(best_width + resolution_ticks()), ns_per_tick);
  return best;
}

// The counter at an update's end, for the history. A counter coarser than the update (one
// value from the switch point to here) may show that value to a reader still inside it, on
// the backup line or the kernel: the new line begins with the counter's next value.
std::uint64_t timekeeper::update_end() noexcept {
  return sources_.read_counter() + resolution_ticks();
}

// A bracket of no ticks, with a kernel read inside it: the counter steps more coarsely than
// one read lasts (qemu-user's CNTVCT_EL0 advances once a microsecond, by 62 or 63 ticks). Its
// value then places a read anywhere within one step, which the narrowest bracket does not
// show. The step, measured once: the least of a few whole steps (a read preempted between two
// changes sees more than one).
void timekeeper::note_counter_step(std::uint64_t bracket_ticks) noexcept {
  if (bracket_ticks != 0 || counter_step_ != 0) return;
  constexpr int changes = 4;
  constexpr int max_reads = 1 << 16;
  std::uint64_t last = sources_.read_counter();
  std::uint64_t step = ~std::uint64_t{0};
  int seen = 0;
  for (int i = 0; i < max_reads && seen < changes; ++i) {
    const std::uint64_t c = sources_.read_counter();
    if (c == last) continue;
    // The first change may end a step begun before the first read.
    if (seen++ > 0 && c > last) step = std::min(step, c - last);
    last = c;
  }
  counter_step_ = step != ~std::uint64_t{0} ? step : 1;
}

// What a sample's width adds for the counter's own step: none for a counter that moved within
// every bracket so far (a TSC: its step is below its brackets' width, which covers it).
std::uint64_t timekeeper::resolution_ticks() const noexcept { return counter_step_; }

// REALTIME and BOOTTIME each between two MONOTONIC reads; TAI - REALTIME
// rounded to whole seconds.
timekeeper::offsets timekeeper::measure_offsets(int tries) noexcept {
  offsets best;
  std::int64_t best_real = INT64_MAX;
  std::int64_t best_boot = INT64_MAX;
  for (int i = 0; i < tries; ++i) {
    const std::int64_t m1 = sources_.read_kernel(CLOCK_MONOTONIC);
    const std::int64_t r = sources_.read_kernel(CLOCK_REALTIME);
    const std::int64_t m2 = sources_.read_kernel(CLOCK_MONOTONIC);
    const std::int64_t b = sources_.read_kernel(CLOCK_BOOTTIME);
    const std::int64_t m3 = sources_.read_kernel(CLOCK_MONOTONIC);
    if (m2 - m1 < best_real) {
      best_real = m2 - m1;
      best.realtime = r - (m1 + (m2 - m1) / 2);
    }
    if (m3 - m2 < best_boot) {
      best_boot = m3 - m2;
      best.boottime = b - (m2 + (m3 - m2) / 2);
    }
  }
  const std::int64_t t = sources_.read_kernel(CLOCK_TAI);
  const std::int64_t r = sources_.read_kernel(CLOCK_REALTIME);
  best.tai_s = static_cast<std::int16_t>(std::llround(static_cast<double>(t - r) / 1e9));
  best.width_ns = std::max(best_real, best_boot);
  return best;
}

void timekeeper::tick() noexcept {
  if (state_ == state::idle || state_ == state::off) {
    return;
  }
  if (state_ == state::backoff) {
    if (sources_.read_kernel(CLOCK_MONOTONIC) < backoff_until_) {
      return;
    }
    state_ = state::calibrating;
    have_calib_ = false;
  }
  // The error bound's source, once per tick; a regular tick confirms the
  // source after a step (clock_was_set() marks the bound disrupted).
  bound_ = sources_.read_bound();
  if (bound_.status != sync_status::unknown) {
    bound_read_mono_ns_ = sources_.read_kernel(CLOCK_MONOTONIC);
  }
  disrupted_ = false;
  tick_line_ = line_now();
  const clock_sample mono = sample(CLOCK_MONOTONIC);
  const clock_sample raw = sample(CLOCK_MONOTONIC_RAW);
  if (state_ == state::calibrating) {
    calibrate_step(mono, raw);
  } else {
    run_step(mono, raw);
  }
}

// Mirrors the step now rather than a tick later, doing as little as
// possible between the kernel's wake-up and the publish (readers return the
// old REALTIME until then): one narrow offset measurement, and a publish
// with the rates in use. No counter samples, no discipline: the next tick
// does those, and confirms the offset with a careful measurement. A resume
// (BOOTTIME moved) or a leap second (TAI-UTC moved), rare and subtle, take
// the full path at once.
void timekeeper::clock_was_set() noexcept { mirror_step(true); }

void timekeeper::recheck_clock_was_set() noexcept { mirror_step(false); }

void timekeeper::mirror_step(bool publish_unmoved) noexcept {
  recheck_offsets_ = true;
  disrupted_ = true;  // until the next tick reads the source again
  if (state_ != state::running || !have_last_) {
    tick();
    return;
  }
  const offsets measured = measure_offsets(3);
  const std::int64_t noise = measured.width_ns + step_threshold_ns;
  if (measured.boottime - offsets_.boottime > noise || measured.tai_s != offsets_.tai_s) {
    tick();
    return;
  }
  if (std::llabs(measured.realtime - offsets_.realtime) <= noise) {
    // Set to (about) the time it had: only the bound's status changes.
    if (publish_unmoved) publish(false);
    return;
  }
  offsets_.realtime = measured.realtime;
  offsets_.width_ns = measured.width_ns;
  publish(false);
}

void timekeeper::calibrate_step(const clock_sample& mono, const clock_sample& raw) noexcept {
  if (mono.bracket_ns > config_.calibration_bracket_ns ||
      raw.bracket_ns > config_.calibration_bracket_ns) {
    return;  // preempted sample: try again next tick
  }
  const std::int64_t elapsed = mono.k - calib_mono_.k;
  // The first sample, or a narrower one while the first is young: the
  // baseline's precision is its two widths.
  if (!have_calib_ || (page_ns_per_tick_ == 0 && elapsed < config_.calibration_ns &&
                       std::max(mono.width_ns, raw.width_ns) <
                           std::max(calib_mono_.width_ns, calib_raw_.width_ns))) {
    calib_mono_ = mono;
    calib_raw_ = raw;
    have_calib_ = true;
    return;
  }
  if (elapsed < config_.calibration_ns) {
    return;
  }
  // Counter mode only once the rate is good enough (calibration_rate_error).
  // The brackets alone: a counter's step (sample()) would hold a coarse counter's page off for
  // seconds; the rate's uncertainty below counts it, and the discipline's line refines it.
  const double rate_error = std::max(
      static_cast<double>(mono.bracket_ns + calib_mono_.bracket_ns) / static_cast<double>(elapsed),
      static_cast<double>(raw.bracket_ns + calib_raw_.bracket_ns) /
          static_cast<double>(std::max<std::int64_t>(raw.k - calib_raw_.k, 1)));
  const bool anchored = page_ns_per_tick_ != 0;
  if (rate_error > config_.calibration_rate_error && !anchored) {
    return;
  }
  // The offsets are measured once here and then only stepped or refined:
  // start from a precise measurement, or try again next tick.
  const offsets first_offsets = measure_offsets(8);
  if (first_offsets.width_ns > config_.calibration_bracket_ns) {
    return;
  }
  if (mono.c <= calib_mono_.c || raw.c <= calib_raw_.c || raw.k <= calib_raw_.k) {
    have_calib_ = false;  // counter or kernel went back: start over
    page_ns_per_tick_ = 0;
    return;
  }
  const double ns_per_tick =
      static_cast<double>(elapsed) / static_cast<double>(mono.c - calib_mono_.c);
  bool page_rate = false;
  if (anchored) {
    // Anchored on a previous writer's page: the counter must have kept the
    // rate it had then (not migrated to another host meanwhile), or this
    // baseline averages two rates. Beyond its noise (plus the page's own
    // rate error, a few ppm at most): start over from this sample. Kept,
    // and the baseline too short to measure it as well as the page knew it
    // (a daemon restarted at once): continue the page's rate.
    const double tolerance = 3.0 * rate_error + 5e-6;
    if (std::fabs(ns_per_tick / page_ns_per_tick_ - 1.0) > tolerance) {
      page_ns_per_tick_ = 0;
      calib_mono_ = mono;
      calib_raw_ = raw;
      return;
    }
    page_rate = rate_error > config_.calibration_rate_error;
  }
  mono_ = track{};
  raw_ = track{};
  mono_.nominal = page_rate ? page_ns_per_tick_ : ns_per_tick;
  raw_.nominal = page_rate ? page_raw_ns_per_tick_
                           : static_cast<double>(raw.k - calib_raw_.k) /
                                 static_cast<double>(raw.c - calib_raw_.c);
  page_ns_per_tick_ = 0;
  // Headroom for slews: the used rate stays within max_rate_error +
  // max_correction of nominal, or the counter is declared broken.
  const double headroom = 1.0 + 2 * (config_.max_rate_error + config_.max_correction);
  const double tick_ticks = static_cast<double>(config_.tick_ns) / mono_.nominal;
  // Half a second at most: the timespec reader adds elapsed time to a
  // split base with a single carry, which needs elapsed < 1 s.
  const double half_second_ticks = 0.5e9 / (mono_.nominal * headroom);
  const auto wanted =
      static_cast<std::uint64_t>(std::min(tick_ticks * config_.validity_ticks, half_second_ticks));
  // A line still in use (a previous writer's) keeps its shift: the
  // continuity of the first publish evaluates it with published_.shift.
  // published_ is read and written under the publish lock: a standby's
  // continue_line() reads it whole while this thread holds only the tick's
  // (TSan saw that race in vclockd, calibrating while a standby looked).
  unsigned shift = arch::fixed_shift;
  {
    const publish_guard guard(publish_lock_);
    if (published_.max_delta != 0) shift = published_.shift;
  }
  const mult_shift ms =
      choose_mult_shift(std::max(mono_.nominal, raw_.nominal) * headroom, wanted, shift);
  if (ms.max_delta == 0) {
    disable(fallback_reason::counter_too_slow);  // permanent: it will not speed up
    return;
  }
  {
    const publish_guard guard(publish_lock_);
    published_.shift = static_cast<std::uint8_t>(ms.shift);
  }
  validity_delta_ = ms.max_delta;
  mono_.rate_uncertainty =
      static_cast<double>(mono.width_ns + calib_mono_.width_ns) / static_cast<double>(elapsed);
  raw_.rate_uncertainty = static_cast<double>(raw.width_ns + calib_raw_.width_ns) /
                          static_cast<double>(raw.k - calib_raw_.k);
  if (page_rate) {
    // The page's rate came from a line a window long: the new line's own
    // slope replaces it once it spans as long (discipline()).
    mono_.rate_uncertainty = raw_.rate_uncertainty = config_.calibration_rate_error;
    mono_.keep_rate_span_ns = raw_.keep_rate_span_ns =
        static_cast<double>(config_.tick_ns) * (window - 1);
  }
  // The line starts at the calibration's first sample, so the discipline's
  // first fits span the whole baseline rather than a tick or two.
  restart_line(mono_, calib_mono_);
  restart_line(raw_, calib_raw_);
  add_point(mono_, mono);
  add_point(raw_, raw);
  offsets_ = first_offsets;
  recheck_offsets_ = false;
  min_width_ns_ = std::max(mono.bracket_ns, raw.bracket_ns);
  last_mono_ = mono;
  last_raw_ = raw;
  have_last_ = true;
  state_ = state::running;
  reason_ = fallback_reason::none;
  store_relaxed(page_.counter_hz, static_cast<std::uint64_t>(std::llround(counter_hz())));
  publish(true);
}

// Kernel elapsed time against counter elapsed time since the last sample.
bool timekeeper::check_counter(const clock_sample& mono) noexcept {
  if (!have_last_) {
    return true;
  }
  const auto dc = static_cast<std::int64_t>(mono.c - last_mono_.c);
  const std::int64_t dk = mono.k - last_mono_.k;
  if (dc < 0) {
    fault(fallback_reason::counter_jumped);
    return false;
  }
  const double counter_ns = static_cast<double>(dc) * mono_.nominal * (1.0 + mono_.freq);
  const double diff = counter_ns - static_cast<double>(dk);
  if (std::fabs(diff) > static_cast<double>(config_.jump_ns)) {
    fault(fallback_reason::counter_jumped);
    return false;
  }
  // The rate check needs samples precise enough to see max_rate_error.
  const double noise = static_cast<double>(mono.width_ns + last_mono_.width_ns);
  if (dk > 0 && noise < 0.25 * config_.max_rate_error * static_cast<double>(dk)) {
    const double kernel_rate = static_cast<double>(dk) / (static_cast<double>(dc) * mono_.nominal);
    if (std::fabs(kernel_rate - 1.0) > config_.max_rate_error) {
      fault(fallback_reason::counter_rate_wrong);
      return false;
    }
  }
  return true;
}

void timekeeper::run_step(const clock_sample& mono, const clock_sample& raw) noexcept {
  // Offsets first: a resume from suspend shows as BOOTTIME moving, and is
  // not a counter fault.
  bool resync = false;
  const offsets measured = measure_offsets(recheck_offsets_ ? 5 : 1);
  const bool stepped_real =
      std::llabs(measured.realtime - offsets_.realtime) > measured.width_ns + step_threshold_ns;
  const bool stepped_boot =
      measured.boottime - offsets_.boottime > measured.width_ns + step_threshold_ns;
  if (stepped_real || stepped_boot || measured.tai_s != offsets_.tai_s || recheck_offsets_) {
    // Confirm with a careful measurement before mirroring a step.
    const offsets careful = recheck_offsets_ ? measured : measure_offsets(5);
    if (std::llabs(careful.realtime - offsets_.realtime) > careful.width_ns + step_threshold_ns) {
      // A leap second moves REALTIME by exactly -/+1 s as TAI-UTC moves by
      // +/-1 s: apply it exactly, so TAI does not move by sampling noise.
      const std::int64_t leap_moved =
          offsets_.realtime - std::int64_t{careful.tai_s - offsets_.tai_s} * detail::ns_per_s;
      const bool is_leap =
          careful.tai_s != offsets_.tai_s &&
          std::llabs(careful.realtime - leap_moved) <= careful.width_ns + step_threshold_ns;
      offsets_.realtime = is_leap ? leap_moved : careful.realtime;
    }
    if (careful.boottime - offsets_.boottime > careful.width_ns + step_threshold_ns) {
      // Resumed. MONOTONIC did not move; a counter that ran on (VM pause)
      // or was reset shows up below as a stale page or a counter fault.
      offsets_.boottime = careful.boottime;
      have_last_ = false;
    }
    offsets_.tai_s = careful.tai_s;
    offsets_.width_ns = careful.width_ns;
    recheck_offsets_ = false;
  }

  // A preempted sample shows in its bracket (a counter's step is in every sample alike).
  const bool precise = mono.bracket_ns <= config_.max_bracket_ns &&
                       raw.bracket_ns <= config_.max_bracket_ns &&
                       mono.bracket_ns <= 3 * min_width_ns_ + 100;
  min_width_ns_ = std::min(min_width_ns_ + 1, std::max<std::int64_t>(mono.bracket_ns, 1));
  if (!precise) {
    publish(false);  // keep the page (and coarse clocks) fresh
    return;
  }
  // Since the last good sample, longer than the page stays valid: this
  // writer stalled (a stopped daemon, a descheduled thread) or restarted.
  const bool stalled =
      have_last_ && mono.k - last_mono_.k > config_.tick_ns * std::int64_t{config_.validity_ticks};
  if (stalled) {
    if (!rate_kept(last_raw_, raw, raw_)) {
      relearn_rate();
      return;
    }
  } else if (!check_counter(mono)) {
    return;
  }
  // Each sample is judged against the line in force when it was taken. A
  // standby may have continued the line since (continue_line(): this
  // thread was held up in this tick), perhaps between the two samples:
  // the continued line is the same line (its bases within 1 ns of the old
  // one's, truncated), the one to judge by where it holds the sample; else
  // the line of this tick's start.
  const clock_line now_line = line_now();
  const auto line_for = [&](std::uint64_t c) -> const clock_line& {
    return c - now_line.cycle_last < now_line.max_delta ? now_line : tick_line_;
  };
  const clock_line& mono_line = line_for(mono.c);
  const clock_line& raw_line = line_for(raw.c);
  judged_on_c_ = mono_line.cycle_last;  // the first sample: publish() widens the bounds if later
  if (mono.c - mono_line.cycle_last >= mono_line.max_delta ||
      raw.c - raw_line.cycle_last >= raw_line.max_delta) {
    // Stale: publish() steps forward to the kernel, re-anchoring the
    // offset only. After a stall the rate and its line go on: the counter
    // kept its rate (rate_kept() above), and the line's old samples with
    // this one span the stall, a longer baseline than ever (an NTP change
    // meanwhile shows as a kink there, as at any tick). Without a last
    // sample to judge by (a resume from suspend, a fork child), the line
    // starts afresh.
    if (have_last_) {
      discipline(mono_, 0, mono);
      discipline(raw_, 0, raw);
    } else {
      restart_line(mono_, mono);
      restart_line(raw_, raw);
    }
    resync = true;
  } else {
    const std::int64_t e_mono = time_on(mono_line, mono.c, false) - mono.k;
    const std::int64_t e_raw = time_on(raw_line, raw.c, true) - raw.k;
    store_relaxed(page_.last_error_mono_ns, e_mono);
    store_relaxed(page_.last_error_raw_ns, e_raw);
    // Bounds of how far vclock is ahead of (lead) and behind (lag) the
    // kernel, for readers that must mix in a kernel answer without
    // stepping back: the errors, widened by the sample and offset widths.
    if (e_mono < -config_.jump_ns) {
      resync = true;  // far behind the kernel: step forward, never back
    }
    discipline(mono_, e_mono, mono);
    discipline(raw_, e_raw, raw);
    // The errors were measured at this sample; until the page goes stale
    // it drifts from the kernel at most at the rate the new parameters
    // allow (drift_allowance_ns), so the bounds cover that too: a stale or
    // frozen reader's kernel-based answer then never undercuts (or
    // overtakes) what the page gave.
    const std::int64_t margin =
        std::max(mono.width_ns, raw.width_ns) + offsets_.width_ns + drift_allowance_ns();
    next_lead_ns_ = std::max<std::int64_t>(0, std::max(e_mono, e_raw) + margin);
    next_lag_ns_ = std::max<std::int64_t>(0, margin - std::min(e_mono, e_raw));
  }
  store_relaxed(page_.last_bracket_ns, mono.width_ns);
  store_relaxed(page_.freq_ppb, static_cast<std::int64_t>(std::llround(mono_.used * 1e9)));
  last_mono_ = mono;
  last_raw_ = raw;
  have_last_ = true;
  publish(resync);
}

// Whether the counter kept its rate over a stall, telling a writer that
// was merely not running (its rate is as good as before) from a counter
// whose rate changed meanwhile (a live migration to a host with another
// TSC frequency, a kvm-clock re-base), which must be learnt again. The
// evidence: the counter's ticks over the stall, at the rate in use, against
// the kernel's MONOTONIC_RAW over the same stall (RAW: NTP does not slew
// it, so a frequency change of the kernel's MONOTONIC meanwhile is not
// taken for the counter's). An unchanged counter disagrees by no more than
// the two samples' widths and the rate's own uncertainty over the stall;
// a changed one by its rate change times the time since the change, which
// grows with the stall while the noise does not. A change too small or
// too late in the stall to show here is followed afterwards, like an NTP
// slew, by the line's kink detection (discipline()).
bool timekeeper::rate_kept(const clock_sample& before, const clock_sample& now,
                           const track& t) const noexcept {
  const auto dc = static_cast<std::int64_t>(now.c - before.c);
  const std::int64_t dk = now.k - before.k;
  if (dc <= 0 || dk <= 0) return false;
  const double predicted = static_cast<double>(dc) * t.nominal * (1.0 + t.freq);
  const double noise = 3.0 * static_cast<double>(before.width_ns + now.width_ns) +
                       2.0 * t.rate_uncertainty * static_cast<double>(dk) + 100.0;
  return std::fabs(predicted - static_cast<double>(dk)) <= noise;
}

// The counter's rate changed while nothing watched (rate_kept()): the rate
// and the lines are wrong. The kernel answers (with the floor) while the
// timekeeper calibrates again, at once: the change is over, unlike a
// counter found misbehaving at a tick, which is given a back-off.
void timekeeper::relearn_rate() noexcept {
  turn_off(fallback_reason::counter_rate_wrong);
  state_ = state::calibrating;
  have_calib_ = false;
  have_last_ = false;
  page_ns_per_tick_ = 0;
}

void timekeeper::restart_line(track& t, const clock_sample& s) noexcept {
  t.origin_c = s.c;
  t.origin_k = s.k;
  t.count = 0;
  t.next = 0;
  t.outliers = 0;
  add_point(t, s);
}

void timekeeper::add_point(track& t, const clock_sample& s) noexcept {
  t.xs[t.next] = static_cast<double>(static_cast<std::int64_t>(s.c - t.origin_c));
  t.ys[t.next] = static_cast<double>(s.k - t.origin_k);
  t.next = (t.next + 1) % window;
  t.count = std::min(t.count + 1, window);
}

bool timekeeper::fit_line(const track& t, double& slope, double& intercept) noexcept {
  if (t.count < 2) {
    return false;
  }
  double mx = 0, my = 0;
  for (int i = 0; i < t.count; ++i) {
    mx += t.xs[i];
    my += t.ys[i];
  }
  mx /= t.count;
  my /= t.count;
  double sxx = 0, sxy = 0;
  for (int i = 0; i < t.count; ++i) {
    sxx += (t.xs[i] - mx) * (t.xs[i] - mx);
    sxy += (t.xs[i] - mx) * (t.ys[i] - my);
  }
  if (sxx <= 0) {
    return false;
  }
  slope = sxy / sxx;
  intercept = my - slope * mx;
  return true;
}

// Follows the kernel's rate and slews the error `error` away.
void timekeeper::discipline(track& t, std::int64_t error, const clock_sample& s) noexcept {
  double slope = 0, intercept = 0;
  if (fit_line(t, slope, intercept)) {
    // Does the new sample sit on the line? If not, the kernel's rate
    // changed (an NTP slew started or stopped): restart the line.
    const double x = static_cast<double>(static_cast<std::int64_t>(s.c - t.origin_c));
    const double residual = static_cast<double>(s.k - t.origin_k) - (intercept + slope * x);
    const double small = 3.0 * static_cast<double>(std::max<std::int64_t>(s.width_ns, 20)) + 30.0;
    const int sign = residual > 0 ? 1 : -1;
    if (std::fabs(residual) > small) {
      t.outliers = (t.outlier_sign == sign) ? t.outliers + 1 : 1;
      t.outlier_sign = sign;
    } else {
      t.outliers = 0;
    }
    const bool kink = std::fabs(residual) > 10.0 * small || t.outliers >= 2;
    if (kink) {
      // Keep the newest point before this one, so the slope is usable now.
      const int prev = (t.next + window - 1) % window;
      const double px = t.xs[prev], py = t.ys[prev];
      t.count = 1;
      t.next = 1;
      t.xs[0] = px;
      t.ys[0] = py;
      t.outliers = 0;
      t.keep_rate_span_ns = 0;  // the kernel's rate changed: the kept rate too
    }
  }
  add_point(t, s);
  if (fit_line(t, slope, intercept) && t.nominal > 0) {
    // A slope's error: about twice a sample's width over the span of the
    // line (conservative for a least-squares fit of many points).
    double lo = t.xs[0], hi = t.xs[0];
    for (int i = 1; i < t.count; ++i) {
      lo = std::min(lo, t.xs[i]);
      hi = std::max(hi, t.xs[i]);
    }
    const double span_ns = (hi - lo) * t.nominal;
    if (span_ns > 0 && span_ns >= t.keep_rate_span_ns) {
      t.keep_rate_span_ns = 0;
      t.freq = slope / t.nominal - 1.0;
      t.rate_uncertainty =
          2.0 * static_cast<double>(std::max<std::int64_t>(s.width_ns, 20)) / span_ns;
    }
  }
  double correction = -static_cast<double>(error) / static_cast<double>(config_.phase_time_ns);
  correction = std::clamp(correction, -config_.max_correction, config_.max_correction);
  t.used = t.freq + correction;
  t.last_error = error;
  // Rebase the line now and then, so x stays small enough for doubles.
  if (t.count == window && static_cast<std::int64_t>(s.c - t.origin_c) > (std::int64_t{1} << 40)) {
    restart_line(t, s);
  }
}

// How far the page may drift from the kernel over its validity window:
// the slew in use (|used - freq|, at most max_correction) plus the
// uncertainty of the rate estimate, for the worse of the two tracks.
double timekeeper::drift_rate() const noexcept {
  return std::max(std::fabs(mono_.used - mono_.freq) + mono_.rate_uncertainty,
                  std::fabs(raw_.used - raw_.freq) + raw_.rate_uncertainty);
}

std::int64_t timekeeper::drift_allowance_ns() const noexcept {
  const double window_ns = static_cast<double>(validity_delta_) * mono_.nominal;
  return static_cast<std::int64_t>(std::ceil(drift_rate() * window_ns));
}

// The least base a new line (or an off page's floor) may have at counter c,
// given `kernel`, the kernel's time read after c, and the page's lead: at
// least what a reader of the current line may have answered by then (the
// line's time at c inside its window, or kernel + lead; stale_answer() past
// it, as readers do; max(kernel + lead, floor) off).
std::int64_t timekeeper::floor_after(bool raw, std::uint64_t c, std::int64_t kernel,
                                     std::int64_t lead) const noexcept {
  const clock_line& l = published_;
  const std::int64_t base = raw ? l.raw_ns : l.mono_ns;
  if (l.max_delta == 0) return std::max(base, kernel + lead);  // off: base is the floor
  const std::uint64_t delta = c - l.cycle_last;
  if (delta < l.max_delta) return std::max(time_at(c, raw), kernel + lead);
  const std::int64_t cap =
      base + detail::delta_to_ns(l.max_delta - 1, raw ? l.raw_mult : l.mult, l.shift);
  return detail::stale_answer(kernel, lead, base, cap);
}

std::int64_t timekeeper::time_at(std::uint64_t c, bool raw) const noexcept {
  return time_on(published_, c, raw);
}

std::int64_t timekeeper::time_on(const clock_line& l, std::uint64_t c, bool raw) noexcept {
  return (raw ? l.raw_ns : l.mono_ns) +
         detail::delta_to_ns(c - l.cycle_last, raw ? l.raw_mult : l.mult, l.shift);
}

clock_line timekeeper::line_now() noexcept {
  const publish_guard guard(publish_lock_);
  return published_;
}

// The backup line during an update (see "Why the switch point is safe"):
// opened before hot turns odd, frozen at the switch point c once hot is
// odd, closed before the new parameters are written.
std::uint32_t timekeeper::open_backup() noexcept {
  const std::uint32_t seq = detail::write_begin(page_.backup.seq);
  store_line(page_.backup, published_);
  store(page_.backup_lead_ns, detail::load_relaxed(page_.lead_ns));
  store(page_.backup_lag_ns, detail::load_relaxed(page_.lag_ns));
  return seq;
}

// Readers that find both lines odd for too long (the writer preempted
// between turning hot odd and closing the backup) stop waiting and read the
// old parameters at their own counter (reader.h, max_spins), perhaps past c.
// If this writer was held up that long, the switch point moves to now: the
// new parameters start where the old ones are now, above anything those
// readers returned. 2 us is well below the shortest wait of a reader (4096
// pauses).
std::uint64_t timekeeper::switch_point_after_close(std::uint64_t c) noexcept {
  const std::uint64_t now = sources_.read_counter();
  const double ns_per_tick = mono_.nominal > 0 ? mono_.nominal : 1.0;
  const auto overrun_ticks = static_cast<std::uint64_t>(2000.0 / ns_per_tick);
  const auto overrun = static_cast<std::int64_t>(now - c);
  return overrun > static_cast<std::int64_t>(overrun_ticks) ? now : c;
}

// A switch point c, read while hot is odd (and after the switch point read
// first: it may only move forward, as in switch_point_after_close), and
// the kernel's MONOTONIC and MONOTONIC_RAW at c, for a resync, where they
// become the new bases. Read after c, they bound from above every
// kernel answer a reader returned before the switch (readers check that no
// publish began after their kernel read); read right after c, they are the
// kernel's time at c. A writer preempted in between would set the bases
// ahead of the kernel by as long as it was off the CPU, which the
// discipline, never stepping back, slews away at max_correction: 10 s per
// ms (docs/performance.md, "Why the code is shaped so"). So a try
// whose counter bracket is wider than the narrowest samples (twice their
// width: two kernel reads) is made again from a fresh counter read, and
// the narrowest is kept. Readers do not wait meanwhile
// (the backup is closed), and the first reads of a writer that was just
// woken (a daemon continued after SIGSTOP) are slow: cold caches made the
// page hundreds of ns ahead after every stall with a few tries.
timekeeper::switch_reading timekeeper::read_kernel_at_switch() noexcept {
  const std::int64_t tight_ns =
      min_width_ns_ > 0 ? std::min(2 * min_width_ns_ + 20, config_.calibration_bracket_ns)
                        : config_.calibration_bracket_ns;
  const auto tight_ticks = static_cast<std::uint64_t>(static_cast<double>(tight_ns) /
                                                      (mono_.nominal > 0 ? mono_.nominal : 1.0));
  switch_reading best;
  std::uint64_t best_width = ~std::uint64_t{0};
  for (int i = 0; i < 4 * std::max(config_.sample_tries, 1); ++i) {
    // A fresh counter even on the first try: closing the backup may have
    // read the kernel twice since the first switch point (a stale page).
    const std::uint64_t from = sources_.read_counter();
    const std::int64_t mono = sources_.read_kernel(CLOCK_MONOTONIC);
    const std::int64_t raw = sources_.read_kernel(CLOCK_MONOTONIC_RAW);
    const std::uint64_t width = sources_.read_counter() - from;
    if (width < best_width) {
      best = {from, mono, raw};
      best_width = width;
    }
    if (best_width <= tight_ticks) break;
  }
  return best;
}

bool timekeeper::close_backup(std::uint32_t seq, std::uint64_t c, std::uint64_t& frozen_at,
                              std::int64_t kernel_mono) noexcept {
  const clock_line& old = published_;
  bool frozen = false;
  if (old.max_delta != 0) {
    const std::uint64_t d = c - old.cycle_last;
    // Behind cycle_last by more than max_lag_ticks (a counter reset by a
    // suspend), readers took the stale path below, not the clamp.
    const bool behind = static_cast<std::int64_t>(d) < 0;
    if (behind && std::uint64_t{0} - d <= detail::max_lag_ticks) {
      store(page_.backup.max_delta, std::uint64_t{1});  // frozen at cycle_last
      frozen_at = old.cycle_last;
      frozen = true;
    } else if (!behind && d < old.max_delta) {
      store(page_.backup.max_delta, d + 1);  // frozen at c
      frozen_at = c;
      frozen = true;
    } else {
      // Stale: readers are answering stale_answer() from the kernel. The
      // backup's readers answer as from an "off" line whose floor is that
      // answer now (the kernel read after c), so they never undercut it;
      // the floor covers the lead, as turn_off()'s does.
      const std::int64_t lead = detail::load_relaxed(page_.lead_ns);
      if (kernel_mono == no_reading) kernel_mono = sources_.read_kernel(CLOCK_MONOTONIC);
      const std::int64_t mono = floor_after(false, c, kernel_mono, lead);
      const std::int64_t raw =
          floor_after(true, c, sources_.read_kernel(CLOCK_MONOTONIC_RAW), lead);
      store(page_.backup_lead_ns, std::int64_t{0});
      const mono_offsets o = offsets_of(old);
      store(page_.backup.mono_ns, mono);
      store(page_.backup.realtime_ns, mono + o.realtime);
      store(page_.backup.boottime_ns, mono + o.boottime);
      store(page_.backup.raw_ns, raw);
      store(page_.backup.max_delta, std::uint64_t{0});
    }
  }
  detail::write_end(page_.backup.seq, seq);
  return frozen;
}

void timekeeper::publish(bool resync) noexcept {
  if (state_ != state::running) {
    return;
  }
  const publish_guard guard(publish_lock_);
  if (next_lead_ns_ >= 0 && published_.cycle_last != judged_on_c_) {
    // Continued since this tick's samples were judged (continue_line(),
    // while this thread was held up): their errors are older than the
    // continuations, whose drift the page's lead and lag have taken on,
    // and the new line drifts on from there.
    const std::int64_t drift = drift_allowance_ns();
    next_lead_ns_ = std::max(next_lead_ns_, detail::load_relaxed(page_.lead_ns) + drift);
    next_lag_ns_ = std::max(next_lag_ns_, detail::load_relaxed(page_.lag_ns) + drift);
  }
  clock_line next = published_;
  next.mult = mult_for(mono_.nominal * (1.0 + mono_.used), published_.shift);
  next.raw_mult = mult_for(raw_.nominal * (1.0 + raw_.used), published_.shift);
  // BOOTTIME's offset only grows (suspend adds to it): a smaller kernel
  // offset would step BOOTTIME back.
  const mono_offsets next_offsets{offsets_.realtime,
                                  std::max(offsets_.boottime, offsets_of(published_).boottime)};
  next.tai_offset_s = offsets_.tai_s;
  next.max_delta = validity_delta_;

  const std::uint32_t backup_seq = open_backup();
  const std::uint32_t seq = detail::write_begin(page_.hot.seq);
  // Read after the odd seq is globally visible: see "Why the switch point
  // is safe" above.
  std::uint64_t c = sources_.read_counter();
  // A line turned on (again): its coarse clocks stand on it from here on.
  std::int64_t kernel_mono = no_reading;
  const std::int64_t coarse_floor = coarse_live_
                                        ? std::numeric_limits<std::int64_t>::min()
                                        : take_over_coarse(c, next_offsets.realtime, kernel_mono);
  std::uint64_t frozen_at = 0;
  const bool frozen = close_backup(backup_seq, c, frozen_at, kernel_mono);
  const bool was_on = published_.max_delta != 0;
  // Off, the old parameters are the kernel's time, and the resync below
  // reads the switch point again after every reader that stopped waiting.
  if (was_on) c = switch_point_after_close(c);
  // Counter behind cycle_last, stale or off: readers answered from the
  // kernel (stale_answer(), or max(kernel + lead, floor)); so does this.
  resync = resync || !was_on || c - published_.cycle_last >= published_.max_delta;
  switch_reading kernel{};
  if (resync) {
    kernel = read_kernel_at_switch();
    c = kernel.c;
  }
  std::int64_t mono = published_.mono_ns;  // never move a base back
  if (was_on && c - published_.cycle_last < published_.max_delta) {
    mono = time_at(c, false);
    next.raw_ns = time_at(c, true);
  }
  if (resync) {
    // Read after c, so these are upper bounds of the kernel's time at c:
    // every answer a reader had from the kernel is <= the new base.
    const std::int64_t lead = detail::load_relaxed(page_.lead_ns);
    mono = std::max(mono, floor_after(false, c, kernel.mono, lead));
    next.raw_ns = std::max(next.raw_ns, floor_after(true, c, kernel.raw, lead));
    // The page's error is now the step's: what a restarted writer takes
    // the kernel's time at cycle_last to be (anchor_on_page()).
    store_relaxed(page_.last_error_mono_ns, mono - kernel.mono);
    store_relaxed(page_.last_error_raw_ns, next.raw_ns - kernel.raw);
  }
  // No lower than the coarse clocks taken over above (a no-op: that was
  // the least of what this line starts from; take_over_coarse()).
  mono = std::max(mono, coarse_floor);
  set_mono_base(next, mono, next_offsets);
  next.cycle_last = c;
  // Before hot takes the line: stamp conversions wait for its entry.
  history_.open();
  store_line(page_.hot, next);
  // The bounds that go with the new parameters, under the same seq (page.h).
  if (next_lead_ns_ >= 0) store(page_.lead_ns, next_lead_ns_);
  if (next_lag_ns_ >= 0) store(page_.lag_ns, next_lag_ns_);
  next_lead_ns_ = next_lag_ns_ = -1;
  write_bound(next);
  detail::write_end(page_.hot.seq, seq);
  // The update's end: readers with a counter before it may have read the
  // backup line (docs/stamps.md).
  history_.append(next, frozen_at, frozen, update_end());
  next.seq = seq + 1;
  published_ = next;

  write_coarse(next, true);
  cont_.allowed = true;
  cont_.drift = drift_rate();
  cont_.ns_per_tick = mono_.nominal;
  cont_.ticked_c = next.cycle_last;

  store_relaxed(page_.mode_reason, static_cast<std::uint32_t>(fallback_reason::none));
  store_relaxed(page_.last_update_mono_ns, next.mono_ns);
  store_relaxed(page_.updates, detail::load_relaxed(page_.updates) + 1);
}

// A tick taken over part-way (docs/design.md, "A vanish inside a tick").
// The line on the page is continued: the same rates, offsets and shift,
// published again from a switch point c read now, exactly as publish()
// publishes with unchanged rates. So everything publish() keeps holds:
//  - continuity: each base is the line evaluated at c, truncated as the
//    fast path truncates, so no reader goes back across the switch (a
//    reader on the new line past c gets new(c) + elapsed, >= old(c), and
//    no reader combines the old line with a counter past c);
//  - stamps: that is bit for bit an ordinary history entry with unchanged
//    mults (page.h, stamp_history), and the backup froze the old line at
//    c: a stamp on either side converts to what its reader was given;
//  - the bounds: the line's validity restarts at c, so it is held
//    longer than its lead and lag were computed for. Each continuation
//    adds the drift the line may gather over the time it extends it by
//    (the rate bound of the last publish, drift_rate()), and the error
//    bound grows over it and voids no later than its source's reading.
// The ticker's state (samples, rates, discipline) is not touched: its own
// publish then goes on from the continued line (publish() reads
// published_ under the same lock), at a switch point it reads then.
bool timekeeper::continue_line() noexcept {
  const publish_guard guard(publish_lock_);
  const clock_line old = published_;
  if (!cont_.allowed || old.max_delta == 0) {
    return false;
  }
  const double ns_per_tick = cont_.ns_per_tick > 0 ? cont_.ns_per_tick : 1.0;
  const std::uint64_t age = sources_.read_counter() - old.cycle_last;
  // Younger than half a period: a tick was just taken (a standby's, while
  // the other found the tick's lock held). Stale: the kernel answers its
  // readers, and a step back to the line is the ticker's resync to make,
  // with samples; until then the coarse clocks stand still, as before. So
  // too past max_continued_ns since the ticker's own last publish.
  const std::uint64_t since_ticked = age + (old.cycle_last - cont_.ticked_c);
  if (static_cast<double>(age) * ns_per_tick < 0.5 * static_cast<double>(config_.tick_ns) ||
      age >= old.max_delta ||
      static_cast<double>(since_ticked) * ns_per_tick > static_cast<double>(max_continued_ns)) {
    return false;
  }
  const std::uint32_t backup_seq = open_backup();
  const std::uint32_t seq = detail::write_begin(page_.hot.seq);
  std::uint64_t c = sources_.read_counter();  // after the odd seq: publish()'s switch point
  std::uint64_t frozen_at = 0;
  const bool frozen = close_backup(backup_seq, c, frozen_at);
  c = switch_point_after_close(c);
  clock_line next = old;
  std::int64_t mono = 0;
  if (c - old.cycle_last < old.max_delta) {
    mono = time_at(c, false);
    next.raw_ns = time_at(c, true);
  } else {
    // Held up past the line's validity since the check above: its readers
    // went to the kernel, and this starts above what they had, as
    // publish()'s resync does (the kernel read after c).
    const std::int64_t lead = detail::load_relaxed(page_.lead_ns);
    mono = floor_after(false, c, sources_.read_kernel(CLOCK_MONOTONIC), lead);
    next.raw_ns = floor_after(true, c, sources_.read_kernel(CLOCK_MONOTONIC_RAW), lead);
  }
  set_mono_base(next, mono, offsets_of(old));
  next.cycle_last = c;
  const std::uint64_t extended = c - old.cycle_last;
  // + 1: a continued base is up to 1 ns below the old line's time at the
  // same counter (truncated twice), which the lag must cover.
  const std::int64_t extra = static_cast<std::int64_t>(std::ceil(
                                 cont_.drift * static_cast<double>(extended) * ns_per_tick)) +
                             1;
  history_.open();
  store_line(page_.hot, next);
  store(page_.lead_ns, detail::load_relaxed(page_.lead_ns) + extra);
  store(page_.lag_ns, detail::load_relaxed(page_.lag_ns) + extra);
  continue_bound(c, extended, extra);
  detail::write_end(page_.hot.seq, seq);
  history_.append(next, frozen_at, frozen, update_end());
  next.seq = seq + 1;
  published_ = next;
  write_coarse(next, true);
  store_relaxed(page_.last_update_mono_ns, next.mono_ns);
  store_relaxed(page_.updates, detail::load_relaxed(page_.updates) + 1);
  return true;
}

// The error bound of a continued line (continue_line(); hot's seq odd):
// the old bound grown over the `extended` ticks to the new cycle_last c,
// plus the lead and lag's growth (`extra_ns`); void where the old one was
// void by c, and never past the source's reading or the product's limit.
void timekeeper::continue_bound(std::uint64_t c, std::uint64_t extended,
                                std::int64_t extra_ns) noexcept {
  __extension__ typedef unsigned __int128 u128;
  bound_line& b = page_.bound;
  const std::uint64_t old_void = detail::load_relaxed(b.void_delta);
  const auto left = static_cast<std::int64_t>(cont_.bound_void_c - c);
  if (extended >= old_void || left <= 0) {
    store(b.void_delta, std::uint64_t{0});
    return;
  }
  const std::uint64_t growth = detail::load_relaxed(b.growth_mult);
  const std::uint32_t shift = detail::load_relaxed(b.growth_shift);
  const auto grown = static_cast<std::int64_t>((static_cast<u128>(extended) * growth) >> shift) + 1;
  std::uint64_t void_delta = std::min(static_cast<std::uint64_t>(left), published_.max_delta);
  if (growth != 0) void_delta = std::min(void_delta, UINT64_MAX / growth);
  store(b.bound_ns, detail::load_relaxed(b.bound_ns) + grown + extra_ns);
  store(b.void_delta, void_delta);
}

// Turns the counter path off; mono_ns/raw_ns keep the floor: the largest
// time a reader can have been given, or the kernel's time now plus the last
// measured lead of vclock over the kernel, whichever is larger.
void timekeeper::turn_off(fallback_reason why) noexcept {
  const publish_guard guard(publish_lock_);
  cont_.allowed = false;
  reason_ = why;
  store_relaxed(page_.mode_reason, static_cast<std::uint32_t>(why));
  const std::uint32_t backup_seq = open_backup();
  const std::uint32_t seq = detail::write_begin(page_.hot.seq);
  std::uint64_t c = sources_.read_counter();
  std::uint64_t frozen_at = 0;
  const bool frozen = close_backup(backup_seq, c, frozen_at);
  c = switch_point_after_close(c);
  clock_line next = published_;
  if (published_.max_delta != 0) {
    const std::int64_t lead = detail::load_relaxed(page_.lead_ns);
    const std::int64_t mono = floor_after(false, c, sources_.read_kernel(CLOCK_MONOTONIC), lead);
    next.raw_ns = floor_after(true, c, sources_.read_kernel(CLOCK_MONOTONIC_RAW), lead);
    set_mono_base(next, mono, offsets_of(published_));
  }
  next.max_delta = 0;
  next.cycle_last = c;
  history_.open();
  store_line(page_.hot, next);
  // The floor now covers the lead: fallback answers are max(kernel, floor).
  // Changed under the same seq as the floor, so no reader combines the
  // old lead with a kernel time read after this floor was taken.
  store(page_.lead_ns, std::int64_t{0});
  next_lead_ns_ = next_lag_ns_ = -1;
  store(page_.bound.status, static_cast<std::uint32_t>(sync_status::unknown));
  store(page_.bound.void_delta, std::uint64_t{0});
  detail::write_end(page_.hot.seq, seq);
  history_.append(next, frozen_at, frozen, update_end());
  next.seq = seq + 1;
  published_ = next;
  write_coarse(next, false);
}

// The error bound that goes with `l` (just stored to hot, whose seq is
// odd: readers validate the bound line with it). Every term (page.h,
// bound_line): the source's error and quantum, grown from the source's
// reading to cycle_last at the source's drift plus vclock's own slew bound,
// and vclock's deviation from the kernel (the page's lead and lag).
void timekeeper::write_bound(const clock_line& l) noexcept {
  bound_line& b = page_.bound;
  store(b.source, static_cast<std::uint32_t>(bound_.source));
  store(b.source_error_ns, bound_.error_ns);
  store(b.source_drift_ppb, bound_.drift_ppb);
  const double hz = counter_hz();
  if (bound_.status == sync_status::unknown || hz <= 0) {
    cont_.bound_void_c = l.cycle_last;
    store(b.status, static_cast<std::uint32_t>(sync_status::unknown));
    store(b.bound_ns, std::int64_t{0});
    store(b.growth_mult, std::uint64_t{0});
    store(b.void_delta, std::uint64_t{0});
    return;
  }
  const auto ppb = static_cast<std::uint64_t>(std::max<std::int64_t>(bound_.drift_ppb, 0)) +
                   static_cast<std::uint64_t>(std::llround(config_.max_correction * 1e9));
  const std::int64_t age = std::max<std::int64_t>(l.mono_ns - bound_read_mono_ns_, 0);
  const std::int64_t deviation =
      std::max(detail::load_relaxed(page_.lead_ns), detail::load_relaxed(page_.lag_ns));
  const auto grown_since_read = static_cast<std::int64_t>(
      std::ceil(static_cast<double>(age) * static_cast<double>(ppb) / 1e9));
  const std::int64_t bound =
      bound_.error_ns + bound_.quantum_ns + std::max<std::int64_t>(deviation, 0) + grown_since_read;
  const std::int64_t valid_left = std::max<std::int64_t>(bound_.valid_ns - age, 0);
  auto void_delta = static_cast<std::uint64_t>(static_cast<double>(valid_left) * hz / 1e9);
  cont_.bound_void_c = l.cycle_last + void_delta;
  // Never past the parameters' own validity: the reader's one compare
  // (delta < void_delta) is then its staleness check too (page.h).
  void_delta = std::min(void_delta, l.max_delta);
  std::uint64_t limit = void_delta;
  const bound_growth g = choose_bound_growth(ppb, hz, limit);
  void_delta = std::min(void_delta, limit);
  store(b.status, static_cast<std::uint32_t>(disrupted_ ? sync_status::disrupted : bound_.status));
  store(b.bound_ns, bound);
  store(b.growth_mult, g.mult);
  store(b.growth_shift, g.shift);
  store(b.void_delta, void_delta);
}

// The coarse clocks of `l` (just published to hot), or "off".
void timekeeper::write_coarse(const clock_line& l, bool valid) noexcept {
  const std::uint32_t seq = detail::write_begin(page_.coarse.seq);
  store_coarse(l, valid);
  detail::write_end(page_.coarse.seq, seq);
}

// A publish whose coarse clocks are not yet this writer's live line (the
// page was off, or a dead writer's line: owner word not alive) has had
// their careful path answer the kernel (max(kernel + lead, floor) off,
// stale_answer() stale) or the hot line. The new line's coarse time is
// its base at a switch point read after this; a writer held up between
// the resync's kernel read and the coarse line (preempted, its vCPU gone)
// would write it below what readers following the kernel had answered
// meanwhile, by as long as it was held up. So the coarse line becomes this
// writer's first, with hot and backup odd (readers wait: the backup is
// still open), from a kernel read made after its seq turned odd (a full
// barrier): at least every answer its careful path counted, since that
// path checks the coarse seq again after its kernel read (reader.h). From
// then on its readers stand on the line (read_live_coarse()), held-up
// writer or not. The value is what floor_after() gives at c, or the line's
// time at c while the line is valid (its coarse readers answered its base);
// the new line starts no lower (publish()). Returns it (MONOTONIC), and
// leaves the kernel's MONOTONIC in `kernel_mono` if it read it (read after
// c: close_backup() takes it for a stale line's floor, rather than read the
// kernel once more while readers wait).
std::int64_t timekeeper::take_over_coarse(std::uint64_t c, std::int64_t realtime_offset,
                                          std::int64_t& kernel_mono) noexcept {
  const std::uint32_t seq = detail::write_begin(page_.coarse.seq);
  const clock_line& l = published_;
  clock_line at = l;
  if (l.max_delta != 0 && c - l.cycle_last < l.max_delta) {
    at.mono_ns = time_at(c, false);
  } else {
    kernel_mono = sources_.read_kernel(CLOCK_MONOTONIC);
    at.mono_ns = floor_after(false, c, kernel_mono, detail::load_relaxed(page_.lead_ns));
  }
  at.realtime_ns = at.mono_ns + realtime_offset;
  store_coarse(at, true);
  detail::write_end(page_.coarse.seq, seq);
  return at.mono_ns;
}

// The coarse line's fields (its seq odd).
void timekeeper::store_coarse(const clock_line& l, bool valid) noexcept {
  coarse_line& c = page_.coarse;
  const std::int64_t realtime = l.realtime_ns;
  const std::uint32_t owner = valid ? config_.coarse_owner : 0u;
  store(c.valid, owner);
  store(c.mono_ns, l.mono_ns);
  store(c.realtime_ns, realtime);
  store(c.mono_sec, l.mono_ns / detail::ns_per_s);
  store(c.mono_nsec, l.mono_ns % detail::ns_per_s);
  store(c.realtime_sec, realtime / detail::ns_per_s);
  store(c.realtime_nsec, realtime % detail::ns_per_s);
  // time(2)'s word: 0 sends time() to the careful path (off, or a REALTIME
  // that 32 unsigned bits of seconds cannot hold: before 1970, after 2106).
  const std::int64_t seconds = realtime / detail::ns_per_s;
  const bool fits = realtime >= 0 && seconds <= std::int64_t{0xffffffff};
  const std::uint64_t word =
      owner != 0 && fits ? static_cast<std::uint64_t>(seconds) << 32 | owner : std::uint64_t{0};
  store(c.time_word, word);
  coarse_live_ = coarse_owner_alive(static_cast<std::uint32_t>(word));
}

void timekeeper::fault(fallback_reason why) noexcept {
  turn_off(why);
  // Stamps read before the jump are of another counter: they convert to
  // an error, never to a time of this one.
  if (why == fallback_reason::counter_jumped) history_.next_counter_epoch();
  state_ = state::backoff;
  have_last_ = false;
  backoff_until_ = sources_.read_kernel(CLOCK_MONOTONIC) + config_.recalibrate_after_ns;
}

void timekeeper::disable(fallback_reason why) noexcept {
  turn_off(why);
  state_ = state::off;
}

void timekeeper::pause_after_fork() noexcept {
  if (state_ == state::running) {
    turn_off(fallback_reason::not_started);
    state_ = state::running;  // the next tick resyncs with the kept rates
    have_last_ = false;
    restart_line(mono_, last_mono_);
    restart_line(raw_, last_raw_);
  }
}

}  // namespace vclock
