// Creating, locking and mapping the page file (see page_file.h).
#include "daemon/page_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "lib/shared_page.h"

namespace vclock::daemon {
namespace {

std::string errno_text(const char* what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

std::string strformat_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// A complete page (zero, with a header) written to a new file beside
// `path`, then linked (or renamed) into place: a reader never sees a short
// or headerless page. `replace`: rename over an existing file.
bool publish_new_file(const std::string& path, const machine_identity& me, bool replace,
                      std::string& error) {
  const std::string temporary = path + ".new." + std::to_string(getpid());
  unlink(temporary.c_str());
  const int fd = open(temporary.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = errno_text("cannot create", temporary);
    return false;
  }
  static page fresh;  // 4 KiB: not on the stack
  write_untouched_page(fresh, me);
  const bool written = fchmod(fd, 0644) == 0 &&
                       pwrite(fd, &fresh, sizeof(fresh), 0) == static_cast<ssize_t>(sizeof(fresh));
  close(fd);
  if (!written) {
    error = errno_text("cannot write", temporary);
    unlink(temporary.c_str());
    return false;
  }
  int r = 0;
  if (replace) {
    r = rename(temporary.c_str(), path.c_str());
  } else {
    r = link(temporary.c_str(), path.c_str());  // fails if another daemon won the race
    unlink(temporary.c_str());
  }
  if (r != 0 && !(errno == EEXIST && !replace)) {
    error = errno_text("cannot publish", path);
    unlink(temporary.c_str());
    return false;
  }
  return true;
}

// A page's directory that another user could write is refused: whoever can
// write it can swap the page under every reader (a sticky bit does not
// help: the daemon would still trust what another user left there).
bool directory_is_safe(const std::string& directory, std::string& error) {
  struct stat st {};
  if (stat(directory.c_str(), &st) != 0) {
    error = errno_text("cannot stat", directory);
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    error = directory + " is not a directory";
    return false;
  }
  const bool others_write =
      (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 || (st.st_uid != geteuid() && st.st_uid != 0);
  if (others_write) {
    error = "refusing " + directory + ": others can write it (mode " + strformat_mode(st.st_mode) +
            ", owner uid " + std::to_string(st.st_uid) +
            "); make it 0755 and owned by this daemon's user or root, or let vclockd create it";
    return false;
  }
  return true;
}

// The page's directory, created when missing (0755, this daemon's user,
// with any missing parents), as chronyd and ptp4l create their run
// directory. `made`: the directory, if this call created it.
bool prepare_directory(const std::string& path, std::string& made, std::string& error) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return true;  // "." or "/": not ours to judge
  const std::string directory = path.substr(0, slash);
  struct stat st {};
  if (stat(directory.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      error = errno_text("cannot stat", directory);
      return false;
    }
    // Parents first (mkdir -p), each 0755 whatever the umask.
    for (std::size_t at = directory.find('/', 1);; at = directory.find('/', at + 1)) {
      const std::string part = directory.substr(0, at);
      if (mkdir(part.c_str(), 0755) == 0) {
        if (chmod(part.c_str(), 0755) != 0) {
          error = errno_text("cannot set mode 0755 on", part);
          return false;
        }
      } else if (errno != EEXIST) {
        error = errno_text("cannot create", part);
        return false;
      }
      if (at == std::string::npos) break;
    }
    made = directory;
  }
  // Also after creating it: another process may have made it first.
  return directory_is_safe(directory, error);
}

// Fails (naming the holder) if another process has the page locked.
bool lock_page(int fd, const std::string& path, std::string& error) {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  if (fcntl(fd, F_SETLK, &lock) == 0) return true;
  if (errno != EAGAIN && errno != EACCES) {
    error = errno_text("cannot lock", path);
    return false;
  }
  struct flock holder {};
  holder.l_type = F_WRLCK;
  holder.l_whence = SEEK_SET;
  if (fcntl(fd, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK) {
    error = path + " is in use by another vclockd (pid " + std::to_string(holder.l_pid) + ")";
  } else {
    error = path + " is in use by another vclockd";
  }
  return false;
}

}  // namespace

bool open_page_for_writing(const char* path_text, const machine_identity& me, writable_page& out,
                           std::string& error) {
  const std::string path = path_text;
  if (!prepare_directory(path, out.created_directory, error)) return false;
  for (int attempt = 0; attempt < 4; ++attempt) {
    int fd = open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT) {
      if (!publish_new_file(path, me, false, error)) return false;
      out.created = true;
      continue;  // open what is there now (ours, or a racing daemon's)
    }
    if (fd < 0) {
      error = errno_text("cannot open", path);
      return false;
    }
    if (!lock_page(fd, path, error)) {
      close(fd);
      return false;
    }
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      error = errno_text("cannot stat", path);
      close(fd);
      return false;
    }
    if (!S_ISREG(st.st_mode)) {
      error = path + " is not a regular file";
      close(fd);
      return false;
    }
    if (st.st_uid != geteuid()) {
      error = path + " is owned by uid " + std::to_string(st.st_uid) +
              ", not by this daemon's uid " + std::to_string(geteuid());
      close(fd);
      return false;
    }
    if ((st.st_mode & 07777) != 0644 && fchmod(fd, 0644) != 0) {
      error = errno_text("cannot set mode 0644 on", path);
      close(fd);
      return false;
    }
    // Another size is another ABI major (or garbage): readers may map it,
    // so it is replaced, never resized.
    page_header header{};
    const bool whole =
        st.st_size == static_cast<off_t>(page_bytes) &&
        pread(fd, &header, sizeof(header), 0) == static_cast<ssize_t>(sizeof(header));
    const bool other_major =
        !whole || (header.magic == page_magic && header.abi_major != page_abi_major);
    if (other_major) {
      close(fd);
      if (!publish_new_file(path, me, true, error)) return false;
      out.reinitialised = whole ? "another ABI major: replaced by a new file"
                                : "wrong size: replaced by a new file";
      continue;
    }
    void* mapped = mmap(nullptr, page_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mapped == MAP_FAILED) {
      error = errno_text("cannot map", path);
      close(fd);
      return false;
    }
    auto* p = static_cast<page*>(mapped);
    const page_refusal verdict = check_page_header(&header, sizeof(header), me);
    if (verdict == page_refusal::other_counter) {
      // The same boot on another CPU model (a live migration): the page goes
      // on; the timekeeper's counter checks decide whether the counter does.
      std::memcpy(p->header.counter_vendor, me.counter_vendor, sizeof(me.counter_vendor));
      p->header.counter_signature = me.counter_signature;
      p->header.counter_nominal_hz = me.counter_nominal_hz;
    } else if (verdict != page_refusal::none) {
      // Another boot, garbage: no reader uses it (each refuses it).
      out.reinitialised = page_refusal_text(verdict);
      std::memset(mapped, 0, page_bytes);
      write_header(p->header, me, page_flag_shared);
    }
    std::atomic_ref<std::int32_t>(p->header.writer_pid).store(getpid(), std::memory_order_relaxed);
    out.fd = fd;
    out.p = p;
    out.inode = st.st_ino;
    return true;
  }
  error = path + " keeps changing under this daemon (another daemon starting?)";
  return false;
}

}  // namespace vclock::daemon
