// Namespace files: the parameters of a change, creating, changing, reading.
#include "timens/store.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

#include "lib/kernel_clock.h"
#include "lib/timens_join.h"
#include "vclock/detail/seqlock.h"

namespace vclock::timens {
namespace {

constexpr clockid_t family_clock[ns_family_count] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW,
                                                     CLOCK_BOOTTIME, CLOCK_REALTIME};
constexpr const char* family_name[ns_family_count] = {"MONOTONIC", "MONOTONIC_RAW", "BOOTTIME",
                                                      "REALTIME"};

std::string seconds_text(std::int64_t ns) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.9f s", static_cast<double>(ns) / 1e9);
  return text;
}

// The virtual time a change sets for family `f` at host time `h`, if an
// option sets it.
bool target_of(const time_options& o, ns_family f, std::int64_t h, bool& set, std::int64_t& target,
               std::string& error) {
  const std::optional<std::int64_t>* offset = nullptr;
  switch (f) {
    case ns_family::monotonic:
    case ns_family::raw:
      offset = &o.monotonic_offset_ns;
      break;
    case ns_family::boottime:
      offset = &o.boottime_offset_ns;
      break;
    case ns_family::realtime:
      if (o.realtime_at_ns) {
        set = true;
        target = *o.realtime_at_ns;
        return true;
      }
      offset = &o.realtime_offset_ns;
      break;
  }
  set = offset->has_value();
  if (set && __builtin_add_overflow(h, **offset, &target)) {
    error = std::string(family_name[static_cast<int>(f)]) + " + offset is out of int64 ns";
    return false;
  }
  return true;
}

void store_params(ns_params& dst, const ns_params& src) {
  using detail::store;
  store(dst.flags, src.flags);
  store(dst.generation, src.generation);
  store(dst.rate_before_q32, src.rate_before_q32);
  store(dst.rate_after_q32, src.rate_after_q32);
  store(dst.offset_monotonic_ns, src.offset_monotonic_ns);
  store(dst.offset_boottime_ns, src.offset_boottime_ns);
  store(dst.offset_realtime_ns, src.offset_realtime_ns);
  store(dst.rate_running_q32, src.rate_running_q32);
  for (int f = 0; f < ns_family_count; ++f) {
    store(dst.lines[f].before.host_ns, src.lines[f].before.host_ns);
    store(dst.lines[f].before.virtual_ns, src.lines[f].before.virtual_ns);
    store(dst.lines[f].after.host_ns, src.lines[f].after.host_ns);
    store(dst.lines[f].after.virtual_ns, src.lines[f].after.virtual_ns);
  }
}

ns_params load_params(const ns_params& src) {
  ns_params p{};
  std::memcpy(&p, &src, sizeof(p));  // the caller holds the writers' lock
  return p;
}

bool write_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool make_directories(const std::string& path, std::string& error) {
  for (std::size_t i = 1; i <= path.size(); ++i) {
    if (i < path.size() && path[i] != '/') continue;
    const std::string part = path.substr(0, i);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      error = "cannot create " + part + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

}  // namespace

std::int64_t virtual_time(const ns_params& p, ns_family family, std::int64_t host_ns) {
  return ns_map(p.lines[static_cast<int>(family)], p.rate_before_q32, p.rate_after_q32, host_ns);
}

bool next_params(const ns_params* old, const time_options& o, const host_times& at, ns_params& out,
                 std::string& error) {
  if (o.frozen && o.thaw) {
    error = "--frozen and --thaw contradict each other";
    return false;
  }
  if (o.realtime_offset_ns && o.realtime_at_ns) {
    error = "--realtime and --realtime-at both set REALTIME: give one";
    return false;
  }
  out = ns_params{};
  out.rate_running_q32 = old != nullptr ? old->rate_running_q32 : rate_one_q32;
  if (o.rate_q32) out.rate_running_q32 = *o.rate_q32;
  bool frozen = old != nullptr && (old->flags & ns_flag_frozen) != 0;
  if (o.frozen) frozen = true;
  if (o.thaw) frozen = false;
  out.flags = frozen ? ns_flag_frozen : 0u;
  out.rate_after_q32 = frozen ? 0 : out.rate_running_q32;
  // A new namespace is one line from the start: nobody read it before.
  out.rate_before_q32 = old != nullptr ? old->rate_after_q32 : out.rate_after_q32;
  out.generation = old != nullptr ? old->generation + 1 : 1;
  for (int i = 0; i < ns_family_count; ++i) {
    const auto f = static_cast<ns_family>(i);
    const std::int64_t h = at.ns[i];
    const std::int64_t current = old != nullptr ? virtual_time(*old, f, h) : h;
    bool set = false;
    std::int64_t target = current;
    if (!target_of(o, f, h, set, target, error)) return false;
    if (!set) target = current;
    const bool monotonic = f != ns_family::realtime;
    if (monotonic && target < 0) {
      error =
          std::string(family_name[i]) + " would start before boot (" + seconds_text(target) + ")";
      return false;
    }
    if (monotonic && old != nullptr && target < current && !o.allow_backward) {
      error = std::string(family_name[i]) + " would step back by " +
              seconds_text(current - target) + " (--allow-backward allows it)";
      return false;
    }
    ns_line& l = out.lines[i];
    l.after = {h, target};
    l.before = old != nullptr ? old->lines[i].after : l.after;
  }
  out.offset_monotonic_ns = out.lines[0].after.virtual_ns - at.ns[0];
  out.offset_boottime_ns = out.lines[2].after.virtual_ns - at.ns[2];
  out.offset_realtime_ns = out.lines[3].after.virtual_ns - at.ns[3];
  return true;
}

host_times kernel_host_times() {
  host_times t{};
  for (int i = 0; i < ns_family_count; ++i) t.ns[i] = kernel::now_ns(family_clock[i]);
  return t;
}

std::string system_timens_directory() {
  char directory[512];
  return vclock::system_timens_directory(directory, sizeof(directory)) ? directory : "";
}

namespace {

// This user's directory (lib's rule); "" when there is none.
std::string user_timens_directory() {
  char directory[512];
  return vclock::user_timens_directory(directory, sizeof(directory)) ? directory : "";
}

}  // namespace

std::string timens_file_of(const std::string& spec) {
  char path[1024];
  const std::string user = user_timens_directory();
  const std::string system = system_timens_directory();
  if (system.empty() || !timens_path_of(spec.c_str(), user.empty() ? nullptr : user.c_str(),
                                        system.c_str(), path, sizeof(path))) {
    return "";
  }
  return path;
}

std::string own_timens_directory(std::string& error) {
  std::string dir = geteuid() == 0 ? system_timens_directory() : user_timens_directory();
  if (dir.empty()) {
    error = geteuid() == 0 ? "VCLOCK_PAGE is too long"
                           : "XDG_RUNTIME_DIR is not set: nowhere to keep this user's namespaces";
  }
  return dir;
}

std::vector<std::string> timens_directories() {
  std::vector<std::string> dirs;
  std::string user = user_timens_directory();
  if (!user.empty() && geteuid() != 0) dirs.push_back(std::move(user));
  std::string system = system_timens_directory();
  if (!system.empty()) dirs.push_back(std::move(system));
  return dirs;
}

bool create_timens_file(const std::string& path, const std::string& name,
                        const time_options& options, std::string& error, const host_times& frame) {
  const std::size_t slash = path.rfind('/');
  const std::string dir = path.substr(0, slash);
  if (!make_directories(dir, error)) return false;
  ns_page page{};
  write_timens_header(page.header, name.c_str());
  host_times now = kernel_host_times();
  for (int i = 0; i < ns_family_count; ++i) now.ns[i] += frame.ns[i];
  if (!next_params(nullptr, options, now, page.copies[0], error)) return false;
  std::string temporary = dir + "/.new.XXXXXX";
  const int fd = mkstemp(temporary.data());
  if (fd < 0) {
    error = "cannot create a file in " + dir + ": " + std::strerror(errno);
    return false;
  }
  const bool written = fchmod(fd, 0644) == 0 && write_all(fd, &page, sizeof(page));
  const int write_error = errno;
  close(fd);
  if (!written) {
    unlink(temporary.c_str());
    error = "cannot write " + temporary + ": " + std::strerror(write_error);
    return false;
  }
  const int linked = link(temporary.c_str(), path.c_str());
  const int link_error = errno;
  unlink(temporary.c_str());
  if (linked != 0) {
    error = link_error == EEXIST ? "namespace " + path + " exists"
                                 : "cannot create " + path + ": " + std::strerror(link_error);
    return false;
  }
  return true;
}

bool change_timens_file(const std::string& path, const time_options& options, std::int64_t& late_ns,
                        std::string& error) {
  late_ns = 0;
  const int fd = open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": " + (errno == ENOENT ? "no such namespace" : std::strerror(errno));
    return false;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size != static_cast<off_t>(ns_page_bytes)) {
    close(fd);
    error = path + ": not a namespace file";
    return false;
  }
  flock(fd, LOCK_EX);  // one writer at a time; released by close
  void* mapped = mmap(nullptr, ns_page_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapped == MAP_FAILED) {
    error = path + ": " + std::strerror(errno);
    close(fd);
    return false;
  }
  auto* page = static_cast<ns_page*>(mapped);
  bool ok = check_timens_header(page, sizeof(ns_header)) == timens_refusal::none;
  if (!ok) error = path + ": not a namespace file";
  if (ok) {
    const std::uint32_t current = detail::load(page->header.current);
    const ns_params old = load_params(page->copies[current & 1u]);
    // The previous change's switch point must be behind us: its line is
    // the `before` of this one.
    host_times at = kernel_host_times();
    for (int i = 0; i < ns_family_count; ++i) {
      while (old.lines[i].after.host_ns >= kernel::now_ns(family_clock[i])) {
        const timespec ms{0, 1'000'000};
        nanosleep(&ms, nullptr);
      }
    }
    at = kernel_host_times();
    for (std::int64_t& h : at.ns) h += switch_margin_ns;
    ns_params next{};
    ok = next_params(&old, options, at, next, error);
    if (ok) {
      const std::uint32_t spare = (current + 1u) & 1u;
      ns_params& dst = page->copies[spare];
      const std::uint32_t seq = detail::write_begin(dst.seq);
      store_params(dst, next);
      detail::write_end(dst.seq, seq);
      detail::store(page->header.current, current + 1u);
      // Sleepers in virtual time wait on this word (shim): re-compute.
      syscall(SYS_futex, &page->header.current, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
      // In force once the host clocks pass the switch point: wait for it,
      // or say how late the publish came (a preempted writer).
      std::int64_t ahead = switch_margin_ns;
      for (int i = 0; i < ns_family_count; ++i) {
        ahead = std::min(ahead, at.ns[i] - kernel::now_ns(family_clock[i]));
      }
      if (ahead < 0) {
        late_ns = -ahead;
      } else {
        const timespec t{0, static_cast<long>(ahead + 1'000'000)};
        nanosleep(&t, nullptr);
      }
    }
  }
  munmap(mapped, ns_page_bytes);
  close(fd);
  return ok;
}

bool read_timens_file(const std::string& path, ns_header& header, ns_params& params,
                      std::string& error) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": " + (errno == ENOENT ? "no such namespace" : std::strerror(errno));
    return false;
  }
  ns_page page{};
  flock(fd, LOCK_SH);  // no change while the page is read
  const ssize_t n = pread(fd, &page, sizeof(page), 0);
  close(fd);
  if (n != static_cast<ssize_t>(sizeof(page)) ||
      check_timens_header(&page, sizeof(ns_header)) != timens_refusal::none) {
    error = path + ": not a namespace file";
    return false;
  }
  header = page.header;
  params = page.copies[page.header.current & 1u];
  return true;
}

}  // namespace vclock::timens
