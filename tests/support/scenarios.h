// The timekeeper's scenarios as data: one function per scenario returns a
// table of counter, kernel and noise parameters and timed events
// (sim_world.h). tests/timekeeper_sim_test.cc runs each one. To add a
// scenario, write a function here and a TEST there.
//
// Every scenario is run twice (see the test's file comment): the whole
// `duration_ns` (>= 24 h of awake time) with a 250 ms tick, and its first
// `fine_duration_ns` with the production 4 ms tick. Events that matter are
// therefore placed early, inside the fine window, and repeated later for
// the long run where that adds something.
#ifndef VCLOCK_TESTS_SUPPORT_SCENARIOS_H_
#define VCLOCK_TESTS_SUPPORT_SCENARIOS_H_

#include <cstdint>
#include <vector>

#include "support/sim_world.h"

namespace vclock::sim {

struct scenario {
  const char* name = "";
  std::int64_t duration_ns = 24 * ns_per_h;        // long run, true time
  std::int64_t fine_duration_ns = 2 * ns_per_min;  // fine run, true time
  // Error bounds are applied from this long after the start, and this long
  // after each event (unless the event says otherwise). In the fine run (4 ms
  // tick); the long run scales both by its tick ratio: the same number of ticks.
  std::int64_t settle_ns = 2 * ns_per_s;
  std::int64_t event_settle_ns = 2 * ns_per_s;
  std::int64_t fault_settle_ns = 5 * ns_per_s;  // counter faults: recalibration
  counter_params counter;
  kernel_params kernel;
  noise_params noise;
  std::vector<event> events;
  std::uint64_t seed = 1;
  // The driver also reads the page from inside 1 in this many of the
  // timekeeper's time_sources calls, i.e. while it is mid-update.
  int mid_update_read_one_in = 16;
  // The timekeeper is preempted for this long right after each counter read
  // it makes while hot is odd and the backup closed: between the switch
  // point and what follows it (0: never).
  std::int64_t preempt_after_switch_point_ns = 0;
  // No reader ahead of the kernel by more than this, at any time (0: only
  // the 1 ms bound applies); not the REALTIME family just after a step.
  std::int64_t max_ahead_ns = 0;
};

namespace ev {
inline event ntp(std::int64_t at, double ppm, std::int64_t settle_ns = -1) {
  event e{at, event_kind::ntp_freq, ppm};
  e.settle_ns = settle_ns;
  return e;
}
inline event counter_rate(std::int64_t at, double scale) {
  return {at, event_kind::counter_rate, scale};
}
inline event jump(std::int64_t at, std::int64_t ticks) {
  return {at, event_kind::counter_jump, 0, ticks};
}
inline event step(std::int64_t at, std::int64_t ns) {
  return {at, event_kind::realtime_step, 0, ns};
}
inline event leap_insert(std::int64_t at) { return {at, event_kind::leap_insert}; }
inline event leap_delete(std::int64_t at) { return {at, event_kind::leap_delete}; }
inline event suspend(std::int64_t at, std::int64_t length, bool counter_runs,
                     bool counter_resets = false) {
  event e{at, event_kind::suspend};
  e.amount = length;
  e.counter_runs = counter_runs;
  e.counter_resets = counter_resets;
  return e;
}
inline event stall(std::int64_t at, std::int64_t length) {
  event e{at, event_kind::writer_stall};
  e.amount = length;
  return e;
}
}  // namespace ev

// The world that stands for this project's VM outside the scenarios (the
// fresh-start, stall and stamp-history simulations): samples 40-110 ns wide
// (calls of 15-60 ns, a 2.1 GHz counter in steps of 21 ticks), the counter
// 37 ppm off nominal, the kernel's RAW 12 ppm off true time and NTP at
// +3.5 ppm. No wander and no events: a caller adds what it tests.
struct machine {
  counter_params counter;
  kernel_params kernel;
  noise_params noise;
};

inline machine typical_vm() {
  machine m;
  m.counter.nominal_hz = 2.1e9;
  m.counter.rate_ppm = 37;
  m.counter.step_ticks = 21;
  m.kernel.raw_ppm = -12;
  m.kernel.ntp_ppm = 3.5;
  m.noise.cost_min_ns = 15;
  m.noise.cost_max_ns = 60;
  return m;
}

// An ordinary machine: counter 2.4 GHz, 37 ppm fast, slight wander; the
// kernel's RAW 12 ppm off true time and NTP at +3.5 ppm; four reader CPUs
// whose counters differ from the writer's by a few ticks.
inline scenario base_scenario(const char* name, std::uint64_t seed) {
  scenario s;
  s.name = name;
  s.seed = seed;
  s.counter.nominal_hz = 2.4e9;
  s.counter.rate_ppm = 37;
  s.counter.wander_ppm = 0.5;
  s.counter.wander_period_ns = 6 * ns_per_h;
  s.counter.cpu_offset_ticks = {0, 12, -9, 25};
  s.kernel.raw_ppm = -12;
  s.kernel.ntp_ppm = 3.5;
  return s;
}

// Quiet day: nothing happens for 24 h.
inline scenario quiet_day() { return base_scenario("QuietDay", 11); }

// chrony at start-up: the kernel frequency jumps to +500 ppm for 10 min
// (slewing away a start-up offset), then settles; later a -500 ppm slew.
inline scenario chrony_startup_slew() {
  scenario s = base_scenario("ChronyStartupSlew", 12);
  s.counter.nominal_hz = 3.0e9;
  s.counter.rate_ppm = -480;  // with +500 ppm NTP: ~1000 ppm between them
  s.fine_duration_ns = 11 * ns_per_min + 30 * ns_per_s;
  s.events = {ev::ntp(30 * ns_per_s, 503.5),                  //
              ev::ntp(10 * ns_per_min + 30 * ns_per_s, 3.5),  //
              ev::ntp(12 * ns_per_h, -496.5),                 //
              ev::ntp(12 * ns_per_h + 10 * ns_per_min, 3.5)};
  return s;
}

// Frequency wander of +-10 ppm/hour: the counter's rate wanders +-10 ppm
// as a sine whose steepest slope is 10 ppm/h (temperature), and the kernel's
// NTP frequency follows a +-10 ppm triangle at 10 ppm/h, updated every 16 s
// as chrony does. At times the two slopes add up to 20 ppm/h.
inline scenario frequency_wander() {
  scenario s = base_scenario("FrequencyWander", 13);
  s.counter.nominal_hz = 2.1e9;
  s.counter.rate_ppm = 250;
  s.counter.wander_ppm = 10;
  s.counter.wander_period_ns = static_cast<std::int64_t>(2 * 3.14159265358979 * ns_per_h);
  s.fine_duration_ns = 5 * ns_per_min;
  for (std::int64_t t = 16 * ns_per_s; t < s.duration_ns; t += 16 * ns_per_s) {
    const double phase =
        static_cast<double>(t % (4 * ns_per_h)) / static_cast<double>(2 * ns_per_h);  // 0..2
    const double ppm = phase < 1 ? -10 + 20 * phase : 10 - 20 * (phase - 1);
    s.events.push_back(ev::ntp(t, ppm, 0));  // 0.04 ppm steps: ordinary tracking, no settle
  }
  return s;
}

// An administrator steps REALTIME back by one hour (in the long run, twice).
inline scenario realtime_step_back() {
  scenario s = base_scenario("RealtimeStepBack", 14);
  s.events = {ev::step(30 * ns_per_s, -ns_per_h), ev::step(9 * ns_per_h, -ns_per_h)};
  return s;
}

// REALTIME stepped forward by one hour (in the long run, twice).
inline scenario realtime_step_forward() {
  scenario s = base_scenario("RealtimeStepForward", 15);
  s.events = {ev::step(30 * ns_per_s, ns_per_h), ev::step(9 * ns_per_h, ns_per_h)};
  return s;
}

// A leap second inserted: REALTIME goes back 1 s, the TAI offset grows 1 s.
inline scenario leap_second_inserted() {
  scenario s = base_scenario("LeapSecondInserted", 16);
  s.events = {ev::leap_insert(30 * ns_per_s), ev::leap_insert(20 * ns_per_h)};
  return s;
}

// A leap second deleted: REALTIME skips 1 s, the TAI offset shrinks 1 s.
inline scenario leap_second_deleted() {
  scenario s = base_scenario("LeapSecondDeleted", 17);
  s.events = {ev::leap_delete(30 * ns_per_s), ev::leap_delete(20 * ns_per_h)};
  return s;
}

// A laptop suspends for 8 h; its counter stops (holds its value).
// duration_ns counts true time: 24 h awake plus the 8 h asleep.
inline scenario suspend_counter_stopped() {
  scenario s = base_scenario("SuspendCounterStopped", 18);
  s.duration_ns = 32 * ns_per_h;
  s.fine_duration_ns = 8 * ns_per_h + 90 * ns_per_s;
  s.events = {ev::suspend(30 * ns_per_s, 8 * ns_per_h, false)};
  return s;
}

// Bare-metal S3: the counter restarts near zero on resume.
inline scenario suspend_counter_reset() {
  scenario s = base_scenario("SuspendCounterReset", 19);
  s.duration_ns = 32 * ns_per_h;
  s.fine_duration_ns = 8 * ns_per_h + 90 * ns_per_s;
  s.events = {ev::suspend(30 * ns_per_s, 8 * ns_per_h, false, true)};
  return s;
}

// A VM paused for 8 h: the guest's counter kept counting.
inline scenario suspend_counter_running() {
  scenario s = base_scenario("SuspendCounterRunning", 20);
  s.duration_ns = 32 * ns_per_h;
  s.fine_duration_ns = 8 * ns_per_h + 90 * ns_per_s;
  s.events = {ev::suspend(30 * ns_per_s, 8 * ns_per_h, true)};
  return s;
}

// Live migration: the counter rate changes by 1% (a host with another TSC
// frequency and no TSC scaling); later back, and later 1% slower.
inline scenario counter_migration() {
  scenario s = base_scenario("CounterMigration", 21);
  s.events = {ev::counter_rate(30 * ns_per_s, 1.01), ev::counter_rate(8 * ns_per_h, 1.0),
              ev::counter_rate(16 * ns_per_h, 0.99)};
  return s;
}

// The counter jumps backwards: by 700k ticks (0.29 ms: past the
// timekeeper's 200 us jump threshold; a reader cannot tell it from time
// passing slower, so the driver allows a backward step of that size until
// the timekeeper has seen it), by 100M ticks (42 ms: past the page's
// validity, so the reader's delta wraps) and by 2^33 ticks (3.6 s).
inline scenario counter_jumps_backward() {
  scenario s = base_scenario("CounterJumpsBackward", 22);
  s.fine_duration_ns = 2 * ns_per_min;
  s.events = {ev::jump(30 * ns_per_s, -700'000), ev::jump(60 * ns_per_s, -100'000'000),
              ev::jump(90 * ns_per_s, -(std::int64_t{1} << 33)), ev::jump(6 * ns_per_h, -700'000),
              ev::jump(12 * ns_per_h, -(std::int64_t{1} << 33))};
  return s;
}

// Noisy samples: costs of 8..200 ns, the counter in steps of 21 ticks (as on
// this machine), preemptions of 50-150 us on 1 in 500 calls, and on 1 in 10
// calls while calibrating; every other timekeeper call is watched by a reader.
inline scenario noisy_samples() {
  scenario s = base_scenario("NoisySamples", 23);
  s.counter.nominal_hz = 2.1e9;
  s.counter.step_ticks = 21;
  s.noise.cost_min_ns = 8;
  s.noise.cost_max_ns = 200;
  s.noise.preempt_prob = 2e-3;
  s.noise.calibrating_preempt_prob = 0.1;
  s.mid_update_read_one_in = 2;  // catch readers around a preempted publish
  return s;
}

// The writer stalls (a descheduled thread, a stopped vclockd) past the page's
// validity window while readers go on: right after calibration, when the
// rate estimate is youngest; at the moment the kernel's frequency changes by
// 500 ppm (chrony starting a slew), so that the page runs away from the
// kernel during its window and readers before the stall saw more than the
// kernel plus the last measured lead; and for a whole second. Readers must
// stay monotonic across each stall and its resync.
inline scenario writer_stalls() {
  scenario s = base_scenario("WriterStalls", 24);
  s.counter.rate_ppm = 35;
  s.fine_duration_ns = 2 * ns_per_min;
  s.events = {ev::stall(60 * ns_per_ms, 40 * ns_per_ms),  //
              ev::ntp(30 * ns_per_s, -500.0),             //
              ev::stall(30 * ns_per_s, 50 * ns_per_ms),   //
              ev::ntp(50 * ns_per_s, 0.0),                //
              ev::stall(50 * ns_per_s, 30 * ns_per_ms),   //
              ev::stall(70 * ns_per_s, ns_per_s),         //
              ev::ntp(8 * ns_per_h, 500.0),               //
              ev::stall(8 * ns_per_h, 2 * ns_per_s)};
  return s;
}

// A timekeeper preempted for 2 ms right after reading each switch point, among them the first
// publish (calibration) and the resyncs after stalls, where the new base comes from the kernel.
// A kernel time read 2 ms after the switch point, taken as the time at it, puts the clock 2 ms
// ahead, and the discipline (which never steps back) takes 20 s to slew that away: a fork child of
// a busy CI run once answered 56 us ahead. Held here to 20 us ahead at any time.
inline scenario preempted_at_switch_points() {
  scenario s = base_scenario("PreemptedAtSwitchPoints", 25);
  s.fine_duration_ns = 30 * ns_per_s;
  s.duration_ns = 2 * ns_per_h;
  s.preempt_after_switch_point_ns = 2 * ns_per_ms;
  s.max_ahead_ns = 20 * ns_per_us;
  s.events = {ev::stall(60 * ns_per_ms, 40 * ns_per_ms),  //
              ev::stall(10 * ns_per_s, 50 * ns_per_ms),   //
              ev::stall(20 * ns_per_s, ns_per_s),         //
              ev::stall(ns_per_h, 2 * ns_per_s)};
  return s;
}

}  // namespace vclock::sim

#endif  // VCLOCK_TESTS_SUPPORT_SCENARIOS_H_
