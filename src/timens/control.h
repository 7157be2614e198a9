// Changing a named namespace: `vclock ns create|set|rm` as one request,
// carried out here or by vclockd.
//
// Root's named namespaces live beside the host page, in the directory
// vclockd publishes (docs/virtual-time.md). When a vclockd serves that
// directory it keeps them: root's `vclock ns` sends its request over the
// daemon's socket (`ns.sock` beside the page: SOCK_SEQPACKET, mode 0600,
// root's requests only, checked with SO_PEERCRED) and the daemon writes the
// files as its own user, the owner of that directory, whom readers accept
// as they accept the page's owner. With no daemon answering, root's CLI
// writes them itself, as every user's CLI writes its own.
//
// A request is one message: "vclock-ns/1", the verb, the name and the
// time options exactly as the command line gave them, each ended by a NUL.
// The daemon parses the options with the CLI's own parser and checks the
// name again (a name, never a path). The reply is one message: the exit
// status in decimal, a NUL, and the line for stderr ("" when none).
#ifndef VCLOCK_SRC_TIMENS_CONTROL_H_
#define VCLOCK_SRC_TIMENS_CONTROL_H_

#include <sys/un.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace vclock::timens {

inline constexpr std::size_t timens_message_max = 4096;

struct timens_request {
  std::string verb;  // "create", "set" or "rm"
  std::string name;
  std::vector<std::string> options;  // the time options' arguments, as given
};

struct timens_outcome {
  int status = 0;       // what `vclock ns` exits with
  std::string message;  // its stderr line, without the newline; "" if none
};

// The daemon's socket: `ns.sock` beside the host page (VCLOCK_PAGE's file,
// else /run/vclock/page); "" if the path does not fit.
std::string timens_control_socket();
// The address of the socket at `path`, for connect(2) and bind(2); false
// if the path is empty or too long for one.
bool timens_socket_address(const std::string& path, sockaddr_un& out);

// Empty (with `error`) when the request does not fit in one message.
std::string encode_timens_request(const timens_request& r, std::string& error);
// False with `error` (one phrase) for anything but a well-formed request.
bool decode_timens_request(std::string_view bytes, timens_request& out, std::string& error);
std::string encode_timens_outcome(const timens_outcome& o);
bool decode_timens_outcome(std::string_view bytes, timens_outcome& out);

// Carries out `r` on the namespace file `path`: what the CLI does itself,
// and what vclockd does for root. The options are parsed here (a bad one is
// a usage error, status 2); the name is not checked here.
timens_outcome apply_timens_request(const timens_request& r, const std::string& path);

// A change waits for the previous one's switch point and then its own
// (about 10 ms each); vclockd serves one request at a time.
inline constexpr int answer_timeout_ms = 10'000;

// Sends `r` to the daemon listening on `socket_path` and waits for its
// answer, `timeout_ms` at most. False when no daemon is there (no socket,
// nobody listening, not permitted): the caller then writes the file
// itself. True with `out` set otherwise; an exchange that fails midway is
// an outcome too (status 1), and a daemon that does not answer in time is
// not stood in for: it may still carry the request out.
bool ask_vclockd(const std::string& socket_path, const timens_request& r, timens_outcome& out,
                 int timeout_ms = answer_timeout_ms);

}  // namespace vclock::timens

#endif  // VCLOCK_SRC_TIMENS_CONTROL_H_
