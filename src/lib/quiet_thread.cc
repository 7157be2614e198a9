// Starting the library's threads (quiet_thread.h).
#include "lib/quiet_thread.h"

#include <pthread.h>
#include <signal.h>

#include <cstddef>

namespace vclock::detail {

bool start_quiet_thread(void* (*body)(void*), const char* name) noexcept {
  // The new thread inherits this mask: block everything around the
  // creation, then give the caller its own back.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, std::size_t{64} * 1024);
  pthread_t thread;
  const int r = pthread_create(&thread, &attr, body, nullptr);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (r != 0) return false;
  pthread_setname_np(thread, name);
  return true;
}

}  // namespace vclock::detail
