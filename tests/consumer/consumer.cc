// Consumer smoke test: vclock::steady_clock from an installed <vclock/vclock.hpp>.
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
  std::printf("consumer_cxx: steady_clock ok (%lld ns)\n",
              static_cast<long long>(a.time_since_epoch().count()));
  return 0;
}
