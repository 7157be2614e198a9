// Finding a process's kernel time namespace offsets (kernel_frame.h).
#include "lib/kernel_frame.h"

#include <unistd.h>

#include <cstring>

#include "lib/small_file.h"
#include "lib/timens_join.h"

namespace vclock::detail {
namespace {

// The namespace a /proc/self/ns link names, NUL-terminated; "" if the
// kernel has none (no CONFIG_TIME_NS, or an old kernel).
void read_link(const char* path, char* out, std::size_t size) noexcept {
  const ssize_t n = readlink(path, out, size - 1);
  out[n > 0 ? n : 0] = '\0';
}

}  // namespace

kernel_frame read_kernel_frame() noexcept {
  kernel_frame f;
  read_link("/proc/self/ns/time", f.link, sizeof(f.link));
  char children[sizeof(f.link)];
  read_link("/proc/self/ns/time_for_children", children, sizeof(children));
  f.readable = std::strcmp(f.link, children) == 0;
  if (f.readable && f.link[0] != '\0') {
    char text[256];
    const std::size_t n = read_small_file("/proc/self/timens_offsets", text, sizeof(text));
    f.offsets = parse_time_namespace_offsets(text, n);
  }
  return f;
}

bool in_time_namespace(const char* link) noexcept {
  char now[64];
  read_link("/proc/self/ns/time", now, sizeof(now));
  return std::strcmp(now, link) == 0;
}

void write_identity_namespace(ns_page& p) noexcept {
  p = ns_page{};
  write_timens_header(p.header, "");
  ns_params& c = p.copies[0];
  c.generation = 1;
  c.rate_before_q32 = rate_one_q32;
  c.rate_after_q32 = rate_one_q32;
  c.rate_running_q32 = rate_one_q32;
  // Every line: v = 0 + (h - 0), on both sides of a switch point at 0.
}

}  // namespace vclock::detail
