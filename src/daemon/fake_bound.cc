// The fake bound source: a small JSON object, parsed by hand (three keys).
#include "daemon/fake_bound.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "vclock/detail/reader.h"

namespace vclock::daemon {
namespace {

constexpr std::int64_t max_error_ns = 86'400'000'000'000;  // a day
constexpr std::int64_t max_drift_ppb = 100'000'000;        // 10 %
// How long a reading may be extrapolated (API: then UNKNOWN): a day.
constexpr std::int64_t fake_valid_ns = 86'400'000'000'000;

void skip_space(std::string_view& s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
}

bool take(std::string_view& s, char c) {
  skip_space(s);
  if (s.empty() || s.front() != c) return false;
  s.remove_prefix(1);
  return true;
}

bool take_string(std::string_view& s, std::string_view& out) {
  if (!take(s, '"')) return false;
  const std::size_t end = s.find('"');
  if (end == std::string_view::npos || s.substr(0, end).find('\\') != std::string_view::npos) {
    return false;
  }
  out = s.substr(0, end);
  s.remove_prefix(end + 1);
  return true;
}

bool take_integer(std::string_view& s, std::int64_t& out) {
  skip_space(s);
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || ptr == s.data()) return false;
  s.remove_prefix(static_cast<std::size_t>(ptr - s.data()));
  // A fraction or an exponent is not an integer of ns.
  return s.empty() || (s.front() != '.' && s.front() != 'e' && s.front() != 'E');
}

}  // namespace

bound_sample parse_fake_bound(std::string_view text, std::string& error) {
  bound_sample b;
  b.source = bound_source_kind::fake;
  std::string_view s = text;
  bool have_status = false, have_error = false, have_drift = false;
  sync_status status = sync_status::unknown;
  std::int64_t error_ns = 0, drift_ppb = 0;
  if (!take(s, '{')) {
    error = "not a JSON object";
    return b;
  }
  for (bool first = true;; first = false) {
    if (take(s, '}')) break;
    if (!first && !take(s, ',')) {
      error = "expected ',' or '}'";
      return b;
    }
    std::string_view key;
    if (!take_string(s, key) || !take(s, ':')) {
      error = "expected \"key\":";
      return b;
    }
    if (key == "status") {
      std::string_view v;
      if (!take_string(s, v)) {
        error = "status: expected a string";
        return b;
      }
      if (v == "synced") {
        status = sync_status::synced;
      } else if (v == "free_running") {
        status = sync_status::free_running;
      } else if (v == "unsynced") {
        status = sync_status::unsynced;
      } else {
        error = "status: '" + std::string(v) + "' is not synced, free_running or unsynced";
        return b;
      }
      have_status = true;
    } else if (key == "error_ns" || key == "drift_ppb") {
      std::int64_t v = 0;
      if (!take_integer(s, v)) {
        error = std::string(key) + ": expected an integer";
        return b;
      }
      (key == "error_ns" ? error_ns : drift_ppb) = v;
      (key == "error_ns" ? have_error : have_drift) = true;
    } else {
      error = "unknown key '" + std::string(key) + "'";
      return b;
    }
  }
  skip_space(s);
  if (!s.empty()) {
    error = "text after the object";
    return b;
  }
  if (!have_status || !have_error || !have_drift) {
    error = "needs status, error_ns and drift_ppb";
    return b;
  }
  if (error_ns < 0 || error_ns > max_error_ns) {
    error = "error_ns out of range (0 to a day)";
    return b;
  }
  if (drift_ppb < 0 || drift_ppb > max_drift_ppb) {
    error = "drift_ppb out of range (0 to 10 %)";
    return b;
  }
  b.status = status;
  b.error_ns = error_ns;
  b.drift_ppb = drift_ppb;
  b.valid_ns = fake_valid_ns;
  return b;
}

bound_sample fake_bound_source::read(std::int64_t mono_now_ns, void (*log)(const char* line)) {
  std::string problem;
  bound_sample b;
  b.source = bound_source_kind::fake;
  const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat before {};
  struct stat after {};
  char text[4096];
  ssize_t n = -1;
  if (fd < 0) {
    problem = std::string("cannot open: ") + std::strerror(errno);
  } else {
    if (fstat(fd, &before) != 0 || !S_ISREG(before.st_mode)) {
      problem = "not a regular file";
    } else {
      n = pread(fd, text, sizeof(text), 0);
      if (n < 0) problem = std::string("cannot read: ") + std::strerror(errno);
      if (n == static_cast<ssize_t>(sizeof(text))) problem = "larger than 4 KiB";
      if (problem.empty() && fstat(fd, &after) == 0 &&
          (after.st_size != before.st_size || after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
           after.st_mtim.tv_nsec != before.st_mtim.tv_nsec)) {
        problem = "changed while being read";
      }
    }
    close(fd);
  }
  if (problem.empty()) {
    if (n == 0) {
      problem = "empty";
    } else {
      b = parse_fake_bound(std::string_view(text, static_cast<std::size_t>(n)), problem);
    }
  }
  if (problem != last_problem_) {
    last_problem_ = problem;
    const std::string line = problem.empty()
                                 ? "bound source " + path_ + ": readable again"
                                 : "bound source " + path_ + ": " + problem + " (status unknown)";
    log(line.c_str());
  }
  if (!problem.empty()) return bound_sample{.source = bound_source_kind::fake};
  // E counts from when this version of the file was first read.
  const std::int64_t mtime_ns =
      static_cast<std::int64_t>(before.st_mtim.tv_sec) * detail::ns_per_s + before.st_mtim.tv_nsec;
  if (before.st_ino != inode_ || before.st_size != size_ || mtime_ns != mtime_ns_) {
    inode_ = before.st_ino;
    size_ = before.st_size;
    mtime_ns_ = mtime_ns;
    first_seen_mono_ns_ = mono_now_ns;
  }
  const std::int64_t age = mono_now_ns - first_seen_mono_ns_;
  __extension__ typedef __int128 i128;
  b.error_ns += static_cast<std::int64_t>(static_cast<i128>(age) * b.drift_ppb / 1'000'000'000);
  b.valid_ns -= age;
  if (b.valid_ns <= 0) b.status = sync_status::unknown;
  return b;
}

}  // namespace vclock::daemon
