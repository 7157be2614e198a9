// vclockd --bound-source chrony[:PORT]: chronyd's own error, asked over its
// command port (UDP, 127.0.0.1, default 323) with the monitoring request
// `tracking` (chronyc tracking), which needs no privilege.
//
// The bound is ClockBound's: |system clock offset| + root delay / 2 + root
// dispersion at the reply, growing at skew + |residual frequency| + 1 ppm
// (chronyd's default maxclockerror) per second. Leap status "not
// synchronised": UNSYNCED. Asked once a second, never waited for: a reply
// is picked up at the next update. No reply for 2.5 s: FREE_RUNNING, the
// last bound growing at its drift; 64 s: void (UNKNOWN). A malformed or
// foreign reply is ignored, and the daemon's log says so once.
#ifndef VCLOCK_SRC_DAEMON_CHRONY_BOUND_H_
#define VCLOCK_SRC_DAEMON_CHRONY_BOUND_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "lib/time_sources.h"

namespace vclock::daemon {

struct chrony_tracking {
  std::uint16_t stratum = 0;
  std::uint16_t leap_status = 0;  // 3: not synchronised
  double current_correction_s = 0;
  double root_delay_s = 0;
  double root_dispersion_s = 0;
  double skew_ppm = 0;
  double resid_freq_ppm = 0;
};

// The request for `sequence` (pure): its bytes into `out` (at least
// chrony_request_bytes), returns the length.
inline constexpr std::size_t chrony_request_bytes = 128;
std::size_t make_chrony_tracking_request(std::uint32_t sequence, unsigned char* out);

// A reply (pure): false, with `error`, unless it is the tracking reply to
// `sequence` with a success status; false with an empty `error` for a
// reply to another sequence number (a late answer).
bool parse_chrony_tracking_reply(const unsigned char* data, std::size_t size,
                                 std::uint32_t sequence, chrony_tracking& out, std::string& error);

// chronyd's 32-bit float (7-bit exponent, 25-bit coefficient), host order.
double chrony_float(std::uint32_t x);

// The bound of a reply (pure).
bound_sample chrony_bound_of(const chrony_tracking& t);

class chrony_bound_source {
 public:
  explicit chrony_bound_source(std::uint16_t port) : port_(port) {}
  ~chrony_bound_source();
  chrony_bound_source(const chrony_bound_source&) = delete;
  chrony_bound_source& operator=(const chrony_bound_source&) = delete;

  bound_sample read(std::int64_t mono_now_ns, void (*log)(const char* line));

 private:
  void note(const std::string& problem, void (*log)(const char* line));

  std::uint16_t port_;
  int fd_ = -1;
  std::uint32_t sequence_ = 0;
  std::int64_t last_request_ns_ = 0;
  bool requested_ = false;
  bool have_reply_ = false;
  std::int64_t reply_ns_ = 0;
  bound_sample last_{};
  std::string last_problem_;
};

}  // namespace vclock::daemon

#endif  // VCLOCK_SRC_DAEMON_CHRONY_BOUND_H_
