// Who wrote a page and for which machine: the header fields that tie a
// shared page to this boot and this counter (include/vclock/page.h,
// page_header). Everything here reads /proc and CPUID with plain system
// calls into fixed buffers: safe in the library's constructor and in the
// daemon alike.
#ifndef VCLOCK_SRC_LIB_PAGE_IDENTITY_H_
#define VCLOCK_SRC_LIB_PAGE_IDENTITY_H_

#include <cstdint>

#include "vclock/page.h"

namespace vclock {

// What a page must match to be used on this machine, now.
struct machine_identity {
  bool have_boot_id = false;
  std::uint8_t boot_id[16] = {};
  char counter_vendor[16] = {};
  std::uint32_t counter_signature = 0;
  std::uint64_t counter_nominal_hz = 0;
};

// Parses the 36-character UUID text of /proc/sys/kernel/random/boot_id
// ("xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", a newline optional) into 16
// bytes. False on anything else.
bool parse_boot_id(const char* text, std::uint32_t length, std::uint8_t out[16]) noexcept;

// Reads this boot's id, the CPU's vendor and signature, and the counter's
// nominal frequency where CPUID gives it.
machine_identity read_machine_identity() noexcept;

// A fresh header for a page written by this process (uid, pid) on this
// machine.
void write_header(page_header& h, const machine_identity& id, std::uint32_t flags) noexcept;

// A shared page as no writer has published on it yet: all zero (every line
// sends its readers to the kernel), a header for this machine, no writer's
// pid. What vclockd and `vclock run` write to a new page file.
void write_untouched_page(page& p, const machine_identity& id) noexcept;

}  // namespace vclock

#endif  // VCLOCK_SRC_LIB_PAGE_IDENTITY_H_
