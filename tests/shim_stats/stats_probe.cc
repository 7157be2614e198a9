// A program for tests/shim_stats_test.cc, run under the shim with VCLOCK_SHIM_STATS: counts
// its own clock calls so the test can compare them with the stats line. Usage:
//   stats_probe THREADS CALLS CHILD_CALLS
// THREADS threads, in waves of 100 at once, each make CALLS calls of each of
// clock_gettime(MONOTONIC), time() and gettimeofday() and end (before the process: their counts
// must still be in its line; past 256 threads, later waves take over the slots of ended ones); then
// a child (fork) makes CHILD_CALLS clock_gettime calls and exits (its own line); then the main
// thread makes CALLS clock_gettime calls. Prints "pid P calls N child_calls M child_pid C".
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

void read_clocks(long calls, bool all_forms) {
  for (long i = 0; i < calls; ++i) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (all_forms) {
      (void)time(nullptr);
      timeval tv;
      gettimeofday(&tv, nullptr);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const long threads = std::atol(argv[1]);
  const long calls = std::atol(argv[2]);
  const long child_calls = std::atol(argv[3]);
  for (long started = 0; started < threads;) {
    std::vector<std::thread> wave;
    for (; started < threads && wave.size() < 100; ++started) {
      wave.emplace_back(read_clocks, calls, true);
    }
    for (std::thread& t : wave) t.join();
  }
  const pid_t child = fork();
  if (child == 0) {
    read_clocks(child_calls, false);
    std::exit(0);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || status != 0) return 1;
  read_clocks(calls, false);
  std::printf("pid %d calls %ld child_calls %ld child_pid %d\n", static_cast<int>(getpid()),
              threads * calls * 3 + calls, child_calls, static_cast<int>(child));
  return 0;
}
