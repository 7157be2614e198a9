// Scanning /proc/self/environ with raw system calls (see the header for
// why nothing else will do). The file holds the environment the process
// was started with, as NAME=value entries each ended by a NUL.
#include "shim/startup_environment.h"

#include <fcntl.h>
#include <sys/syscall.h>

#include <cstddef>

#include "vclock/detail/arch.h"

namespace vclock::shim {
namespace {

// No stack protector: its canary is a TLS load, and this runs in the
// middle of the dynamic linker's work.
#define VCLOCK_SHIM_EARLY __attribute__((no_stack_protector))

using arch::raw_syscall;

// One entry of the environment, fed byte by byte across read()s.
class entry_matcher {
 public:
  constexpr entry_matcher(const char* prefix, bool exact) noexcept
      : prefix_(prefix), exact_(exact) {}
  VCLOCK_SHIM_EARLY void feed(char c) noexcept {
    if (c == '\0') {
      // "PREFIX" exactly (exact_), or "PREFIX" and something more.
      found_ = found_ || (matching_ && prefix_[length_] == '\0' && exact_) ||
               (matching_ && prefix_[length_] == '\0' && !exact_ && extra_);
      matching_ = true;
      length_ = 0;
      extra_ = false;
      return;
    }
    if (!matching_) return;
    if (prefix_[length_] == '\0') {
      extra_ = true;
      matching_ = !exact_;
      return;
    }
    if (prefix_[length_] != c) {
      matching_ = false;
      return;
    }
    ++length_;
  }
  bool found() const noexcept { return found_; }

 private:
  const char* prefix_;
  bool exact_;
  bool matching_ = true;
  bool extra_ = false;
  bool found_ = false;
  std::size_t length_ = 0;
};

// 0: not read yet; else 1 + stats + 2 * disable. Zeroed storage: usable
// before relocation, and the first resolver's answer serves every other.
int settings_word = 0;

VCLOCK_SHIM_EARLY int scan() noexcept {
  if constexpr (!arch::has_raw_syscall) {
    return 1;
  }
  entry_matcher stats("VCLOCK_SHIM_STATS=", false);
  entry_matcher disable("VCLOCK_DISABLE=1", true);
  // openat: the one every architecture has (arm64 and riscv have no open).
  const long fd = raw_syscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/proc/self/environ"),
                              O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1;
  char buffer[1024];
  for (;;) {
    const long n = raw_syscall(SYS_read, fd, reinterpret_cast<long>(buffer), sizeof(buffer));
    if (n <= 0) break;
    for (long i = 0; i < n; ++i) {
      stats.feed(buffer[i]);
      disable.feed(buffer[i]);
    }
  }
  raw_syscall(SYS_close, fd, 0, 0);
  return 1 + (stats.found() ? 1 : 0) + (disable.found() ? 2 : 0);
}

}  // namespace

VCLOCK_SHIM_EARLY startup_settings read_startup_settings() noexcept {
  int word = __atomic_load_n(&settings_word, __ATOMIC_RELAXED);
  if (word == 0) {
    word = scan();
    __atomic_store_n(&settings_word, word, __ATOMIC_RELAXED);
  }
  startup_settings s;
  s.stats = ((word - 1) & 1) != 0;
  s.disable = ((word - 1) & 2) != 0;
  return s;
}

}  // namespace vclock::shim
