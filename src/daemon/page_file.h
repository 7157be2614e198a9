// The daemon's side of the shared page: the file that vclockd creates once
// and then keeps, across restarts, for as long as the page's ABI major
// stays the same.
#ifndef VCLOCK_SRC_DAEMON_PAGE_FILE_H_
#define VCLOCK_SRC_DAEMON_PAGE_FILE_H_

#include <sys/types.h>

#include <string>

#include "lib/page_identity.h"
#include "vclock/page.h"

namespace vclock::daemon {

struct writable_page {
  int fd = -1;        // open, and locked against a second daemon
  page* p = nullptr;  // mapped read-write, shared
  ino_t inode = 0;
  bool created = false;  // the file did not exist
  // The directory this daemon created for the page ("" if it existed).
  std::string created_directory;
  // Why the header was written anew ("" if the existing page was kept).
  std::string reinitialised;
};

// Opens the page at `path`, creating it if needed, locks it (a second
// daemon on the same page is refused, naming the pid that holds it), and
// maps it. A missing directory is created (0755); an existing one that
// another user can write is refused. An existing page of this ABI major, this boot and this CPU is
// kept as it is: the timekeeper repairs a half-written update and continues
// from its parameters. A page of another boot, or garbage, is rewritten in
// place (no reader can be using it: each refuses it). A page of another ABI
// major, whose readers may still map it, is replaced by a new file (rename),
// never rewritten. On failure: false, and `error` says why in one line.
bool open_page_for_writing(const char* path, const machine_identity& me, writable_page& out,
                           std::string& error);

}  // namespace vclock::daemon

#endif  // VCLOCK_SRC_DAEMON_PAGE_FILE_H_
