// What `vclock bench` measures: every contender (vclock's entry points, the
// vDSO, the system call, libc, the bare counter, the floor between them),
// each as a loop of calls, a timed single call and a cold single call.
#ifndef VCLOCK_SRC_CLI_BENCH_BENCH_CONTENDERS_H_
#define VCLOCK_SRC_CLI_BENCH_BENCH_CONTENDERS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tool/args.h"
#include "vclock/detail/arch.h"

namespace vclock::cli {

// Forces `v` into a register, so the computation of `v` cannot be dropped.
template <class T>
[[gnu::always_inline]] inline void keep(T v) noexcept {
  asm volatile("" : : "r"(v));
}

// A set of byte ranges whose cache lines are flushed before each cold call.
class flush_set {
 public:
  void add(const void* begin, std::size_t bytes, const std::string& what) {
    constexpr std::uintptr_t line = 64;
    const auto first = reinterpret_cast<std::uintptr_t>(begin) & ~(line - 1);
    const auto end = reinterpret_cast<std::uintptr_t>(begin) + bytes;
    for (std::uintptr_t a = first; a < end; a += line) {
      lines_.push_back(reinterpret_cast<const char*>(a));
    }
    std::sort(lines_.begin(), lines_.end());
    lines_.erase(std::unique(lines_.begin(), lines_.end()), lines_.end());
    parts_.push_back(tool::strformat("%s (%zu B)", what.c_str(), bytes));
  }

  // Evicts every line from every cache level of every CPU, and waits until
  // all of them are gone, before the timed call starts.
  void evict() const noexcept {
    for (const char* p : lines_) {
      arch::flush_cache_line(p);
    }
    arch::flush_cache_lines_done();
  }

  std::size_t lines() const { return lines_.size(); }
  const std::vector<std::string>& parts() const { return parts_; }

 private:
  std::vector<const char*> lines_;
  std::vector<std::string> parts_;
};

// One thing measured, with its three measuring functions (each a template
// instance with the call inlined into it).
struct contender {
  std::string group;     // vdso, vclock, kernel, libc, c++, absl, counter, floor
  std::string function;  // what is called
  std::string clock;     // "MONOTONIC"; empty for calls that take no clock
  std::uint64_t (*loop)(std::uint64_t) noexcept;
  void (*timed)(std::uint32_t*, std::size_t) noexcept;
  std::uint32_t (*cold)(const flush_set&) noexcept;

  std::string name() const { return clock.empty() ? function : function + "(" + clock + ")"; }
};

// Finds the vDSO and writes the floor's page. Before anything is measured.
void prepare_contenders();

// Every contender of the hot table, grouped by clock.
std::vector<contender> hot_contenders();

// The single-call sections: the headline clock in every form, or
// (`every_clock`) every clock; always the floor.
std::vector<contender> single_call_contenders(bool every_clock);

// The code and data of vclock's and the vDSO's entry points. vDSO: its
// whole text and its time-data page (the first page of [vvar]; the others
// may be unmapped and would fault). vclock: its page, and its code from
// 4 KiB below the lowest entry point measured to 4 KiB above the highest,
// which takes in the per-clock helpers the entry points jump to. Left warm
// for every contender alike: the caller's code, the PLT/GOT slot or
// function pointer it calls through, the stack, TLBs, branch predictors.
flush_set cold_flush_set();

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_BENCH_BENCH_CONTENDERS_H_
