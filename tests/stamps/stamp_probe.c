/* The probe of tests/stamps/run.sh: a tracer's side, linked to libvclock.so as a user's
 * program would be. `stamp_probe N` takes N stamps over about 0.2 s, converts each (REALTIME)
 * while the page's history holds it, and prints "COUNTER EPOCH NS STATUS" a line, STATUS as
 * `vclock stamps convert` prints it (exact, estimate; a refused stamp: "- stale"/"- nodata"
 * in place of NS STATUS). Exit 0, or 2 on bad usage. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <vclock/vclock.h>

int main(int argc, char** argv) {
  if (argc != 2 || atol(argv[1]) <= 0) {
    fprintf(stderr, "usage: stamp_probe N\n");
    return 2;
  }
  const size_t n = (size_t)atol(argv[1]);
  vclock_stamp_t* stamps = malloc(n * sizeof *stamps);
  if (stamps == NULL) return 1;
  const struct timespec pause = {0, 2000000};
  for (size_t i = 0; i < n; ++i) {
    stamps[i] = vclock_stamp();
    if (i % 100 == 99) nanosleep(&pause, NULL);
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t ns = 0;
    const int status = vclock_stamp_to_ns(CLOCK_REALTIME, stamps[i], &ns);
    printf("%" PRIu64 " %" PRIu64 " ", stamps[i].counter, stamps[i].epoch);
    if (status < 0) {
      printf("- %s\n", status == -ESTALE ? "stale" : "nodata");
    } else {
      printf("%" PRId64 " %s\n", ns, status == 0 ? "exact" : "estimate");
    }
  }
  free(stamps);
  return 0;
}
