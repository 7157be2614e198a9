// vclockd keeps root's named namespaces (timens/control.h): the
// files in `ns` beside its page, changed at root's request over the socket
// `ns.sock` beside it.
//
// One thread, `vclockd-ns`, at normal priority (never the tick loop's
// real-time one: a change sleeps until its switch point, about 10 ms),
// serves one request at a time: a connection whose peer (SO_PEERCRED) is
// not root is answered with a refusal, one that sends nothing within 1 s
// is dropped. The files are written with the same code as the CLI's, as
// the daemon's user: the owner of the directory, whom readers accept.
#ifndef VCLOCK_SRC_DAEMON_TIMENS_SERVICE_H_
#define VCLOCK_SRC_DAEMON_TIMENS_SERVICE_H_

#include <string>

namespace vclock::daemon {

// Where a line of the daemon's log goes (vclockd's stderr).
using log_function = void (*)(const std::string& line);

// Makes `page_directory`/ns (0755) if missing, listens on
// `page_directory`/ns.sock (0600) and starts the thread. False with `error`
// when it cannot: the directory is someone else's or writable by others,
// the socket cannot be bound. Once per process.
bool start_timens_service(const std::string& page_directory, log_function log, std::string& error);

// Removes the socket, if start_timens_service() made it (at exit; the
// thread dies with the process, a change in progress leaves the
// namespace as it was or changed, never half-written).
void stop_timens_service();

}  // namespace vclock::daemon

#endif  // VCLOCK_SRC_DAEMON_TIMENS_SERVICE_H_
