// Joining a virtual-time namespace (API.md, "Virtual time"): the reader's
// side of an ns_page (include/vclock/ns_page.h).
//
// VCLOCK_NS names the namespace: a name (letters, digits, '.', '_', '-', at
// most 63, not starting with '.'), looked up as
// $XDG_RUNTIME_DIR/vclock/ns/NAME (a user's own) and then in the system's
// namespace directory, `ns` next to the host page (/run/vclock/ns, or
// beside VCLOCK_PAGE's file: vclockd keeps root's namespaces there); or an
// absolute path (`vclock run`'s anonymous namespaces). The variables are
// read with secure_getenv: a setuid program joins nothing. The file is
// checked like the host page (opened O_RDONLY|O_NOFOLLOW, a regular file,
// not writable by group or others, exactly one page, magic and ABI read
// with pread) and must be owned by root, by this process's effective uid,
// or by the owner of its directory when only that owner can write there
// (vclockd's user, for the namespaces it keeps): nobody else can set this
// process's clocks. It is then mapped read-only. Plain system calls only,
// nothing allocated: the library's constructor calls it.
#ifndef VCLOCK_SRC_LIB_TIMENS_JOIN_H_
#define VCLOCK_SRC_LIB_TIMENS_JOIN_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "vclock/ns_page.h"

namespace vclock {

inline constexpr const char* ns_env = "VCLOCK_NS";
inline constexpr const char* default_system_ns_directory = "/run/vclock/ns";

enum class timens_refusal : std::uint32_t {
  none = 0,
  bad_name,         // neither a valid name nor an absolute path
  not_found,        // no such namespace
  open_failed,      // open(2) failed otherwise (permissions, a symbolic link)
  not_regular,      // not a regular file
  loose_mode,       // writable by group or others
  foreign_owner,    // owned by neither root, this process's user, nor its directory's owner
  loose_directory,  // owned by its directory's owner, a directory others may write
  wrong_size,       // not exactly ns_page_bytes
  read_failed,      // the header cannot be read
  bad_magic,        // not a namespace page
  other_abi,        // another ABI major
  bad_header,       // sizes inconsistent
  map_failed,       // mmap(2) failed
};

const char* timens_refusal_text(timens_refusal r) noexcept;

// True for a namespace name (not a path).
bool valid_timens_name(const char* name) noexcept;

// The system's namespace directory into `out`: `ns` in the directory of
// the host page VCLOCK_PAGE names (secure_getenv; an absolute path), else
// /run/vclock/ns. False if it does not fit.
bool system_timens_directory(char* out, std::size_t size) noexcept;
// This user's namespace directory into `out`: $XDG_RUNTIME_DIR/vclock/ns
// (secure_getenv: a setuid program has none). False when the variable is
// unset or relative, or the path does not fit. The one rule the CLI, vclockd
// and the reader share.
bool user_timens_directory(char* out, std::size_t size) noexcept;

// The file of namespace `spec` (a name or an absolute path) into `out`:
// false (bad_name) if it is neither, or does not fit. A name resolves to
// the user's directory when `user_directory` (XDG_RUNTIME_DIR/vclock/ns,
// may be null) holds it, else to `system_directory`.
bool timens_path_of(const char* spec, const char* user_directory, const char* system_directory,
                    char* out, std::size_t size) noexcept;

// The file checks (fstat of the open file, stat of its directory), for a
// process of effective uid `euid`.
timens_refusal check_timens_file(const struct stat& file, const struct stat& directory,
                                 uid_t euid) noexcept;
// The header checks on the first `size` bytes of the file.
timens_refusal check_timens_header(const void* bytes, std::size_t size) noexcept;

// A header that check_timens_header() accepts: this ABI, created by this
// process's effective uid, named `name` ("" for an anonymous namespace).
void write_timens_header(ns_header& h, const char* name) noexcept;

struct timens_join_result {
  timens_refusal refusal = timens_refusal::none;
  int error = 0;
};

// Checks the namespace file at `path` and maps it read-only, MAP_FIXED,
// over `where` (page-aligned, one page). On refusal `where` is untouched.
timens_join_result join_timens_page(const char* path, ns_page* where) noexcept;

}  // namespace vclock

#endif  // VCLOCK_SRC_LIB_TIMENS_JOIN_H_
