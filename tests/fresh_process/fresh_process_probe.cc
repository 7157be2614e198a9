// A program for tests/fresh_process_test.cc: its in-process timekeeper starts with it
// (VCLOCK_PAGE=off), and it reports the error of its first readings once they come from the
// counter. It reads MONOTONIC through vclock_gettime_ns between two kernel reads until the
// page is in counter mode (5 s at most), then for `window_ms` more.
// Usage: fresh_process_probe WINDOW_MS
// Prints one line: "counter_mode_after_ms M readings N max_error_ns E p99_error_ns P".
// Exits 1 if counter mode does not come within 5 s.
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "lib/runtime.h"
#include "vclock/detail/seqlock.h"
#include "vclock/page.h"
#include "vclock/vclock.h"

namespace {

std::int64_t kernel_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * std::int64_t{1'000'000'000} + ts.tv_nsec;
}

bool counter_mode() {
  const vclock::page& p = *vclock::detail::host_page;
  return vclock::detail::load(p.hot.max_delta) != 0 &&
         vclock::detail::load_relaxed(p.mode_reason) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::int64_t window_ns = std::atoll(argv[1]) * std::int64_t{1'000'000};
  const std::int64_t start = kernel_ns();
  std::int64_t counter_from = -1;
  std::vector<std::int64_t> errors;
  errors.reserve(1 << 22);
  while (true) {
    const std::int64_t k1 = kernel_ns();
    const std::int64_t v = vclock_gettime_ns(CLOCK_MONOTONIC);
    const std::int64_t k2 = kernel_ns();
    if (counter_from < 0) {
      if (counter_mode()) counter_from = k2;
      if (k2 - start > 5'000'000'000) {
        std::printf("no counter mode within 5 s\n");
        return 1;
      }
      continue;
    }
    if (k1 - counter_from > window_ns) break;
    errors.push_back(v < k1 ? k1 - v : (v > k2 ? v - k2 : 0));
  }
  std::sort(errors.begin(), errors.end());
  const std::int64_t max = errors.empty() ? -1 : errors.back();
  const std::int64_t p99 = errors.empty() ? -1 : errors[errors.size() * 99 / 100];
  std::printf("counter_mode_after_ms %lld readings %zu max_error_ns %lld p99_error_ns %lld\n",
              static_cast<long long>((counter_from - start) / 1'000'000), errors.size(),
              static_cast<long long>(max), static_cast<long long>(p99));
  return 0;
}
