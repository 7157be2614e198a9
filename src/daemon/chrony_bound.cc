// chronyd's tracking report over its command port, as a bound_sample. The
// packet layout is chronyd's command protocol, version 6 (candm.h): a
// 20-byte request header padded to the length of the reply (chronyd
// refuses shorter requests, against traffic amplification), a 28-byte reply
// header, then the tracking report, all in network byte order.
#include "daemon/chrony_bound.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace vclock::daemon {
namespace {

constexpr std::uint8_t protocol_version = 6;
constexpr std::uint8_t packet_request = 1;
constexpr std::uint8_t packet_reply = 2;
constexpr std::uint16_t request_tracking = 33;
constexpr std::uint16_t reply_tracking = 5;
constexpr std::uint16_t status_success = 0;
constexpr std::size_t reply_header_bytes = 28;
// ref_id 4, ip_addr 20, stratum 2, leap_status 2, ref_time 12, nine floats.
constexpr std::size_t tracking_bytes = 4 + 20 + 2 + 2 + 12 + 9 * 4;

constexpr std::int64_t ask_every_ns = 1'000'000'000;
constexpr std::int64_t free_running_after_ns = 2'500'000'000;
constexpr std::int64_t void_after_ns = 64'000'000'000;
constexpr double max_clock_error_ppm = 1.0;  // chronyd's maxclockerror default

std::uint16_t get16(const unsigned char* p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }
std::uint32_t get32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) << 24 | static_cast<std::uint32_t>(p[1]) << 16 |
         static_cast<std::uint32_t>(p[2]) << 8 | p[3];
}
void put16(unsigned char* p, std::uint16_t v) {
  p[0] = static_cast<unsigned char>(v >> 8);
  p[1] = static_cast<unsigned char>(v);
}
void put32(unsigned char* p, std::uint32_t v) {
  p[0] = static_cast<unsigned char>(v >> 24);
  p[1] = static_cast<unsigned char>(v >> 16);
  p[2] = static_cast<unsigned char>(v >> 8);
  p[3] = static_cast<unsigned char>(v);
}

}  // namespace

std::size_t make_chrony_tracking_request(std::uint32_t sequence, unsigned char* out) {
  std::memset(out, 0, chrony_request_bytes);
  out[0] = protocol_version;
  out[1] = packet_request;
  put16(out + 4, request_tracking);
  put32(out + 8, sequence);
  return chrony_request_bytes;  // >= the reply's 104 bytes
}

double chrony_float(std::uint32_t x) {
  constexpr int coef_bits = 25;
  int exponent = static_cast<int>(x >> coef_bits);
  if (exponent >= 64) exponent -= 128;
  exponent -= coef_bits;
  std::int32_t coef = static_cast<std::int32_t>(x % (1u << coef_bits));
  if (coef >= (1 << (coef_bits - 1))) coef -= 1 << coef_bits;
  return std::ldexp(static_cast<double>(coef), exponent);
}

bool parse_chrony_tracking_reply(const unsigned char* data, std::size_t size,
                                 std::uint32_t sequence, chrony_tracking& out, std::string& error) {
  if (size < reply_header_bytes + tracking_bytes) {
    error = "short reply (" + std::to_string(size) + " bytes)";
    return false;
  }
  if (data[0] != protocol_version || data[1] != packet_reply) {
    error = "not a version-6 command reply";
    return false;
  }
  if (get16(data + 4) != request_tracking || get16(data + 6) != reply_tracking) {
    error = "not a tracking reply";
    return false;
  }
  if (get16(data + 8) != status_success) {
    error = "chronyd refused the request (status " + std::to_string(get16(data + 8)) + ")";
    return false;
  }
  if (get32(data + 16) != sequence) {
    error.clear();  // a late answer to an earlier request: not a problem
    return false;
  }
  const unsigned char* t = data + reply_header_bytes;
  out.stratum = get16(t + 24);
  out.leap_status = get16(t + 26);
  const unsigned char* floats = t + 40;
  out.current_correction_s = chrony_float(get32(floats + 0));
  out.skew_ppm = chrony_float(get32(floats + 20));
  out.resid_freq_ppm = chrony_float(get32(floats + 16));
  out.root_delay_s = chrony_float(get32(floats + 24));
  out.root_dispersion_s = chrony_float(get32(floats + 28));
  const double values[] = {out.current_correction_s, out.skew_ppm, out.resid_freq_ppm,
                           out.root_delay_s, out.root_dispersion_s};
  for (double v : values) {
    if (!std::isfinite(v) || std::fabs(v) > 1e6) {
      error = "absurd figures in the reply";
      return false;
    }
  }
  if (out.root_delay_s < 0 || out.root_dispersion_s < 0) {
    error = "negative root delay or dispersion";
    return false;
  }
  return true;
}

bound_sample chrony_bound_of(const chrony_tracking& t) {
  bound_sample b;
  b.source = bound_source_kind::chrony;
  b.status = t.leap_status == 3 ? sync_status::unsynced : sync_status::synced;
  const double error_s =
      std::fabs(t.current_correction_s) + t.root_delay_s / 2 + t.root_dispersion_s;
  b.error_ns = static_cast<std::int64_t>(std::ceil(error_s * 1e9));
  b.drift_ppb = static_cast<std::int64_t>(std::ceil(
      (std::fabs(t.skew_ppm) + std::fabs(t.resid_freq_ppm) + max_clock_error_ppm) * 1000.0));
  b.valid_ns = void_after_ns;
  return b;
}

chrony_bound_source::~chrony_bound_source() {
  if (fd_ >= 0) close(fd_);
}

void chrony_bound_source::note(const std::string& problem, void (*log)(const char* line)) {
  if (problem == last_problem_) return;
  last_problem_ = problem;
  const std::string line =
      problem.empty() ? "bound source chrony: answering"
                      : "bound source chrony (127.0.0.1:" + std::to_string(port_) + "): " + problem;
  log(line.c_str());
}

bound_sample chrony_bound_source::read(std::int64_t mono_now_ns, void (*log)(const char* line)) {
  if (fd_ < 0) {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port_);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 &&
        connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
      close(fd_);
      fd_ = -1;
    }
    if (fd_ < 0) note(std::string("no socket: ") + std::strerror(errno), log);
  }
  if (fd_ >= 0) {
    // Every reply that arrived since the last update; only the answer to
    // the latest request counts.
    unsigned char reply[512];
    for (;;) {
      const ssize_t n = recv(fd_, reply, sizeof(reply), 0);
      if (n < 0) {
        if (errno == ECONNREFUSED) note("no chronyd answers (connection refused)", log);
        break;
      }
      chrony_tracking t;
      std::string error;
      if (parse_chrony_tracking_reply(reply, static_cast<std::size_t>(n), sequence_, t, error)) {
        last_ = chrony_bound_of(t);
        have_reply_ = true;
        reply_ns_ = mono_now_ns;
        note("", log);
      } else if (!error.empty()) {
        note(error, log);
      }
    }
    if (!requested_ || mono_now_ns - last_request_ns_ >= ask_every_ns) {
      unsigned char request[chrony_request_bytes];
      const std::size_t size = make_chrony_tracking_request(++sequence_, request);
      send(fd_, request, size, 0);  // a refusal shows as ECONNREFUSED on recv
      last_request_ns_ = mono_now_ns;
      requested_ = true;
    }
  }
  if (!have_reply_) return bound_sample{.source = bound_source_kind::chrony};
  // The last reply's bound, grown at its drift since the reply.
  bound_sample b = last_;
  const std::int64_t age = mono_now_ns - reply_ns_;
  b.error_ns += static_cast<std::int64_t>(
      std::ceil(static_cast<double>(age) * static_cast<double>(b.drift_ppb) / 1e9));
  b.valid_ns = void_after_ns - age;
  if (b.valid_ns <= 0) {
    b.status = sync_status::unknown;
  } else if (age > free_running_after_ns && b.status == sync_status::synced) {
    b.status = sync_status::free_running;
  }
  return b;
}

}  // namespace vclock::daemon
