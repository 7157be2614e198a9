// Reading another process's vclock state from /proc/P/maps.
//
// A page mapping is recognised by its content where the file can still be
// opened (the page's magic), else by its size and name: a daemon's page is
// one 4 KiB mapping of a file named "page" (a private daemon's is deleted
// when its command exits, while children may still map it).
#include "cli/status/process_status.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tool/args.h"
#include "tool/json.h"
#include "vclock/page.h"
#include "vdso/image_config.h"

namespace vclock::cli {
namespace {

constexpr std::string_view deleted_suffix = " (deleted)";

bool has_page_magic(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  std::uint64_t magic = 0;
  const bool ok = pread(fd, &magic, sizeof(magic), 0) == sizeof(magic) && magic == page_magic;
  close(fd);
  return ok;
}

bool looks_like_page(unsigned long begin, unsigned long end, const std::string& path) {
  if (end - begin != page_bytes || path.empty() || path[0] != '/') return false;
  if (path.ends_with(deleted_suffix)) {
    const std::string name = path.substr(0, path.size() - deleted_suffix.size());
    return name.ends_with("/page");
  }
  return has_page_magic(path);
}

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// The image's config page lies right before its mapping (src/vdso/image_config.h).
void read_image_config(const std::string& proc, unsigned long image_at, process_clock_status& s) {
  const int fd = open((proc + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  vdso::config_page config{};
  const auto at = static_cast<off_t>(image_at - vdso::config_page_size);
  if (pread(fd, &config, sizeof(config), at) == static_cast<ssize_t>(sizeof(config)) &&
      config.config.magic == vdso::config_magic) {
    s.vdso_configured = true;
    s.vdso_served = config.stats.served;
    s.vdso_fallback = config.stats.fallback;
  }
  close(fd);
}

}  // namespace

process_clock_status inspect_process(pid_t pid) {
  process_clock_status s;
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream maps(proc + "/maps");
  if (!maps) {
    s.error = access(proc.c_str(), F_OK) == 0 ? "cannot read " + proc + "/maps (permission)"
                                              : "no process " + std::to_string(pid);
    return s;
  }
  char exe[4096];
  const ssize_t n = readlink((proc + "/exe").c_str(), exe, sizeof(exe) - 1);
  if (n > 0) s.exe.assign(exe, static_cast<std::size_t>(n));
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &begin, &end) != 2) continue;
    // The path is the sixth field and runs to the end of the line.
    std::istringstream fields(line);
    std::string range, perms, offset, device, inode;
    fields >> range >> perms >> offset >> device >> inode;
    std::string path;
    std::getline(fields >> std::ws, path);
    const std::string base = base_name(path);
    if (base.starts_with("libvclock_preload.so")) {
      s.shim = path;
    } else if (base.starts_with("libvclock.so")) {
      s.library = path;
    } else if (base == "vclock-vdso.so" && perms.find('x') != std::string::npos) {
      s.vdso_image = path;
      read_image_config(proc, begin, s);
    } else if (looks_like_page(begin, end, path)) {
      s.pages.push_back(path);
    }
  }
  return s;
}

void print_process_status(pid_t pid, const process_clock_status& s, bool json) {
  if (json) {
    tool::json_writer j;
    j.begin_object()
        .field("command", "status")
        .field("pid", static_cast<std::int64_t>(pid))
        .field("exe", s.exe)
        .field("shim", s.shim)
        .field("library", s.library)
        .field("vdso_image", s.vdso_image)
        .field("page", s.pages.empty() ? std::string() : s.pages.front())
        .end_object();
    std::fputs(j.str().c_str(), stdout);
    return;
  }
  tool::text_table t({"field", "value"});
  t.row().left("pid").left(std::to_string(pid));
  t.row().left("exe").left(s.exe);
  t.row().left("shim").left(s.shim.empty() ? "not loaded" : s.shim);
  t.row().left("library").left(s.library.empty() ? "not loaded" : s.library);
  std::string image = "not mapped (the kernel's vDSO)";
  if (!s.vdso_image.empty()) {
    image = s.vdso_image + (s.vdso_configured
                                ? " (served " + std::to_string(s.vdso_served) + ", fallback " +
                                      std::to_string(s.vdso_fallback) + ")"
                                : "");
  }
  t.row().left("vdso image").left(image);
  // Without a daemon's page the shim passes every call to the kernel; the
  // library has a timekeeper of its own (or the kernel).
  std::string page = "none mapped";
  if (!s.pages.empty()) {
    page = s.pages.front();
  } else if (!s.library.empty()) {
    page = "none mapped: the library's own page, or the kernel";
  } else if (!s.shim.empty()) {
    page = "none mapped: the shim passes every call to the kernel";
  }
  t.row().left("page").left(page);
  std::fputs(t.str().c_str(), stdout);
}

}  // namespace vclock::cli
