// Namespace requests: the message format, carrying one out, asking vclockd.
#include "timens/control.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "timens/store.h"
#include "timens/time_options.h"
#include "tool/args.h"

namespace vclock::timens {
namespace {

constexpr std::string_view request_tag = "vclock-ns/1";
// The NUL-ended fields of `bytes`; false if the last one is not ended.
bool split_fields(std::string_view bytes, std::vector<std::string_view>& fields) {
  fields.clear();
  while (!bytes.empty()) {
    const std::size_t end = bytes.find('\0');
    if (end == std::string_view::npos) return false;
    fields.push_back(bytes.substr(0, end));
    bytes.remove_prefix(end + 1);
  }
  return true;
}

timens_outcome usage_outcome(const std::string& command, const std::string& message) {
  return {tool::exit_usage, "vclock: " + command + ": " + message};
}

timens_outcome failed_outcome(const std::string& command, const std::string& message) {
  return {tool::exit_check_failed, "vclock " + command + ": " + message};
}

}  // namespace

std::string timens_control_socket() {
  const std::string directory = system_timens_directory();  // ".../ns" beside the page
  const std::size_t slash = directory.rfind('/');
  if (directory.empty() || slash == std::string::npos) return "";
  return directory.substr(0, slash) + "/ns.sock";
}

bool timens_socket_address(const std::string& path, sockaddr_un& out) {
  out = sockaddr_un{};
  out.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(out.sun_path)) return false;
  std::memcpy(out.sun_path, path.c_str(), path.size() + 1);
  return true;
}

std::string encode_timens_request(const timens_request& r, std::string& error) {
  std::string bytes;
  const auto add = [&bytes](std::string_view field) { bytes.append(field).push_back('\0'); };
  add(request_tag);
  add(r.verb);
  add(r.name);
  for (const std::string& o : r.options) add(o);
  for (const std::string& field : {r.verb, r.name}) {
    if (field.find('\0') != std::string::npos) {
      error = "a NUL in the request";
      return "";
    }
  }
  if (bytes.size() > timens_message_max) {
    error = "the request is longer than " + std::to_string(timens_message_max) + " bytes";
    return "";
  }
  return bytes;
}

bool decode_timens_request(std::string_view bytes, timens_request& out, std::string& error) {
  std::vector<std::string_view> fields;
  if (bytes.size() > timens_message_max || !split_fields(bytes, fields)) {
    error = "malformed request (not NUL-ended fields of at most " +
            std::to_string(timens_message_max) + " bytes)";
    return false;
  }
  if (fields.size() < 3 || fields[0] != request_tag) {
    error = "malformed request (not " + std::string(request_tag) + ")";
    return false;
  }
  if (fields[1] != "create" && fields[1] != "set" && fields[1] != "rm") {
    error = "unknown request '" + std::string(fields[1]) + "'";
    return false;
  }
  out.verb = fields[1];
  out.name = fields[2];
  out.options.assign(fields.begin() + 3, fields.end());
  return true;
}

std::string encode_timens_outcome(const timens_outcome& o) {
  // One message: a longer line is cut (it is an error text), a NUL in it
  // (a file name's?) shown as a blank.
  std::string message = o.message.substr(0, timens_message_max - 16);
  std::replace(message.begin(), message.end(), '\0', ' ');
  return std::to_string(o.status) + '\0' + message;
}

bool decode_timens_outcome(std::string_view bytes, timens_outcome& out) {
  const std::size_t nul = bytes.find('\0');
  if (nul == std::string_view::npos || nul == 0 || nul > 3) return false;
  int status = 0;
  for (const char c : bytes.substr(0, nul)) {
    if (c < '0' || c > '9') return false;
    status = status * 10 + (c - '0');
  }
  if (status > 255) return false;
  out.status = status;
  out.message = bytes.substr(nul + 1);
  return out.message.find('\0') == std::string::npos;
}

timens_outcome apply_timens_request(const timens_request& r, const std::string& path) {
  const std::string command = "ns " + r.verb;
  if (r.verb != "create" && r.verb != "set" && r.verb != "rm") {
    return usage_outcome("ns", "unknown subcommand '" + r.verb + "'");
  }
  // The parser takes argv-style arguments.
  std::vector<std::string> copies = r.options;
  std::vector<char*> args;
  args.reserve(copies.size());
  for (std::string& o : copies) args.push_back(o.data());
  time_options options;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string error;
    const int taken = r.verb == "rm" ? 0 : take_time_option(command, args, i, options, error);
    if (taken < 0) return usage_outcome(command, error);
    if (taken == 0) return usage_outcome(command, "unexpected argument '" + copies[i] + "'");
  }
  std::string error;
  if (r.verb == "create") {
    if (!create_timens_file(path, r.name, options, error)) return failed_outcome(command, error);
    return {};
  }
  if (r.verb == "rm") {
    if (unlink(path.c_str()) != 0) {
      return failed_outcome(
          command, path + ": " + (errno == ENOENT ? "no such namespace" : std::strerror(errno)));
    }
    return {};
  }
  if (!options.changes_clocks()) {
    return usage_outcome(command, "nothing to change (see vclock ns --help)");
  }
  std::int64_t late_ns = 0;
  if (!change_timens_file(path, options, late_ns, error)) return failed_outcome(command, error);
  if (late_ns > 0) {
    char line[200];
    std::snprintf(line, sizeof(line),
                  "vclock ns set: published %.3f ms after its switch point (the writer was "
                  "preempted): readers may have seen a step that long",
                  static_cast<double>(late_ns) / 1e6);
    return {tool::exit_ok, line};
  }
  return {};
}

bool ask_vclockd(const std::string& socket_path, const timens_request& r, timens_outcome& out,
                 int timeout_ms) {
  sockaddr_un address{};
  if (!timens_socket_address(socket_path, address)) return false;
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return false;  // ENOENT, ECONNREFUSED (a daemon gone), EACCES: nobody to ask
  }
  const std::string command = "ns " + r.verb;
  std::string error;
  const std::string bytes = encode_timens_request(r, error);
  if (bytes.empty()) {
    close(fd);
    out = usage_outcome(command, error);
    return true;
  }
  const timeval timeout{timeout_ms / 1000, static_cast<suseconds_t>(timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  char answer[timens_message_max + 1];
  if (n == static_cast<ssize_t>(bytes.size())) {
    do {
      n = recv(fd, answer, sizeof(answer), 0);
    } while (n < 0 && errno == EINTR);
  } else if (n >= 0) {
    errno = EMSGSIZE;
    n = -1;
  }
  const int exchange_error = errno;
  close(fd);
  const std::string daemon = "vclockd (" + socket_path + ")";
  if (n < 0 && exchange_error == EAGAIN) {
    // Not done here instead: a relative offset applied twice would be wrong.
    char waited[32];
    std::snprintf(waited, sizeof(waited), "%.3g s", timeout_ms / 1000.0);
    out = failed_outcome(command, daemon + " did not answer within " + waited +
                                      " (stopped or hung?); it may still carry the request "
                                      "out: 'vclock ns show " +
                                      r.name + "' tells");
  } else if (n < 0) {
    out = failed_outcome(command, daemon + " did not answer: " + std::strerror(exchange_error));
  } else if (n == 0 || static_cast<std::size_t>(n) > timens_message_max ||
             !decode_timens_outcome(std::string_view(answer, static_cast<std::size_t>(n)), out)) {
    out = failed_outcome(command, daemon + " gave no well-formed answer");
  }
  return true;
}

}  // namespace vclock::timens
