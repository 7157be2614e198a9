// std::condition_variable::wait_until(steady_clock::now() + 1s), as a C++ program nobody
// here wrote would do it (libstdc++ calls pthread_cond_clockwait on CLOCK_MONOTONIC), in a
// namespace: prints the virtual ms it waited (steady_clock, through the shim) and the host
// ms (the raw system call), for tests/ns/run.sh.
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>

namespace {

long long host_ms() {
  timespec t{};
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
  return static_cast<long long>(t.tv_sec) * 1000 + t.tv_nsec / 1'000'000;
}

}  // namespace

int main() {
  std::mutex m;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(m);
  const auto v0 = std::chrono::steady_clock::now();
  const long long h0 = host_ms();
  const auto deadline = v0 + std::chrono::seconds(1);
  while (cv.wait_until(lock, deadline) != std::cv_status::timeout) {
  }
  const auto waited = std::chrono::steady_clock::now() - v0;
  std::printf(
      "virtual_ms %lld host_ms %lld\n",
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()),
      host_ms() - h0);
  return 0;
}
