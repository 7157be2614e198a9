// sd_notify(3)'s protocol: a path socket ("/run/systemd/notify") or an
// abstract one ("@name"), one SOCK_DGRAM message.
#include "daemon/notify.h"

#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace vclock::daemon {

bool notify_service_manager(const char* message) noexcept {
  const char* name = std::getenv("NOTIFY_SOCKET");
  if (name == nullptr || name[0] == '\0') return true;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::size_t length = std::strlen(name);
  if ((name[0] != '/' && name[0] != '@') || length >= sizeof(address.sun_path)) return false;
  std::memcpy(address.sun_path, name, length);
  if (name[0] == '@') address.sun_path[0] = '\0';  // abstract namespace
  const auto address_length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length);
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const std::size_t size = std::strlen(message);
  const ssize_t sent = sendto(fd, message, size, MSG_NOSIGNAL,
                              reinterpret_cast<const sockaddr*>(&address), address_length);
  close(fd);
  return sent == static_cast<ssize_t>(size);
}

}  // namespace vclock::daemon
