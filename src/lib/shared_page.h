// Attaching to the page that vclockd publishes (the reader's side).
//
// A process maps the daemon's page read-only over its own page (the
// library's `the_page`, page-aligned): the readers' instructions, and the
// page's link-time address, are the same in both modes. Before it maps
// anything it checks, in this order, with plain system calls (no
// allocation, safe in the library's constructor):
//   the file: opened O_RDONLY|O_NOFOLLOW|O_CLOEXEC; a regular file; not
//     writable by group or others; owned by root or by the owner of its
//     directory; exactly page_bytes long;
//   the directory: not writable by group or others (else anyone could
//     replace the file between two attaches);
//   the header, read with pread (never through a mapping, so a short file
//     cannot SIGBUS): magic, ABI major, sizes, this boot's id, this CPU;
//   the process: not in a kernel time namespace that offsets MONOTONIC or
//     BOOTTIME (its clocks differ from the daemon's).
// Any failure is a refusal with a reason; the caller then keeps its own
// in-process timekeeper.
#ifndef VCLOCK_SRC_LIB_SHARED_PAGE_H_
#define VCLOCK_SRC_LIB_SHARED_PAGE_H_

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>

#include "lib/page_identity.h"
#include "vclock/page.h"

namespace vclock {

// Where the daemon publishes by default, and the environment variable that
// overrides it ("off" skips the shared page).
inline constexpr const char* default_page_path = "/run/vclock/page";
inline constexpr const char* page_env = "VCLOCK_PAGE";

enum class page_refusal : std::uint32_t {
  none = 0,
  not_found,        // no file at the path (no daemon): not an error
  open_failed,      // open(2) failed otherwise (permissions, a symlink: ELOOP)
  not_regular,      // a directory, FIFO, device, socket
  loose_mode,       // writable by group or others
  foreign_owner,    // owned by neither root nor the directory's owner
  loose_directory,  // the directory is writable by group or others
  wrong_size,       // not exactly page_bytes long
  read_failed,      // pread(2) of the header failed or came back short
  bad_magic,        // not a vclock page (or garbage)
  other_abi,        // another ABI major
  bad_header,       // header_size or page_size inconsistent
  other_boot,       // written in another boot (a counter since reset)
  other_counter,    // written for another CPU (vendor or signature)
  no_boot_id,       // this process could not read its own boot id
  time_namespace,   // this process's MONOTONIC/BOOTTIME are offset (unshare -T)
  map_failed,       // mmap(2) failed
};

// A short phrase for `vclock status` ("page is writable by group or others").
const char* page_refusal_text(page_refusal r) noexcept;

// The directory part of `path` into `out` ("." for a bare name, "/" for
// "/page"). False if it does not fit.
bool directory_of(const char* path, char* out, std::size_t size) noexcept;

// The file checks, on fstat() of the open file and stat() of its directory.
page_refusal check_page_file(const struct stat& file, const struct stat& directory) noexcept;

// The header checks, on `size` bytes read from the start of the file: pure,
// so the fuzz target calls it with any bytes at all.
page_refusal check_page_header(const void* bytes, std::size_t size,
                               const machine_identity& me) noexcept;

// True when /proc/self/timens_offsets (given as text) offsets MONOTONIC or
// BOOTTIME: a process in such a kernel time namespace reads other clocks
// than the daemon's.
bool time_namespace_offsets_clocks(const char* text, std::size_t length) noexcept;

// What a kernel time namespace adds to the initial namespace's MONOTONIC
// (and MONOTONIC_RAW, _COARSE) and BOOTTIME, from /proc/self/timens_offsets
// (lines "monotonic SECONDS NANOSECONDS", "boottime ...", or the clock ids
// 1 and 7 by number). Lines it does not know are ignored.
struct time_namespace_offsets {
  std::int64_t monotonic_ns = 0;
  std::int64_t boottime_ns = 0;
};
time_namespace_offsets parse_time_namespace_offsets(const char* text, std::size_t length) noexcept;

struct attach_result {
  page_refusal refusal = page_refusal::none;  // none: attached
  int error = 0;                              // errno of a failed system call
};

// Checks the page at `path` and maps it read-only, MAP_FIXED, over `where`
// (page-aligned, page_bytes long). On refusal `where` is untouched. A
// process in a kernel time namespace that offsets its clocks is refused
// (the page is the initial namespace's time) unless `in_own_frame`: its
// caller adds the namespace's offsets to what it reads (runtime.cc).
attach_result attach_shared_page(const char* path, page* where, const machine_identity& me,
                                 bool in_own_frame = false) noexcept;

}  // namespace vclock

#endif  // VCLOCK_SRC_LIB_SHARED_PAGE_H_
