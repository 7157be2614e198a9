// What the library asks the CPU beyond the counter read (arch.h): which
// ordered read this CPU gets, whether its counter is invariant, and the
// counter's identity for the page header. The one place, with the arch
// headers, that tests the architecture; each architecture fills in the
// same functions, in namespace vclock::arch:
//
//   counter_ordering choose_ordering() noexcept;  the cheapest ordered
//       read this CPU executes correctly (one of ordered_variants).
//       Resolver-safe: runs inside ifunc resolvers (src/lib/ordering.cc).
//   bool ordering_available(counter_ordering) noexcept;  whether this CPU
//       can execute that ordered read at all (tests, benchmarks).
//   bool has_rdtscp() noexcept;  x86's RDTSCP; false elsewhere (reported
//       by `vclock bench`).
//   bool counter_is_invariant() noexcept;  the counter ticks at a constant
//       rate through frequency and power-state changes.
//   counter_identity read_counter_identity() noexcept;  vendor, signature
//       and nominal rate; zeros where the CPU does not say.
//   inline constexpr const char* counter_clocksource;  the kernel's name
//       for the clocksource that is this counter ("" where none is).
//   inline constexpr bool trust_needs_kernel_clocksource;  true: the
//       counter is trusted only while the kernel's clocksource is it (the
//       kernel moves off a counter it finds broken, and vclock follows).
//   bool running_under_emulation() noexcept;  a user-mode emulator
//       (qemu-user) runs this program: the counter and every timing are
//       the emulator's.
//   inline constexpr kernel_vdso_names kernel_vdso;  what the kernel's
//       vDSO calls its entry points on this architecture.
//
// Internal: not installed, not included by the public headers (it would
// bring <cpuid.h> into every reader's translation unit).
#ifndef VCLOCK_DETAIL_ARCH_CPU_FEATURES_H_
#define VCLOCK_DETAIL_ARCH_CPU_FEATURES_H_

#include <cstdint>
#include <cstring>

#include "vclock/detail/arch.h"

#if defined(__x86_64__)
#  include <cpuid.h>
#elif defined(__aarch64__)
#  include <fcntl.h>
#  include <unistd.h>
#endif

// For what runs inside an ifunc resolver: during relocation, before any
// sanitizer runtime is up, and maybe before the TLS the stack protector reads.
#define VCLOCK_RESOLVER_SAFE \
  __attribute__((no_sanitize("address", "thread", "undefined"), no_stack_protector))

namespace vclock::arch {

// The counter's identity, written into the page header: a page from a
// machine with another counter is not used.
struct counter_identity {
  char vendor[16] = {};          // the CPU vendor's string, NUL-padded
  std::uint32_t signature = 0;   // family, model, stepping
  std::uint64_t nominal_hz = 0;  // information only: the rate in use is measured
};

// The kernel's vDSO entry points: each architecture names them its own way.
struct kernel_vdso_names {
  const char* clock_gettime;
  const char* gettimeofday;
  const char* clock_getres;
  const char* version;  // the symbol version they are defined at
};

#if defined(__x86_64__)

inline constexpr kernel_vdso_names kernel_vdso = {"__vdso_clock_gettime", "__vdso_gettimeofday",
                                                  "__vdso_clock_getres", "LINUX_2.6"};

VCLOCK_RESOLVER_SAFE inline void cpuid(unsigned leaf, unsigned& a, unsigned& b, unsigned& c,
                                       unsigned& d) noexcept {
  __cpuid_count(leaf, 0, a, b, c, d);
}

// CPUID 0x80000001, EDX bit 27.
inline bool has_rdtscp() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(0x80000001u, &a, &b, &c, &d) != 0 && (d & (1u << 27)) != 0;
}

inline bool ordering_available(counter_ordering o) noexcept {
  return o != counter_ordering::rdtscp || has_rdtscp();
}

// Not required: VMs often run on kvm-clock with a good invariant TSC, and
// the timekeeper's every-tick check catches a TSC that goes wrong (trust.h).
inline constexpr const char* counter_clocksource = "tsc";
inline constexpr bool trust_needs_kernel_clocksource = false;
inline bool running_under_emulation() noexcept { return false; }

// CPUID 0x80000007, EDX bit 8 (Advanced Power Management): invariant TSC.
inline bool counter_is_invariant() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  // The cast: GCC's cpuid.h returns unsigned, clang's int.
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) < 0x80000007u) return false;
  __cpuid(0x80000007u, a, b, c, d);
  return (d & (1u << 8)) != 0;
}

inline counter_identity read_counter_identity() noexcept {
  counter_identity id;
  unsigned a = 0, b = 0, c = 0, d = 0;
  // The cast: GCC's cpuid.h returns unsigned, clang's int.
  const auto max_leaf = static_cast<unsigned>(__get_cpuid_max(0, nullptr));
  if (max_leaf == 0) return id;
  __cpuid(0, a, b, c, d);
  std::memcpy(id.vendor + 0, &b, 4);  // "Genu" "ineI" "ntel": ebx, edx, ecx
  std::memcpy(id.vendor + 4, &d, 4);
  std::memcpy(id.vendor + 8, &c, 4);
  __cpuid(1, a, b, c, d);
  id.signature = a;
  // The TSC's nominal rate: CPUID 0x15 (crystal ratio, Intel), else the
  // hypervisor's timing leaf 0x40000010 (kHz; KVM, VMware).
  if (max_leaf >= 0x15) {
    __cpuid(0x15, a, b, c, d);
    if (a != 0 && b != 0 && c != 0) {
      id.nominal_hz = std::uint64_t{c} * b / a;
    }
  }
  if (id.nominal_hz == 0) {
    __cpuid(1, a, b, c, d);
    const bool hypervisor = (c & (1u << 31)) != 0;
    if (hypervisor) {
      __cpuid(0x40000000, a, b, c, d);
      if (a >= 0x40000010) {
        __cpuid(0x40000010, a, b, c, d);
        id.nominal_hz = std::uint64_t{a} * 1000;
      }
    }
  }
  return id;
}

// The fastest of 8 rounds of 32 reads each, bracketed by LFENCE;RDTSC.
template <counter_ordering O>
VCLOCK_RESOLVER_SAFE std::uint64_t cost_of_32_reads() noexcept {
  std::uint64_t best = ~std::uint64_t{0};
  for (int round = 0; round < 8; ++round) {
    const std::uint64_t start = read_counter<counter_ordering::lfence>().value;
    for (int i = 0; i < 32; ++i) {
      (void)read_counter<O>();
    }
    const std::uint64_t cost = read_counter<counter_ordering::lfence>().value - start;
    best = cost < best ? cost : best;
  }
  return best;
}

// LFENCE;RDTSC on Intel (LFENCE is documented to wait for earlier
// instructions) and on AMD where LFENCE is dispatch-serialising (CPUID
// 8000_0021h EAX bit 2, or family >= 10h where Linux sets DE_CFG bit 1 at
// boot); MFENCE;RDTSC on other AMD parts and unknown vendors. Where RDTSCP
// exists, it also waits for earlier instructions, and it is used instead if
// it measures clearly faster here: by more than a sixteenth. Back to back,
// the two can tie within a cycle, which made the choice a coin toss per
// process, while in the reader (a page load before the ordered read) RDTSCP
// was the slower one (docs/performance.md, the inline reader against the
// floor): a tie goes to the fence.
VCLOCK_RESOLVER_SAFE inline counter_ordering choose_ordering() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  cpuid(0, a, b, c, d);
  const bool intel = b == 0x756e6547u;  // "Genu"
  const bool amd = b == 0x68747541u;    // "Auth"
  cpuid(1, a, b, c, d);
  const unsigned family =
      ((a >> 8) & 0xfu) + (((a >> 8) & 0xfu) == 0xfu ? ((a >> 20) & 0xffu) : 0u);
  cpuid(0x80000000u, a, b, c, d);
  const unsigned max_ext = a;
  bool lfence_serialises = intel || (amd && family >= 0x10);
  if (amd && max_ext >= 0x80000021u) {
    cpuid(0x80000021u, a, b, c, d);
    lfence_serialises = lfence_serialises || (a & (1u << 2)) != 0;
  }
  if (!intel && !amd) {
    lfence_serialises = false;  // unknown vendor: the documented-everywhere MFENCE
  }
  bool rdtscp = false;
  if (max_ext >= 0x80000001u) {
    cpuid(0x80000001u, a, b, c, d);
    rdtscp = (d & (1u << 27)) != 0;
  }
  const counter_ordering fenced =
      lfence_serialises ? counter_ordering::lfence : counter_ordering::mfence;
  if (rdtscp) {
    const std::uint64_t fenced_cost = fenced == counter_ordering::lfence
                                          ? cost_of_32_reads<counter_ordering::lfence>()
                                          : cost_of_32_reads<counter_ordering::mfence>();
    const std::uint64_t rdtscp_cost = cost_of_32_reads<counter_ordering::rdtscp>();
    if (rdtscp_cost + rdtscp_cost / 16 < fenced_cost) {
      return counter_ordering::rdtscp;
    }
  }
  return fenced;
}

#elif defined(__aarch64__)

inline constexpr kernel_vdso_names kernel_vdso = {"__kernel_clock_gettime", "__kernel_gettimeofday",
                                                  "__kernel_clock_getres", "LINUX_2.6.39"};

// One ordered read (isb; mrs), no RDTSCP.
inline bool has_rdtscp() noexcept { return false; }
inline bool ordering_available(counter_ordering) noexcept { return true; }
VCLOCK_RESOLVER_SAFE inline counter_ordering choose_ordering() noexcept {
  return ordered_variants[0];
}

// The generic timer ticks at a constant rate by definition (the
// architecture requires it, through every power state).
inline bool counter_is_invariant() noexcept { return true; }

// The kernel's word is the only one vclock has on the counter: where it
// marks the counter unstable and moves to another clocksource, vclock
// follows. Counters with a known erratum (Freescale A-008585, Hisilicon
// 161010101, Arm 858921: reads that now and then return garbage) the
// kernel keeps but reads with a workaround, and keeps its own vDSO off;
// vclock cannot see that from user space, and then relies on the
// timekeeper's every-tick check (counter_jumped) alone. docs/build.md.
inline constexpr const char* counter_clocksource = "arch_sys_counter";
inline constexpr bool trust_needs_kernel_clocksource = true;

// qemu-user runs an arm64 program on another architecture's kernel, whose
// /proc it does not hide: the kernel says what it is in
// /proc/sys/kernel/arch. Absent (older kernels): not emulated, as far as
// anyone can tell.
inline bool running_under_emulation() noexcept {
  const int fd = ::open("/proc/sys/kernel/arch", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char arch[16] = {};
  const ssize_t n = ::read(fd, arch, sizeof arch - 1);
  ::close(fd);
  return n > 0 && std::strncmp(arch, "aarch64", 7) != 0 && std::strncmp(arch, "arm64", 5) != 0;
}

// The counter's identity: no vendor string at EL0 (MIDR_EL1 is the
// kernel's, emulated by trapping), the rate from CNTFRQ_EL0.
inline counter_identity read_counter_identity() noexcept {
  counter_identity id;
  std::memcpy(id.vendor, "arm64-cntvct", sizeof "arm64-cntvct");
  id.nominal_hz = counter_frequency();
  return id;
}

#else  // no CPU features known: the generic header's one ordered read

// The generic (asm-generic) names; an architecture that differs gets its own branch.
inline constexpr kernel_vdso_names kernel_vdso = {"__vdso_clock_gettime", "__vdso_gettimeofday",
                                                  "__vdso_clock_getres", "LINUX_2.6"};

inline bool has_rdtscp() noexcept { return false; }
inline bool ordering_available(counter_ordering) noexcept { return true; }
inline bool counter_is_invariant() noexcept { return false; }
inline counter_identity read_counter_identity() noexcept { return {}; }
VCLOCK_RESOLVER_SAFE inline counter_ordering choose_ordering() noexcept {
  return ordered_variants[0];
}
inline constexpr const char* counter_clocksource = "";
inline constexpr bool trust_needs_kernel_clocksource = false;
inline bool running_under_emulation() noexcept { return false; }

#endif

}  // namespace vclock::arch

#endif  // VCLOCK_DETAIL_ARCH_CPU_FEATURES_H_
