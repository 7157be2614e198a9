// std::chrono as a C++ program sees it, for run.sh: libstdc++'s clocks call clock_gettime from
// inside libstdc++.so, not from the program, so the shim must win that binding too.
// steady_clock and system_clock for ~300 ms, with sleeps; neither may go back, and a sleep
// measured on steady_clock lasts at least what was asked. Prints `pid N`, `realtime NAME NS
// GRAIN_NS` and `clock LABEL CLOCK NS REAL1_NS REAL2_NS GRAIN_NS REAL_GRAIN_NS` (steady_clock
// between two system_clock readings) for run.sh's kernel brackets.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

int main() {
  using namespace std::chrono;
  const auto end = steady_clock::now() + milliseconds(300);
  steady_clock::time_point last_steady{};
  system_clock::time_point last_system{};
  for (long n = 1;; ++n) {
    const auto steady = steady_clock::now();
    const auto system = system_clock::now();
    if (steady < last_steady || system < last_system) {
      std::fprintf(stderr, "FAIL: went back: steady by %lld ns, system by %lld ns\n",
                   static_cast<long long>((last_steady - steady).count()),
                   static_cast<long long>((last_system - system).count()));
      return 1;
    }
    last_steady = steady;
    last_system = system;
    if (steady >= end) break;
    if (n % 4096 == 0) {
      std::this_thread::sleep_for(microseconds(500));
      const auto slept = steady_clock::now() - steady;
      // The kernel sleeps on its own MONOTONIC; vclock's may differ from it by tens of ns.
      if (slept < microseconds(450)) {
        std::fprintf(stderr, "FAIL: sleep_for(500us) lasted %lld ns\n",
                     static_cast<long long>(nanoseconds(slept).count()));
        return 1;
      }
    }
  }
  std::printf(
      "pid %ld\nrealtime system_clock %lld 1\n", static_cast<long>(getpid()),
      static_cast<long long>(duration_cast<nanoseconds>(last_system.time_since_epoch()).count()));
  const auto ns = [](auto t) {
    return static_cast<long long>(duration_cast<nanoseconds>(t.time_since_epoch()).count());
  };
  const auto r1 = system_clock::now();
  const auto x = steady_clock::now();
  const auto r2 = system_clock::now();
  std::printf("clock steady_clock MONOTONIC %lld %lld %lld 1 1\n", ns(x), ns(r1), ns(r2));
  return 0;
}
