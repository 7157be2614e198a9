// vclockd --bound-source fake:PATH (API.md, "Error-bounded time"): a JSON
// file, read at every update, for tests and for sources vclock does not
// speak to yet:
//   {"status": "synced|free_running|unsynced", "error_ns": E, "drift_ppb": D}
// "The kernel's REALTIME is within E ns of the true time now, and that error
// grows by at most D ns per second until the file changes." `now` is when
// vclockd first reads that version of the file (its inode, size and mtime):
// E then grows at D from that moment, also when the writer is gone.
// A missing, empty, malformed or absurd file (a negative E or D, E over a
// day, D over 10 %), or one that changes while it is read: status unknown,
// and one line in the daemon's log for each new reason.
#ifndef VCLOCK_SRC_DAEMON_FAKE_BOUND_H_
#define VCLOCK_SRC_DAEMON_FAKE_BOUND_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/time_sources.h"

namespace vclock::daemon {

// The file's text as a bound (pure): `error` says why when the status is
// unknown.
bound_sample parse_fake_bound(std::string_view text, std::string& error);

class fake_bound_source {
 public:
  explicit fake_bound_source(std::string path) : path_(std::move(path)) {}

  // Reads the file; `mono_now_ns` is the kernel's MONOTONIC now. Calls
  // `log` with a line when the reason it is unusable changes.
  bound_sample read(std::int64_t mono_now_ns, void (*log)(const char* line));

 private:
  std::string path_;
  std::string last_problem_;
  // The version of the file being extrapolated, and since when.
  std::uint64_t inode_ = 0;
  std::int64_t size_ = -1;
  std::int64_t mtime_ns_ = 0;
  std::int64_t first_seen_mono_ns_ = 0;
};

}  // namespace vclock::daemon

#endif  // VCLOCK_SRC_DAEMON_FAKE_BOUND_H_
