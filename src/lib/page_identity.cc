// Boot id and counter identity for the page header.
#include "lib/page_identity.h"

#include <unistd.h>

#include <cstring>

#include "lib/small_file.h"

#if defined(__x86_64__)
#  include <cpuid.h>
#endif

namespace vclock {
namespace {

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void read_counter_identity(machine_identity& id) noexcept {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  // The cast: GCC's cpuid.h returns unsigned, clang's int.
  const auto max_leaf = static_cast<unsigned>(__get_cpuid_max(0, nullptr));
  if (max_leaf == 0) return;
  __cpuid(0, a, b, c, d);
  std::memcpy(id.counter_vendor + 0, &b, 4);  // "Genu" "ineI" "ntel": ebx, edx, ecx
  std::memcpy(id.counter_vendor + 4, &d, 4);
  std::memcpy(id.counter_vendor + 8, &c, 4);
  __cpuid(1, a, b, c, d);
  id.counter_signature = a;
  // The TSC's nominal rate: CPUID 0x15 (crystal ratio, Intel), else the
  // hypervisor's timing leaf 0x40000010 (kHz; KVM, VMware). Information
  // only: the rate in use is always measured.
  if (max_leaf >= 0x15) {
    __cpuid(0x15, a, b, c, d);
    if (a != 0 && b != 0 && c != 0) {
      id.counter_nominal_hz = std::uint64_t{c} * b / a;
    }
  }
  if (id.counter_nominal_hz == 0) {
    __cpuid(1, a, b, c, d);
    const bool hypervisor = (c & (1u << 31)) != 0;
    if (hypervisor) {
      __cpuid(0x40000000, a, b, c, d);
      if (a >= 0x40000010) {
        __cpuid(0x40000010, a, b, c, d);
        id.counter_nominal_hz = std::uint64_t{a} * 1000;
      }
    }
  }
#else
  (void)id;
#endif
}

}  // namespace

bool parse_boot_id(const char* text, std::uint32_t length, std::uint8_t out[16]) noexcept {
  if (length == 37 && text[36] == '\n') length = 36;
  if (length != 36) return false;
  int byte = 0;
  for (std::uint32_t i = 0; i < 36;) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (text[i] != '-') return false;
      ++i;
      continue;
    }
    const int hi = hex_digit(text[i]);
    const int lo = hex_digit(text[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[byte++] = static_cast<std::uint8_t>(hi * 16 + lo);
    i += 2;
  }
  return byte == 16;
}

machine_identity read_machine_identity() noexcept {
  machine_identity id;
  char text[64];
  const std::size_t n = read_small_file("/proc/sys/kernel/random/boot_id", text, sizeof(text));
  id.have_boot_id = parse_boot_id(text, static_cast<std::uint32_t>(n), id.boot_id);
  read_counter_identity(id);
  return id;
}

void write_header(page_header& h, const machine_identity& id, std::uint32_t flags) noexcept {
  h = page_header{};
  h.magic = page_magic;
  h.abi_major = page_abi_major;
  h.abi_minor = page_abi_minor;
  h.header_size = sizeof(page_header);
  h.page_size = page_bytes;
  h.creator_uid = geteuid();
  h.writer_pid = getpid();
  h.flags = flags;
  std::memcpy(h.boot_id, id.boot_id, sizeof(h.boot_id));
  std::memcpy(h.counter_vendor, id.counter_vendor, sizeof(h.counter_vendor));
  h.counter_signature = id.counter_signature;
  h.counter_nominal_hz = id.counter_nominal_hz;
}

}  // namespace vclock
