// Whether the page that `vclock status` names is there: a path is shown
// only for a page that exists, and otherwise why not, so that a user never
// reads a missing file's path as a page in use.
#ifndef VCLOCK_SRC_CLI_STATUS_PAGE_PRESENCE_H_
#define VCLOCK_SRC_CLI_STATUS_PAGE_PRESENCE_H_

#include <string>

namespace vclock::cli {

// "" if `path` names an existing file; otherwise "PATH: why", one line
// (e.g. "/run/vclock/page: no such file").
std::string page_absence(const std::string& path);

}  // namespace vclock::cli

#endif  // VCLOCK_SRC_CLI_STATUS_PAGE_PRESENCE_H_
