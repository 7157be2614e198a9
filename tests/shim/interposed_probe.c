// Which object answers this program's own references to the shim's versioned functions
// (issue 24). Linked like any program: each reference is bound to the target libc's default
// version of its name (timer_create@GLIBC_2.34, pthread_cond_timedwait@GLIBC_2.3.2 on x86-64
// and @GLIBC_2.17 on arm64), so the shim interposes it only if it exports that version.
// Run with the shim preloaded (shim.interposed_by_version): every address must lie in it.
// Exit: 0 all in the shim, 1 one is not, 77 the shim is not loaded.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef void (*any_function)(void);

struct reference {
  const char* name;
  any_function address;  // resolved through this program's GOT, by the loader, with the version
};

static int in_shim(any_function function, const char** object) {
  void* address = NULL;  // ISO C has no cast from a function pointer to void*
  memcpy(&address, &function, sizeof address);
  Dl_info info;
  if (dladdr(address, &info) == 0 || info.dli_fname == NULL) {
    *object = "(no object)";
    return 0;
  }
  *object = info.dli_fname;
  return strstr(info.dli_fname, "libvclock_preload") != NULL;
}

int main(void) {
  const struct reference references[] = {
      {"timer_create", (any_function)&timer_create},
      {"timer_settime", (any_function)&timer_settime},
      {"timer_gettime", (any_function)&timer_gettime},
      {"timer_delete", (any_function)&timer_delete},
      {"pthread_cond_timedwait", (any_function)&pthread_cond_timedwait},
      {"clock_gettime", (any_function)&clock_gettime},  // unversioned in the shim: the control
  };
  const char* object = NULL;
  if (!in_shim((any_function)&clock_gettime, &object)) {
    printf("SKIP: the shim is not loaded (clock_gettime is %s's): run with it preloaded\n", object);
    return 77;
  }
  int failures = 0;
  for (size_t i = 0; i < sizeof references / sizeof references[0]; ++i) {
    const int ok = in_shim(references[i].address, &object);
    printf("%s: %s's%s\n", references[i].name, object, ok ? "" : "  <- not interposed");
    failures += !ok;
  }
  if (failures > 0) {
    printf("FAIL: %d reference(s) bound past the shim\n", failures);
    return 1;
  }
  printf("PASS: every reference reaches the shim\n");
  return 0;
}
