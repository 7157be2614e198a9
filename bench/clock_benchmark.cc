// vclock_bench: every contender in the same Google Benchmark loop (after
// abseil's clock_benchmark.cc), an independent harness to cross-check the
// figures of `vclock bench`. Readers run with 1 and 2 threads, which shows
// whether concurrent readers slow each other down (they must not: the hot
// path writes no shared cache line).
#include <benchmark/benchmark.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lib/kernel_clock.h"
#include "lib/status.h"
#include "vclock/detail/arch.h"
#include "vclock/vclock.h"
#if __has_include("vclock/vclock.hpp")
#  include "vclock/vclock.hpp"
#  define VCLOCK_BENCH_HAVE_HPP 1
#endif

namespace {

using read_fn = std::int64_t (*)() noexcept;

// The vDSO's clock_gettime, called through its pointer as libc does; set
// in main() before any benchmark runs.
vclock::kernel::gettime_fn vdso_gettime = nullptr;

std::int64_t fold(const timespec& ts) noexcept { return ts.tv_sec + ts.tv_nsec; }

template <clockid_t C>
std::int64_t vclock_ns() noexcept {
  return vclock_gettime_ns(C);
}

template <clockid_t C>
std::int64_t vclock_ns_relaxed() noexcept {
  return vclock_gettime_ns_relaxed(C);
}

template <clockid_t C>
std::int64_t vclock_ts() noexcept {
  timespec ts{};
  vclock_gettime(C, &ts);
  return fold(ts);
}

template <clockid_t C>
std::int64_t vdso_ts() noexcept {
  timespec ts{};
  vdso_gettime(C, &ts);
  return fold(ts);
}

template <clockid_t C>
std::int64_t libc_ts() noexcept {
  timespec ts{};
  clock_gettime(C, &ts);
  return fold(ts);
}

std::int64_t std_steady_now() noexcept {
  return std::chrono::steady_clock::now().time_since_epoch().count();
}

#if defined(VCLOCK_BENCH_HAVE_HPP)
std::int64_t vclock_steady_now() noexcept {
  return vclock::steady_clock::now().time_since_epoch().count();
}
#endif

template <vclock::arch::counter_ordering O>
std::int64_t counter() noexcept {
  return static_cast<std::int64_t>(vclock::arch::read_counter<O>().value);
}

// Stamps (issue 23): the counter read and the epoch, beside the bare
// counter rows below. Both words are kept: the epoch's load must not be
// optimised away.
std::int64_t stamp_ordered() noexcept {
  const vclock_stamp_t s = vclock_stamp();
  return static_cast<std::int64_t>(s.counter ^ s.epoch);
}

std::int64_t stamp_relaxed() noexcept {
  const vclock_stamp_t s = vclock_stamp_relaxed();
  return static_cast<std::int64_t>(s.counter ^ s.epoch);
}

// Batch conversion: 4096 stamps of the last few milliseconds (within the
// history), converted again and again; items/s is stamps per second.
void bm_stamps_to_ns(benchmark::State& state) {
  constexpr std::size_t n = 4096;
  std::vector<vclock_stamp_t> stamps(n);
  std::vector<std::int64_t> out(n);
  for (auto _ : state) {
    state.PauseTiming();
    for (vclock_stamp_t& s : stamps) s = vclock_stamp();
    state.ResumeTiming();
    const int r = vclock_stamps_to_ns(CLOCK_MONOTONIC, stamps.data(), n, out.data());
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

// File conversion: 4096 stamps taken over the span of a stamp file's
// records, spread over them evenly. The rows' file: 12 records appended
// over about 2 s (a stamp each 0.5 ms, 341 between two appends); the
// "many" file: 4096 records appended back to back, a stamp before each
// (the record choice's own cost, 14.5 MiB read each call). Made once, by
// the first row that needs it; `path` empty when the page could not
// export (no history).
struct stamp_file_fixture {
  std::string path;
  std::vector<vclock_stamp_t> in_order;
  std::vector<vclock_stamp_t> shuffled;  // consecutive stamps jump between records
};

std::vector<std::string> stamp_files_made;  // to unlink at the end: made only if a row ran

stamp_file_fixture make_bench_stamp_file(std::size_t records, std::chrono::microseconds apart) {
  constexpr std::size_t n = 4096;
  stamp_file_fixture x;
  const std::string path =
      "/tmp/vclock_bench_stamps_" + std::to_string(::getpid()) + "_" + std::to_string(records);
  ::unlink(path.c_str());
  stamp_files_made.push_back(path);
  for (std::size_t r = 0; r < records; ++r) {
    const std::size_t to = r + 1 == records ? n : (r + 1) * (n / records);
    while (x.in_order.size() < to) {
      x.in_order.push_back(vclock_stamp());
      if (apart.count() > 0) std::this_thread::sleep_for(apart);
    }
    if (vclock_stamps_export_append(path.c_str()) != 0) return stamp_file_fixture{};
  }
  x.shuffled = x.in_order;
  std::shuffle(x.shuffled.begin(), x.shuffled.end(), std::mt19937_64(23));
  x.path = path;
  return x;
}

const stamp_file_fixture& stamp_file(bool many) {
  if (many) {
    static const stamp_file_fixture f = make_bench_stamp_file(4096, std::chrono::microseconds(0));
    return f;
  }
  static const stamp_file_fixture f = make_bench_stamp_file(12, std::chrono::microseconds(500));
  return f;
}

// Each call opens, reads and checks the whole file, then converts: items/s
// is stamps per second, the file's read included.
void bm_stamp_convert_file(benchmark::State& state, bool shuffled, bool many) {
  const stamp_file_fixture& f = stamp_file(many);
  if (f.path.empty()) {
    state.SkipWithError("no stamp file: the page has no history to export");
    return;
  }
  const std::vector<vclock_stamp_t>& stamps = shuffled ? f.shuffled : f.in_order;
  std::vector<std::int64_t> out(stamps.size());
  for (auto _ : state) {
    const int r = vclock_stamp_convert_file(f.path.c_str(), CLOCK_MONOTONIC, stamps.data(),
                                            stamps.size(), out.data());
    if (r < 0) {
      state.SkipWithError("the stamp file was refused");
      return;
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(stamps.size()));
}

// The one loop every contender runs.
template <read_fn Read>
void bm_read(benchmark::State& state) {
  for (auto _ : state) {
    std::int64_t v = Read();
    benchmark::DoNotOptimize(v);
  }
}

// Readers that matter under contention also run with two threads.
template <read_fn Read>
void add(const std::string& name, bool threaded = false) {
  auto* b = benchmark::RegisterBenchmark(name.c_str(), bm_read<Read>);
  if (threaded) {
    b->Threads(1)->Threads(2);
  }
}

void register_all() {
  add<vclock_ns<CLOCK_MONOTONIC>>("vclock_gettime_ns/MONOTONIC", true);
  add<vclock_ns<CLOCK_REALTIME>>("vclock_gettime_ns/REALTIME");
  add<vclock_ns<CLOCK_MONOTONIC_COARSE>>("vclock_gettime_ns/MONOTONIC_COARSE");
  add<vclock_ns<CLOCK_REALTIME_COARSE>>("vclock_gettime_ns/REALTIME_COARSE");
  add<vclock_ns_relaxed<CLOCK_MONOTONIC>>("vclock_gettime_ns_relaxed/MONOTONIC", true);
  add<vclock_ts<CLOCK_MONOTONIC>>("vclock_gettime/MONOTONIC");
#if defined(VCLOCK_BENCH_HAVE_HPP)
  add<vclock_steady_now>("vclock::steady_clock::now", true);
#endif
  if (vdso_gettime != nullptr) {
    add<vdso_ts<CLOCK_MONOTONIC>>("vdso_clock_gettime/MONOTONIC", true);
    add<vdso_ts<CLOCK_REALTIME>>("vdso_clock_gettime/REALTIME");
    add<vdso_ts<CLOCK_MONOTONIC_COARSE>>("vdso_clock_gettime/MONOTONIC_COARSE");
    add<vdso_ts<CLOCK_REALTIME_COARSE>>("vdso_clock_gettime/REALTIME_COARSE");
  }
  add<libc_ts<CLOCK_MONOTONIC>>("libc_clock_gettime/MONOTONIC");
  add<std_steady_now>("std::chrono::steady_clock::now");
  namespace arch = vclock::arch;
  if constexpr (arch::has_counter) {
    constexpr arch::counter_ordering relaxed = arch::counter_ordering::none;
    constexpr arch::counter_ordering ordered = arch::ordered_variants[0];
    add<counter<relaxed>>(arch::ordering_name(relaxed));
    add<counter<ordered>>(arch::ordering_name(ordered));
  } else {
    add<counter<arch::counter_ordering::none>>("counter");
  }
  add<stamp_ordered>("vclock_stamp", true);
  add<stamp_relaxed>("vclock_stamp_relaxed", true);
  benchmark::RegisterBenchmark("vclock_stamps_to_ns/MONOTONIC/4096", bm_stamps_to_ns);
  benchmark::RegisterBenchmark("vclock_stamp_convert_file/MONOTONIC/4096", bm_stamp_convert_file,
                               false, false);
  benchmark::RegisterBenchmark("vclock_stamp_convert_file/MONOTONIC/4096/shuffled",
                               bm_stamp_convert_file, true, false);
  benchmark::RegisterBenchmark("vclock_stamp_convert_file/MONOTONIC/4096/shuffled/4096_records",
                               bm_stamp_convert_file, true, true);
}

}  // namespace

int main(int argc, char** argv) {
  // Calibrate first, so that vclock answers from the counter, not the
  // kernel fallback, from the first iteration on.
  const vclock::status_snapshot status = vclock::read_status(2000);
  benchmark::AddCustomContext("vclock_mode", status.counter_mode ? "counter" : status.reason);
  benchmark::AddCustomContext("vclock_ordering", status.ordering);
  vdso_gettime = vclock::kernel::vdso_gettime();
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (const std::string& path : stamp_files_made) ::unlink(path.c_str());
  return 0;
}
