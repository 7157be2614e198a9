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
// A later change (`vclock ns set`) does not re-arm a timer already armed:
// it fires at the host time computed when it was armed (docs/virtual-time.md).
//
// Versions: glibc exports timer_* in three versions. GLIBC_2.34 and
// GLIBC_2.3.3 are one implementation and the same timer_t, and are
// interposed here (src/shim/preload.map names them); GLIBC_2.2.5 is the
// ABI of binaries linked before 2003 (timer_t an int index), which is not:
// such a reference binds to glibc, past the shim.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>

#include "export.h"
#include "kernel_clock.h"
#include "virtual_time.h"

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
// librt's GLIBC_2.3.3 (the same ABI).
template <class F>
F next_timer(const char* name) noexcept {
  const F f = libc_next<F>(name, "GLIBC_2.34");
  return f != nullptr ? f : libc_next<F>(name, "GLIBC_2.3.3");
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

// A call that comes before the constructor ran (another library's
// constructor) finds the functions itself.
const real_timer_functions& functions() noexcept {
  if (real.timer_delete == nullptr || real.timerfd_gettime == nullptr) find_real_timers();
  return real;
}

// --- which clock a timer runs on ----------------------------------------------------------

constexpr int unknown_clock = -1;
constexpr int max_tracked_fds = 4096;
std::atomic<std::uint8_t> timerfd_clock_plus_one[max_tracked_fds];

void remember_timerfd(int fd, clockid_t clock) noexcept {
  if (fd >= 0 && fd < max_tracked_fds && clock >= 0 && clock < 255) {
    timerfd_clock_plus_one[fd].store(static_cast<std::uint8_t>(clock + 1),
                                     std::memory_order_relaxed);
  }
}

// The kernel shows a timerfd's clock in its fdinfo ("clockid: 1").
int timerfd_clock_from_proc(int fd) noexcept {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
  const int f = open(path, O_RDONLY | O_CLOEXEC);
  if (f < 0) return unknown_clock;
  char text[512];
  const ssize_t n = read(f, text, sizeof(text) - 1);
  close(f);
  if (n <= 0) return unknown_clock;
  text[n] = '\0';
  int clock = unknown_clock;
  for (const char* line = text; line != nullptr && *line != '\0';) {
    if (std::sscanf(line, "clockid: %d", &clock) == 1) return clock;
    const char* end = __builtin_strchr(line, '\n');
    line = end != nullptr ? end + 1 : nullptr;
  }
  return unknown_clock;
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
      return;
    }
    if (seen == empty_slot || seen == deleted_slot) {
      // Publish the clock first: a reader that finds the key finds it.
      slot.clock.store(clock, std::memory_order_relaxed);
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

void forget_timer(timer_t id) noexcept {
  if (timer_slot* slot = find_timer(id); slot != nullptr) {
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

// *_settime and *_gettime for either kind of timer (Id: a timerfd's fd or
// a timer_t), given libc's function and how to find the timer's clock.
// `absolute_flag`: the call's flag for an absolute expiry.
template <class Id>
int settime(int (*libc_fn)(Id, int, const itimerspec*, itimerspec*), int (*clock_of)(Id), Id id,
            int flags, int absolute_flag, const itimerspec* want, itimerspec* old) noexcept {
  if (joined() == nullptr || want == nullptr) return libc_fn(id, flags, want, old);
  const int clock = clock_of(id);
  if (!converts(clock)) return libc_fn(id, flags, want, old);
  const itimerspec host = to_host(clock, (flags & absolute_flag) != 0, *want);
  const int result = libc_fn(id, flags, &host, old);
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

}  // namespace
}  // namespace vclock::shim

namespace s = vclock::shim;

VCLOCK_SHIM_EXPORT int timerfd_create(clockid_t clock, int flags) {
  const int fd = s::functions().timerfd_create(clock, flags);
  if (fd >= 0) s::remember_timerfd(fd, clock);
  return fd;
}

VCLOCK_SHIM_EXPORT int timerfd_settime(int fd, int flags, const itimerspec* want, itimerspec* old) {
  return s::settime(s::functions().timerfd_settime, s::timerfd_clock, fd, flags, TFD_TIMER_ABSTIME,
                    want, old);
}

VCLOCK_SHIM_EXPORT int timerfd_gettime(int fd, itimerspec* current) {
  return s::gettime(s::functions().timerfd_gettime, s::timerfd_clock, fd, current);
}

// timer_* in both versions of the one ABI (see the top of this file).
VCLOCK_SHIM_EXPORT int vclock_shim_timer_create(clockid_t clock, sigevent* event, timer_t* id) {
  const int result = s::functions().timer_create(clock, event, id);
  if (result == 0 && id != nullptr) s::remember_timer(*id, clock);
  return result;
}

VCLOCK_SHIM_EXPORT int vclock_shim_timer_settime(timer_t id, int flags, const itimerspec* want,
                                                 itimerspec* old) {
  return s::settime(s::functions().timer_settime, s::timer_clock, id, flags, TIMER_ABSTIME, want,
                    old);
}

VCLOCK_SHIM_EXPORT int vclock_shim_timer_gettime(timer_t id, itimerspec* current) {
  return s::gettime(s::functions().timer_gettime, s::timer_clock, id, current);
}

VCLOCK_SHIM_EXPORT int vclock_shim_timer_delete(timer_t id) {
  const int result = s::functions().timer_delete(id);
  if (result == 0) s::forget_timer(id);
  return result;
}

// The names the versions give them (preload.map: the nodes, and these
// implementation names kept local).
#define VCLOCK_SHIM_VERSIONS(name)                                           \
  __asm__(".symver vclock_shim_" #name ", " #name "@@GLIBC_2.34");           \
  __asm__(".symver vclock_shim_" #name "_2_3_3, " #name "@GLIBC_2.3.3");     \
  VCLOCK_SHIM_EXPORT decltype(vclock_shim_##name) vclock_shim_##name##_2_3_3 \
      __attribute__((alias("vclock_shim_" #name)));
VCLOCK_SHIM_VERSIONS(timer_create)
VCLOCK_SHIM_VERSIONS(timer_settime)
VCLOCK_SHIM_VERSIONS(timer_gettime)
VCLOCK_SHIM_VERSIONS(timer_delete)
