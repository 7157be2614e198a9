// Root's named namespaces, kept by vclockd (timens_service.h).
#include "daemon/timens_service.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "lib/timens_join.h"
#include "timens/control.h"
#include "tool/args.h"

namespace vclock::daemon {
namespace {

// Set once by start_timens_service(), before the thread starts.
int listening_fd = -1;
std::string socket_path;
std::string ns_directory;
log_function say = nullptr;

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

void reply(int fd, const timens::timens_outcome& o) {
  const std::string bytes = timens::encode_timens_outcome(o);
  send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
}

// One connection: its request, carried out, answered.
void serve(int fd) {
  const timeval timeout{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  // Read before any answer: a socket closed with a request unread would
  // reset the connection, and the asker would never see why.
  char bytes[timens::timens_message_max + 1];
  ssize_t n = 0;
  do {
    n = recv(fd, bytes, sizeof(bytes), 0);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return;  // gone, or silent for 1 s: nobody to answer
  ucred peer{};
  socklen_t size = sizeof(peer);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || peer.uid != 0) {
    say("namespace request from uid " + std::to_string(peer.uid) + " refused: root's only");
    reply(fd, {1, "vclock ns: vclockd changes root's namespaces for root only"});
    return;
  }
  timens::timens_request request;
  std::string error;
  if (!timens::decode_timens_request(std::string_view(bytes, static_cast<std::size_t>(n)), request,
                                     error)) {
    say("namespace request from pid " + std::to_string(peer.pid) + " refused: " + error);
    reply(fd, {tool::exit_usage, "vclock ns: vclockd: " + error});
    return;
  }
  // A name, never a path: the request names a file in this directory only.
  if (!valid_timens_name(request.name.c_str())) {
    reply(fd, {tool::exit_usage,
               "vclock: ns " + request.verb + ": '" + request.name + "' is not a namespace name"});
    return;
  }
  const timens::timens_outcome outcome =
      timens::apply_timens_request(request, ns_directory + "/" + request.name);
  std::string line = "namespace " + request.name + ": " + request.verb;
  for (const std::string& o : request.options) line += " " + o;
  line += " (pid " + std::to_string(peer.pid) + "): ";
  line += outcome.status == 0 ? "done" : outcome.message;
  say(line);
  reply(fd, outcome);
}

void serve_forever() {
  // Never real-time, whatever the service manager gave the process.
  const sched_param normal{};
  pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal);
  for (;;) {
    const int fd = accept4(listening_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      say(errno_text("namespaces: accept") + "; no longer serving namespace requests");
      return;
    }
    serve(fd);
    close(fd);
  }
}

// `path` is a directory that this process's user owns and only it may
// write, made (0755) if missing: where readers accept its files.
bool own_directory(const std::string& path, std::string& error) {
  if (mkdir(path.c_str(), 0755) == 0) {
    chmod(path.c_str(), 0755);  // whatever the umask: every reader must enter it
  } else if (errno != EEXIST) {
    error = errno_text("cannot create " + path);
    return false;
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    error = errno_text(path);
    return false;
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char found[64];
    std::snprintf(found, sizeof(found), "uid %u, mode %04o", static_cast<unsigned>(st.st_uid),
                  static_cast<unsigned>(st.st_mode & 07777));
    error = path + " is not a directory that only this user (uid " + std::to_string(geteuid()) +
            ") may write (" + found + "): remove it, and vclockd makes its own";
    return false;
  }
  return true;
}

}  // namespace

bool start_timens_service(const std::string& page_directory, log_function log, std::string& error) {
  say = log;
  ns_directory = page_directory + "/ns";
  if (!own_directory(ns_directory, error)) return false;
  const std::string path = page_directory + "/ns.sock";
  sockaddr_un address{};
  if (!timens::timens_socket_address(path, address)) {
    error = path + ": too long for a socket's name";
    return false;
  }
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = errno_text("socket");
    return false;
  }
  // This daemon holds the page's lock: a socket there is a dead one's.
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path.c_str());
  // 0600 from the start: nobody but this user (and root) can connect.
  const mode_t old_mask = umask(0177);
  const int bound = bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  umask(old_mask);
  if (bound != 0 || listen(fd, 8) != 0) {
    error = errno_text("cannot listen on " + path);
    close(fd);
    return false;
  }
  listening_fd = fd;
  socket_path = path;
  // Every signal blocked in the thread: SIGTERM and SIGINT are the tick
  // loop's to take.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  std::thread thread(serve_forever);
  pthread_setname_np(thread.native_handle(), "vclockd-ns");
  thread.detach();
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return true;
}

void stop_timens_service() {
  if (socket_path.empty()) return;
  unlink(socket_path.c_str());
  socket_path.clear();
}

}  // namespace vclock::daemon
