// Consumer smoke test: vclock::steady_clock from an installed <vclock/vclock.hpp>, whose
// now() reads the page inline (no daemon here unless the machine runs one: the library's
// in-process timekeeper). For 100 ms, the inline reading lies between two called ones.
#include <chrono>
#include <cstdio>
#include <vclock/vclock.hpp>

int main() {
  static_assert(vclock::steady_clock::is_steady);
  const vclock::steady_clock::time_point a = vclock::steady_clock::now();
  const vclock::steady_clock::time_point b = vclock::steady_clock::now();
  if (b < a || a.time_since_epoch().count() <= 0) {
    std::fprintf(stderr, "consumer_cxx: steady_clock went backwards or is not positive\n");
    return 1;
  }
  const long long end = vclock_gettime_ns(CLOCK_MONOTONIC) + 100'000'000;
  long long n = 0;
  for (long long before = 0; before < end; ++n) {
    before = vclock_gettime_ns(CLOCK_MONOTONIC);
    const long long mid = vclock::steady_clock::now().time_since_epoch().count();
    const long long after = vclock_gettime_ns(CLOCK_MONOTONIC);
    if (!(before <= mid && mid <= after)) {
      std::fprintf(stderr, "consumer_cxx: inline %lld not within called [%lld, %lld]\n", mid,
                   before, after);
      return 1;
    }
  }
  std::printf("consumer_cxx: steady_clock ok (%lld ns; %lld inline reads sandwiched)\n",
              static_cast<long long>(a.time_since_epoch().count()), n);
  return 0;
}
