// See page_presence.h.
#include "cli/status/page_presence.h"

#include <errno.h>
#include <sys/stat.h>

#include <cstring>

namespace vclock::cli {

std::string page_absence(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    return S_ISREG(st.st_mode) ? "" : path + ": not a regular file";
  }
  if (errno == ENOENT || errno == ENOTDIR) return path + ": no such file";
  return path + ": " + std::strerror(errno);
}

}  // namespace vclock::cli
