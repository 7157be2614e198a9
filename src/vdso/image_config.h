// The contract between the vclock vDSO image (src/vdso/, a freestanding ELF
// shared object a program finds through AT_SYSINFO_EHDR, as it finds the
// kernel's) and whoever installs it into a process (`vclock run`'s
// handover, src/cli/run/). Plain data only: both sides include it, the image
// without a libc.
//
// Layout in the target process, like the kernel's vvar page before its vDSO:
//
//   [ config page: image_config, then image_stats ]  read-write, 1 page
//   [ the image's single PT_LOAD, read + execute  ]  AT_SYSINFO_EHDR
//
// The image finds its config at (its ELF header) - config_page_size, so it
// needs no relocation and no symbol of its own. Until `magic` holds
// config_magic (written last), every call goes to the system call.
#ifndef VCLOCK_SRC_VDSO_IMAGE_CONFIG_H_
#define VCLOCK_SRC_VDSO_IMAGE_CONFIG_H_

#include <cstdint>

namespace vclock::vdso {

inline constexpr std::uint64_t config_magic = 0x31'4f'53'44'56'4b'4c'43;  // "CLKVDSO1"
inline constexpr std::uint32_t config_version = 1;
inline constexpr std::uint64_t config_page_size = 4096;

struct image_config {
  std::uint64_t magic;     // config_magic once the installer has filled the rest
  std::uint32_t version;   // config_version
  std::uint32_t ordering;  // vclock::arch::counter_ordering the installer chose for this CPU
  // Where the installer mapped, read-only and shared, the page files the shim
  // would have attached: the host page (VCLOCK_PAGE or vclockd's) and the
  // virtual-time namespace page (VCLOCK_NS); 0 when there is none.
  std::uint64_t host_page;
  std::uint64_t ns_page;
  // The kernel's own vDSO functions in this process (its original
  // AT_SYSINFO_EHDR, resolved by the installer), for what vclock does not
  // serve; 0 where the kernel has none: the image makes the system call.
  std::uint64_t kernel_clock_gettime;
  std::uint64_t kernel_gettimeofday;
  std::uint64_t kernel_time;
  std::uint64_t kernel_clock_getres;
  std::uint64_t kernel_vdso_base;  // the original AT_SYSINFO_EHDR (0: none)
};

// Counted by the image with relaxed atomic adds, read by `vclock status --pid`
// through /proc/PID/mem (like the shim's stats).
struct image_stats {
  std::uint64_t served;    // answered from a page
  std::uint64_t fallback;  // answered by the kernel (vDSO or system call)
};

struct config_page {
  image_config config;
  image_stats stats;
};
// The second half of the page belongs to the image: its linker script puts
// the one variable it writes (reader.h's stuck_writer_seq) at
// config_page_size - image_rw_offset before its ELF header. The installer
// leaves it zero.
inline constexpr std::uint64_t image_rw_offset = 2048;
static_assert(sizeof(config_page) <= image_rw_offset);

}  // namespace vclock::vdso

#endif  // VCLOCK_SRC_VDSO_IMAGE_CONFIG_H_
