// The thread that re-arms a namespace's timers when the namespace changes
// (virtual_timers.cc): the one thread the shim starts, and only in a
// process that joined a namespace and created a timer on a virtual clock.
#ifndef VCLOCK_SRC_SHIM_TIMER_WATCHER_H_
#define VCLOCK_SRC_SHIM_TIMER_WATCHER_H_

namespace vclock::shim {

// Starts the watcher of this process (once per process: a fork child
// starts its own at its first timer), which calls `on_change` after every
// change of the joined namespace, from its own thread, every signal
// blocked. Not async-signal-safe (it creates a thread): called from
// timerfd_create and timer_create, which are not either.
void start_timer_watcher(void (*on_change)()) noexcept;

}  // namespace vclock::shim

#endif  // VCLOCK_SRC_SHIM_TIMER_WATCHER_H_
