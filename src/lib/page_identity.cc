// Boot id and counter identity for the page header.
#include "lib/page_identity.h"

#include <unistd.h>

#include <cstring>

#include "lib/small_file.h"
#include "vclock/detail/arch/cpu_features.h"

namespace vclock {
namespace {

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
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
  const arch::counter_identity counter = arch::read_counter_identity();
  std::memcpy(id.counter_vendor, counter.vendor, sizeof(id.counter_vendor));
  id.counter_signature = counter.signature;
  id.counter_nominal_hz = counter.nominal_hz;
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

void write_untouched_page(page& p, const machine_identity& id) noexcept {
  std::memset(static_cast<void*>(&p), 0, sizeof(p));
  write_header(p.header, id, page_flag_shared);
  p.header.writer_pid = 0;
}

}  // namespace vclock
