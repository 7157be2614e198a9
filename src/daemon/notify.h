// systemd's readiness protocol, spoken directly (no libsystemd): one
// datagram to the AF_UNIX socket named by $NOTIFY_SOCKET.
#ifndef VCLOCK_SRC_DAEMON_NOTIFY_H_
#define VCLOCK_SRC_DAEMON_NOTIFY_H_

namespace vclock::daemon {

// Sends `message` ("READY=1", "STOPPING=1", "STATUS=...") if
// $NOTIFY_SOCKET is set. Returns false only if it is set and sending failed.
bool notify_service_manager(const char* message) noexcept;

}  // namespace vclock::daemon

#endif  // VCLOCK_SRC_DAEMON_NOTIFY_H_
