// See cpu.h.
#include "cli/cpu.h"

#include <sched.h>
#include <time.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "lib/kernel_clock.h"
#include "vclock/detail/arch/cpu_features.h"
#include "vclock/detail/reader.h"

namespace vclock::cli {

std::string read_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("model name") || line.starts_with("Hardware")) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) {
        cpus.push_back(cpu);
      }
    }
  }
  return cpus;
}

bool pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

bool has_rdtscp() { return arch::has_rdtscp(); }

std::int64_t raw_now_ns() {
  timespec ts{};
  kernel::gettime(CLOCK_MONOTONIC_RAW, &ts);
  return std::int64_t{ts.tv_sec} * detail::ns_per_s + ts.tv_nsec;
}

double counter_hz_or_measure(double calibrated_hz, int measure_ms) {
  if (calibrated_hz > 0) {
    return calibrated_hz;
  }
  const std::uint64_t c0 = ticks();
  const std::int64_t t0 = raw_now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(measure_ms));
  const std::uint64_t c1 = ticks();
  const std::int64_t t1 = raw_now_ns();
  return t1 > t0 ? static_cast<double>(c1 - c0) * detail::ns_per_s / static_cast<double>(t1 - t0)
                 : 0;
}

}  // namespace vclock::cli
