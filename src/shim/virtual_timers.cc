// Timers in virtual time (API.md, "Virtual time"): timerfd_settime and
// timer_settime arm a host timer where the namespace's line reaches the
// requested virtual time, and timerfd_gettime / timer_gettime (and the old
// value of the *_settime calls) report virtual time left.
//
// A timer's clock is not visible from its id, so the shim records it when
// the timer is created: timerfd_create (fds below max_tracked_fds; another
// timerfd, from dup or from a parent, is looked up in /proc/self/fdinfo)
// and timer_create (a fixed table of max_tracked_timers). A timer whose
// clock is unknown, or not one a namespace moves, is armed as asked.
//
// The conversion is made when the timer is armed, with the namespace's
// parameters of that moment:
//   - an absolute expiry (TFD_TIMER_ABSTIME, TIMER_ABSTIME) on a virtual
//     clock becomes the host time at which the namespace reaches it;
//   - a relative one becomes the host span to that time, and stays
//     relative (a REALTIME timer armed relative ignores REALTIME steps, as
//     the kernel's does);
//   - the interval is divided by the rate;
//   - while frozen, the expiry is never reached: the host timer is armed
//     at the end of time.
// A later change (`vclock ns set`) re-arms every timer armed so: each keeps
// what the program asked, in virtual time (its armed_timer record), and the
// watcher thread (timer_watcher.cc) sets it again through the new line
// (rearm_after_change below).
//
// Versions (glibc_versions.h, per architecture): glibc exports timer_* at
// GLIBC_2.34 (since they moved into libc) and at the version librt gave
// them (x86-64: GLIBC_2.3.3; arm64: GLIBC_2.17); the two are one
// implementation and the same timer_t, and are interposed here
// (src/shim/preload.map.in names them). x86-64 has a third, GLIBC_2.2.5,
// the ABI of binaries linked before 2003 (timer_t an int index), which is
// not: such a reference binds to glibc, past the shim.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "lib/kernel_clock.h"
#include "shim/export.h"
#include "shim/glibc_versions.h"
#include "shim/timer_watcher.h"
#include "shim/virtual_time.h"

namespace vclock::shim {
namespace {

namespace d = vclock::detail;

using timerfd_create_fn = int (*)(clockid_t, int);
using timerfd_settime_fn = int (*)(int, int, const itimerspec*, itimerspec*);
using timerfd_gettime_fn = int (*)(int, itimerspec*);
using timer_create_fn = int (*)(clockid_t, sigevent*, timer_t*);
using timer_settime_fn = int (*)(timer_t, int, const itimerspec*, itimerspec*);
using timer_gettime_fn = int (*)(timer_t, itimerspec*);
using timer_delete_fn = int (*)(timer_t);

struct real_timer_functions {
  timerfd_create_fn timerfd_create = nullptr;
  timerfd_settime_fn timerfd_settime = nullptr;
  timerfd_gettime_fn timerfd_gettime = nullptr;
  timer_create_fn timer_create = nullptr;
  timer_settime_fn timer_settime = nullptr;
  timer_gettime_fn timer_gettime = nullptr;
  timer_delete_fn timer_delete = nullptr;
};
real_timer_functions real;

// The version interposed: GLIBC_2.34 where timer_* live in libc, else
// librt's (the same ABI).
template <class F>
F next_timer(const char* name) noexcept {
  const F f = libc_next<F>(name, VCLOCK_GLIBC_TIMER);
  return f != nullptr ? f : libc_next<F>(name, VCLOCK_GLIBC_TIMER_LIBRT);
}

[[gnu::constructor]] void find_real_timers() noexcept {
  real.timerfd_create = libc_next<timerfd_create_fn>("timerfd_create");
  real.timerfd_settime = libc_next<timerfd_settime_fn>("timerfd_settime");
  real.timerfd_gettime = libc_next<timerfd_gettime_fn>("timerfd_gettime");
  real.timer_create = next_timer<timer_create_fn>("timer_create");
  real.timer_settime = next_timer<timer_settime_fn>("timer_settime");
  real.timer_gettime = next_timer<timer_gettime_fn>("timer_gettime");
  real.timer_delete = next_timer<timer_delete_fn>("timer_delete");
}

int not_a_timer() noexcept {
  errno = EINVAL;
  return -1;
}

// A timer_create or timerfd_create that comes before the constructor ran
// (another library's constructor) finds the functions itself: neither is
// async-signal-safe. The other calls are (timer_settime and timer_gettime
// are on signal-safety(7)'s list) and never look them up, which takes
// the loader's lock: a timer they are given was made by a timer_create,
// which found them (see settime_function and friends below).
const real_timer_functions& functions() noexcept {
  if (real.timer_delete == nullptr || real.timerfd_gettime == nullptr) find_real_timers();
  return real;
}

// libc's function where the constructor or a *_create found it, else one
// that does what it does without it: timerfd_settime and timerfd_gettime
// are the system call in glibc; a timer_t cannot come from anything but a
// timer_create (which found libc's timer_* first, above), so without them
// the id is not a timer (EINVAL, as the kernel says of one it does not know).
int timerfd_settime_syscall(int fd, int flags, const itimerspec* want, itimerspec* old) {
  return static_cast<int>(syscall(SYS_timerfd_settime, fd, flags, want, old));
}
int timerfd_gettime_syscall(int fd, itimerspec* current) {
  return static_cast<int>(syscall(SYS_timerfd_gettime, fd, current));
}
int no_timer_settime(timer_t, int, const itimerspec*, itimerspec*) { return not_a_timer(); }
int no_timer_gettime(timer_t, itimerspec*) { return not_a_timer(); }
int no_timer_delete(timer_t) { return not_a_timer(); }

timerfd_settime_fn timerfd_settime_function() noexcept {
  return real.timerfd_settime != nullptr ? real.timerfd_settime : timerfd_settime_syscall;
}
timerfd_gettime_fn timerfd_gettime_function() noexcept {
  return real.timerfd_gettime != nullptr ? real.timerfd_gettime : timerfd_gettime_syscall;
}
timer_settime_fn timer_settime_function() noexcept {
  return real.timer_settime != nullptr ? real.timer_settime : no_timer_settime;
}
timer_gettime_fn timer_gettime_function() noexcept {
  return real.timer_gettime != nullptr ? real.timer_gettime : no_timer_gettime;
}
timer_delete_fn timer_delete_function() noexcept {
  return real.timer_delete != nullptr ? real.timer_delete : no_timer_delete;
}

// --- which clock a timer runs on ----------------------------------------------------------

constexpr int unknown_clock = -1;
constexpr int max_tracked_fds = 4096;
std::atomic<std::uint8_t> timerfd_clock_plus_one[max_tracked_fds];

// What the program asked of a timer armed in virtual time, for re-arming it
// after a change: the virtual deadline of its first expiry (on
// `deadline_clock`: the timer's own clock if absolute; if relative,
// MONOTONIC, or BOOTTIME for a BOOTTIME timer, as the kernel runs relative
// timers) and its virtual interval. The program's *_settime writes it
// (in_flight counts calls under way, arms those done), the watcher reads
// it and re-arms, and tries again if the program armed the timer meanwhile.
// A handler that re-arms a timer while interrupting its own thread's
// *_settime of the same timer may leave the interrupted call's request
// here (the kernel holds the handler's): the next change re-arms that.
// Zero-initialised (so the tables cost no file space): deadline_clock is the
// clock plus one, 0 when not armed.
constexpr int not_armed = 0;
struct armed_timer {
  std::atomic<std::uint32_t> in_flight{0};
  std::atomic<std::uint32_t> arms{0};
  std::atomic<int> deadline_clock{not_armed};
  std::atomic<int> flags{0};
  std::atomic<bool> absolute{false};
  std::atomic<std::int64_t> deadline{0};
  std::atomic<std::int64_t> interval{0};
};
armed_timer timerfd_armed[max_tracked_fds];

armed_timer* timerfd_record(int fd) noexcept {
  return fd >= 0 && fd < max_tracked_fds ? &timerfd_armed[fd] : nullptr;
}

void remember_timerfd(int fd, clockid_t clock) noexcept {
  if (fd >= 0 && fd < max_tracked_fds && clock >= 0 && clock < 255) {
    timerfd_clock_plus_one[fd].store(static_cast<std::uint8_t>(clock + 1),
                                     std::memory_order_relaxed);
    timerfd_armed[fd].deadline_clock.store(not_armed, std::memory_order_release);
  }
}

// "/proc/self/fdinfo/<fd>", written by hand: timerfd_settime may be called
// from a signal handler, and stdio's formatting is not async-signal-safe.
constexpr char fdinfo_prefix[] = "/proc/self/fdinfo/";
void fdinfo_path(int fd, char (&path)[sizeof(fdinfo_prefix) + 11]) noexcept {
  __builtin_memcpy(path, fdinfo_prefix, sizeof(fdinfo_prefix) - 1);
  char digits[11];
  int n = 0;
  for (unsigned v = static_cast<unsigned>(fd); n == 0 || v != 0; v /= 10) {
    digits[n++] = static_cast<char>('0' + v % 10);
  }
  char* out = path + sizeof(fdinfo_prefix) - 1;
  while (n > 0) *out++ = digits[--n];
  *out = '\0';
}

// The number after `key` (e.g. "clockid:") at the start of one of the
// lines of `text`, blanks skipped; false if no line has it.
bool field_value(const char* text, const char* key, unsigned long long& value) noexcept {
  const std::size_t key_length = __builtin_strlen(key);
  for (const char* line = text; line != nullptr && *line != '\0';) {
    if (__builtin_strncmp(line, key, key_length) == 0) {
      const char* p = line + key_length;
      while (*p == ' ' || *p == '\t') ++p;
      if (*p < '0' || *p > '9') return false;
      value = 0;
      for (; *p >= '0' && *p <= '9'; ++p) value = value * 10 + static_cast<unsigned>(*p - '0');
      return true;
    }
    const char* end = __builtin_strchr(line, '\n');
    line = end != nullptr ? end + 1 : nullptr;
  }
  return false;
}

// A number the kernel shows in a timerfd's fdinfo, e.g. 1 for `key`
// "clockid:" from its line "clockid: 1"; false if absent.
bool timerfd_info(int fd, const char* key, unsigned long long& value) noexcept {
  if (fd < 0) return false;
  char path[sizeof(fdinfo_prefix) + 11];
  fdinfo_path(fd, path);
  const int f = open(path, O_RDONLY | O_CLOEXEC);
  if (f < 0) return false;
  char text[512];
  const ssize_t n = read(f, text, sizeof(text) - 1);
  close(f);
  if (n <= 0) return false;
  text[n] = '\0';
  return field_value(text, key, value);
}

int timerfd_clock_from_proc(int fd) noexcept {
  unsigned long long clock = 0;
  return timerfd_info(fd, "clockid:", clock) && clock < 255 ? static_cast<int>(clock)
                                                            : unknown_clock;
}

int timerfd_clock(int fd) noexcept {
  if (fd >= 0 && fd < max_tracked_fds) {
    const int known = timerfd_clock_plus_one[fd].load(std::memory_order_relaxed);
    if (known != 0) return known - 1;
  }
  const int clock = timerfd_clock_from_proc(fd);
  if (clock != unknown_clock) remember_timerfd(fd, clock);
  return clock;
}

// POSIX timers: an open-addressing table of (timer_t + 1, clock), lock-free
// (timer_settime is async-signal-safe, and so is this).
constexpr int max_tracked_timers = 1024;
constexpr std::uintptr_t empty_slot = 0;
constexpr std::uintptr_t deleted_slot = UINTPTR_MAX;
struct timer_slot {
  std::atomic<std::uintptr_t> key{empty_slot};
  std::atomic<int> clock{unknown_clock};
  armed_timer armed;
};
timer_slot timer_slots[max_tracked_timers];

std::uintptr_t key_of(timer_t id) noexcept { return reinterpret_cast<std::uintptr_t>(id) + 1; }
std::size_t home_of(std::uintptr_t key) noexcept {
  return static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ULL) >> 54) % max_tracked_timers;
}

void remember_timer(timer_t id, clockid_t clock) noexcept {
  const std::uintptr_t key = key_of(id);
  if (key == empty_slot || key == deleted_slot) return;
  const std::size_t home = home_of(key);
  for (int i = 0; i < max_tracked_timers; ++i) {
    timer_slot& slot = timer_slots[(home + static_cast<std::size_t>(i)) % max_tracked_timers];
    std::uintptr_t seen = slot.key.load(std::memory_order_acquire);
    if (seen == key) {
      slot.clock.store(clock, std::memory_order_release);
      slot.armed.deadline_clock.store(not_armed, std::memory_order_release);
      return;
    }
    if (seen == empty_slot || seen == deleted_slot) {
      // Publish the clock first: a reader that finds the key finds it.
      slot.clock.store(clock, std::memory_order_relaxed);
      slot.armed.deadline_clock.store(not_armed, std::memory_order_relaxed);
      if (slot.key.compare_exchange_strong(seen, key, std::memory_order_acq_rel)) return;
    }
  }
  // Full: the timer runs on host time (more than max_tracked_timers timers).
}

timer_slot* find_timer(timer_t id) noexcept {
  const std::uintptr_t key = key_of(id);
  const std::size_t home = home_of(key);
  for (int i = 0; i < max_tracked_timers; ++i) {
    timer_slot& slot = timer_slots[(home + static_cast<std::size_t>(i)) % max_tracked_timers];
    const std::uintptr_t seen = slot.key.load(std::memory_order_acquire);
    if (seen == key) return &slot;
    if (seen == empty_slot) return nullptr;
  }
  return nullptr;
}

int timer_clock(timer_t id) noexcept {
  const timer_slot* slot = find_timer(id);
  return slot != nullptr ? slot->clock.load(std::memory_order_acquire) : unknown_clock;
}

armed_timer* timer_record(timer_t id) noexcept {
  timer_slot* slot = find_timer(id);
  return slot != nullptr ? &slot->armed : nullptr;
}

void forget_timer(timer_t id) noexcept {
  if (timer_slot* slot = find_timer(id); slot != nullptr) {
    slot->armed.deadline_clock.store(not_armed, std::memory_order_release);
    slot->key.store(deleted_slot, std::memory_order_release);
  }
}

// --- converting -------------------------------------------------------------------------

bool is_zero(const timespec& t) noexcept { return t.tv_sec == 0 && t.tv_nsec == 0; }

// The rate that applies from now on (the piece after the switch point: a
// change in flight is at most a few ms from it).
std::uint64_t current_rate(clockid_t clock) noexcept {
  return d::load_ns_view(*joined(), family_of_clock(clock)).rate_after_q32;
}

// A host span for virtual span `ns` at `rate` (rounded up: a timer never
// fires early), and back (rounded down, but never to 0 from nonzero: 0
// means disarmed).
std::int64_t host_span(std::int64_t ns, std::uint64_t rate) noexcept {
  if (rate == rate_one_q32 || rate == 0 || ns <= 0) return ns;
  const ns_int128 h = ((static_cast<ns_int128>(ns) << 32) + rate - 1) / rate;
  return h > INT64_MAX ? INT64_MAX : static_cast<std::int64_t>(h);
}

std::int64_t virtual_span(std::int64_t ns, std::uint64_t rate) noexcept {
  if (rate == rate_one_q32 || rate == 0 || ns <= 0) return ns;
  const ns_int128 v = (static_cast<ns_int128>(ns) * rate) >> 32;
  if (v > INT64_MAX) return INT64_MAX;
  return v > 0 ? static_cast<std::int64_t>(v) : 1;
}

// The end of time for a host timer that must not fire (a frozen
// namespace): the kernel caps it at its own end of time.
constexpr std::int64_t never_ns = INT64_MAX;

// `want`, armed on virtual `clock` with `absolute` set or not, as the host
// timer that fires when the namespace reaches it.
itimerspec to_host(clockid_t clock, bool absolute, const itimerspec& want) noexcept {
  itimerspec host = want;
  if (is_zero(want.it_value) || !valid_timespec(&want.it_value) ||
      !valid_timespec(&want.it_interval)) {
    return host;  // disarm, or let the kernel say EINVAL
  }
  const ns_family family = family_of_clock(clock);
  const d::ns_view v = d::load_ns_view(*joined(), family);
  const std::int64_t now = virtual_now(clock);
  const std::int64_t deadline =
      absolute ? to_ns(want.it_value) : saturating_add(now, to_ns(want.it_value));
  std::int64_t at = 0;
  const bool reached = host_deadline(v, as_family_deadline(clock, deadline), at);
  const std::int64_t host_now = kernel::now_ns(clock);
  if (clock == CLOCK_TAI && reached) {
    // The line is REALTIME's: the host's TAI is its REALTIME plus whole seconds.
    const std::int64_t gap = host_now - kernel::now_ns(CLOCK_REALTIME);
    at = saturating_add(at, (gap + ns_per_s / 2) / ns_per_s * ns_per_s);
  }
  if (!reached) {
    host.it_value = to_timespec(absolute ? never_ns : never_ns - host_now);
  } else if (absolute) {
    host.it_value = to_timespec(at);
  } else {
    const std::int64_t span = at - host_now;
    host.it_value = to_timespec(span > 0 ? span : 1);  // 0 would disarm
  }
  host.it_interval = to_timespec(host_span(to_ns(want.it_interval), v.rate_after_q32));
  return host;
}

// What the kernel reports (time left, interval) in host time, as virtual
// time at the namespace's rate. Frozen: left as it is (it cannot be known
// from the host timer, which waits for the end of time).
void to_virtual(clockid_t clock, itimerspec& t) noexcept {
  const std::uint64_t rate = current_rate(clock);
  if (rate == 0) return;
  t.it_value = to_timespec(virtual_span(to_ns(t.it_value), rate));
  t.it_interval = to_timespec(virtual_span(to_ns(t.it_interval), rate));
}

bool converts(int clock) noexcept { return clock != unknown_clock && is_virtual_clock(clock); }

// The clock whose virtual time a relative expiry counts: the kernel runs a
// relative REALTIME (or TAI) timer on MONOTONIC, so a REALTIME step, or a
// change of the namespace's REALTIME offset, does not move it.
clockid_t relative_clock(clockid_t clock) noexcept {
  return clock == CLOCK_BOOTTIME ? CLOCK_BOOTTIME : CLOCK_MONOTONIC;
}

void remember_arming(armed_timer& r, clockid_t clock, int flags, bool absolute,
                     const itimerspec& want) noexcept {
  if (is_zero(want.it_value) || !valid_timespec(&want.it_value) ||
      !valid_timespec(&want.it_interval)) {
    r.deadline_clock.store(not_armed, std::memory_order_relaxed);
    return;
  }
  const clockid_t on = absolute ? clock : relative_clock(clock);
  r.flags.store(flags, std::memory_order_relaxed);
  r.absolute.store(absolute, std::memory_order_relaxed);
  r.deadline.store(
      absolute ? to_ns(want.it_value) : saturating_add(virtual_now(on), to_ns(want.it_value)),
      std::memory_order_relaxed);
  r.interval.store(to_ns(want.it_interval), std::memory_order_relaxed);
  r.deadline_clock.store(on + 1, std::memory_order_relaxed);
}

// *_settime and *_gettime for either kind of timer (Id: a timerfd's fd or
// a timer_t), given libc's function and how to find the timer's clock and
// record. `absolute_flag`: the call's flag for an absolute expiry.
template <class Id>
int settime(int (*libc_fn)(Id, int, const itimerspec*, itimerspec*), int (*clock_of)(Id),
            armed_timer* (*record_of)(Id), Id id, int flags, int absolute_flag,
            const itimerspec* want, itimerspec* old) noexcept {
  if (joined() == nullptr || want == nullptr) return libc_fn(id, flags, want, old);
  const int clock = clock_of(id);
  if (!converts(clock)) return libc_fn(id, flags, want, old);
  armed_timer* record = record_of(id);
  // Before the namespace is read: a watcher that finds no call in flight
  // after a change knows any later call reads the new parameters.
  if (record != nullptr) record->in_flight.fetch_add(1, std::memory_order_seq_cst);
  const bool absolute = (flags & absolute_flag) != 0;
  const itimerspec host = to_host(absolute ? clock : relative_clock(clock), absolute, *want);
  if (record != nullptr) remember_arming(*record, clock, flags, absolute, *want);
  const int result = libc_fn(id, flags, &host, old);
  if (record != nullptr) {
    if (result != 0) record->deadline_clock.store(not_armed, std::memory_order_relaxed);
    record->arms.fetch_add(1, std::memory_order_release);
    record->in_flight.fetch_sub(1, std::memory_order_release);
  }
  if (result == 0 && old != nullptr) to_virtual(clock, *old);
  return result;
}

template <class Id>
int gettime(int (*libc_fn)(Id, itimerspec*), int (*clock_of)(Id), Id id,
            itimerspec* current) noexcept {
  const int result = libc_fn(id, current);
  if (result != 0 || joined() == nullptr || current == nullptr) return result;
  const int clock = clock_of(id);
  if (converts(clock)) to_virtual(clock, *current);
  return result;
}

// --- re-arming after a change ------------------------------------------------------------

// A timerfd's expirations not yet read: re-arming sets them to 0, so they
// are put back (TFD_IOC_SET_TICKS of <linux/timerfd.h>, which clashes with
// <sys/timerfd.h>; where the kernel lacks it, they are lost).
constexpr unsigned long set_ticks_request = _IOW('T', 0, std::uint64_t);

std::uint64_t pending_ticks(int fd) noexcept {
  unsigned long long ticks = 0;
  return timerfd_info(fd, "ticks:", ticks) ? ticks : 0;
}

enum class rearm_result { done, retry };

// Sets timer `id` (on `clock`) again from its record, through the line now
// in force: the first expiry after the namespace's time now (a periodic
// timer's later ones at its interval), at the new rate. A timer the kernel
// shows disarmed has fired (a one-shot) and is left alone; one that fires
// while this runs is disarmed again and its expiry kept. `retry`: the
// program armed it meanwhile, or was arming it.
template <class Id>
rearm_result rearm(int (*libc_settime)(Id, int, const itimerspec*, itimerspec*),
                   int (*libc_gettime)(Id, itimerspec*), Id id, armed_timer& r) noexcept {
  if (r.in_flight.load(std::memory_order_seq_cst) != 0) return rearm_result::retry;
  const std::uint32_t arms = r.arms.load(std::memory_order_acquire);
  const int armed_on = r.deadline_clock.load(std::memory_order_acquire);
  if (armed_on == not_armed) return rearm_result::done;
  const clockid_t on = armed_on - 1;
  const int flags = r.flags.load(std::memory_order_relaxed);
  const bool absolute = r.absolute.load(std::memory_order_relaxed);
  std::int64_t deadline = r.deadline.load(std::memory_order_relaxed);
  const std::int64_t interval = r.interval.load(std::memory_order_relaxed);
  itimerspec now_set{};
  if (libc_gettime(id, &now_set) != 0 || is_zero(now_set.it_value)) return rearm_result::done;
  const std::int64_t now = virtual_now(on);
  if (now >= deadline) {
    if (interval <= 0) return rearm_result::done;  // due on the line it was armed with
    const ns_int128 next =
        deadline + (static_cast<ns_int128>(now - deadline) / interval + 1) * interval;
    deadline = next > INT64_MAX ? INT64_MAX : static_cast<std::int64_t>(next);
  }
  itimerspec want{to_timespec(interval), {}};
  const std::int64_t left = deadline - now;
  want.it_value = to_timespec(absolute ? deadline : (left > 0 ? left : 1));
  const itimerspec host = to_host(on, absolute, want);
  constexpr bool is_timerfd = std::is_same_v<Id, int>;
  std::uint64_t ticks = 0;
  if constexpr (is_timerfd) ticks = pending_ticks(id);
  itimerspec before{};
  if (libc_settime(id, flags, &host, &before) != 0) return rearm_result::done;
  if (is_zero(before.it_value) && interval <= 0) {
    // It fired between the two calls: that expiry stands, this one goes.
    const itimerspec off{};
    libc_settime(id, 0, &off, nullptr);
    ++ticks;
  }
  if constexpr (is_timerfd) {
    if (ticks > 0) ioctl(id, set_ticks_request, &ticks);
  }
  const bool untouched = r.arms.load(std::memory_order_acquire) == arms &&
                         r.in_flight.load(std::memory_order_seq_cst) == 0;
  return untouched ? rearm_result::done : rearm_result::retry;
}

// One pass over every timer armed in virtual time; false if one must be
// tried again.
bool rearm_every_timer() noexcept {
  const real_timer_functions& f = functions();
  bool all_done = true;
  for (int fd = 0; fd < max_tracked_fds; ++fd) {
    armed_timer& r = timerfd_armed[fd];
    if (r.deadline_clock.load(std::memory_order_acquire) == not_armed) continue;
    all_done &= rearm(f.timerfd_settime, f.timerfd_gettime, fd, r) == rearm_result::done;
  }
  for (timer_slot& slot : timer_slots) {
    const std::uintptr_t key = slot.key.load(std::memory_order_acquire);
    if (key == empty_slot || key == deleted_slot) continue;
    if (slot.armed.deadline_clock.load(std::memory_order_acquire) == not_armed) continue;
    // NOLINTNEXTLINE(performance-no-int-to-ptr): the key is the timer_t plus one
    const auto id = reinterpret_cast<timer_t>(key - 1);
    all_done &= rearm(f.timer_settime, f.timer_gettime, id, slot.armed) == rearm_result::done;
  }
  return all_done;
}

// The watcher's handler: a pass, and more while the program is arming a
// timer itself (its call takes microseconds; 100 passes 1 ms apart).
void rearm_after_change() {
  for (int pass = 0; pass < 100 && !rearm_every_timer(); ++pass) {
    const timespec ms{0, 1'000'000};
    syscall(SYS_nanosleep, &ms, nullptr);  // not the shim's nanosleep: host time
  }
}

}  // namespace
}  // namespace vclock::shim

namespace s = vclock::shim;

VCLOCK_SHIM_EXPORT int timerfd_create(clockid_t clock, int flags) {
  const int fd = s::functions().timerfd_create(clock, flags);
  if (fd >= 0) s::remember_timerfd(fd, clock);
  if (fd >= 0 && s::joined() != nullptr && s::converts(clock)) {
    s::start_timer_watcher(s::rearm_after_change);
  }
  return fd;
}

VCLOCK_SHIM_EXPORT int timerfd_settime(int fd, int flags, const itimerspec* want, itimerspec* old) {
  return s::settime(s::timerfd_settime_function(), s::timerfd_clock, s::timerfd_record, fd, flags,
                    TFD_TIMER_ABSTIME, want, old);
}

VCLOCK_SHIM_EXPORT int timerfd_gettime(int fd, itimerspec* current) {
  return s::gettime(s::timerfd_gettime_function(), s::timerfd_clock, fd, current);
}

// timer_* in both versions of the one ABI (see the top of this file).
VCLOCK_SHIM_EXPORT int vclock_shim_timer_create(clockid_t clock, sigevent* event, timer_t* id) {
  const int result = s::functions().timer_create(clock, event, id);
  if (result == 0 && id != nullptr) s::remember_timer(*id, clock);
  if (result == 0 && s::joined() != nullptr && s::converts(clock)) {
    s::start_timer_watcher(s::rearm_after_change);
  }
  return result;
}

VCLOCK_SHIM_EXPORT int vclock_shim_timer_settime(timer_t id, int flags, const itimerspec* want,
                                                 itimerspec* old) {
  return s::settime(s::timer_settime_function(), s::timer_clock, s::timer_record, id, flags,
                    TIMER_ABSTIME, want, old);
}

VCLOCK_SHIM_EXPORT int vclock_shim_timer_gettime(timer_t id, itimerspec* current) {
  return s::gettime(s::timer_gettime_function(), s::timer_clock, id, current);
}

VCLOCK_SHIM_EXPORT int vclock_shim_timer_delete(timer_t id) {
  const int result = s::timer_delete_function()(id);
  if (result == 0) s::forget_timer(id);
  return result;
}

// The names the versions give them (preload.map.in: the nodes, and these
// implementation names kept local).
#define VCLOCK_SHIM_VERSIONS(name)                                                     \
  __asm__(".symver vclock_shim_" #name ", " #name "@@" VCLOCK_GLIBC_TIMER);            \
  __asm__(".symver vclock_shim_" #name "_librt, " #name "@" VCLOCK_GLIBC_TIMER_LIBRT); \
  VCLOCK_SHIM_EXPORT decltype(vclock_shim_##name) vclock_shim_##name##_librt           \
      __attribute__((alias("vclock_shim_" #name)));
VCLOCK_SHIM_VERSIONS(timer_create)
VCLOCK_SHIM_VERSIONS(timer_settime)
VCLOCK_SHIM_VERSIONS(timer_gettime)
VCLOCK_SHIM_VERSIONS(timer_delete)
