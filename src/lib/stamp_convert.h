// What the live stamp conversion (stamps.cc) shares with the offline one
// (stamp_file.cc): one arithmetic for both, so a file converts bit for bit
// as the page did.
#ifndef VCLOCK_SRC_LIB_STAMP_CONVERT_H_
#define VCLOCK_SRC_LIB_STAMP_CONVERT_H_

#include <time.h>

#include <cstddef>
#include <cstdint>

#include "lib/history.h"
#include "vclock/vclock.h"

namespace vclock::detail {

// The clocks a stamp converts to; false for any other id.
bool stamp_clock_kind(clockid_t clock, clock_kind& k) noexcept;

// vclock_stamps_to_ns's loop against the snapshot `s`: the worst status;
// and each stamp's in status[i] when `status` is not null (the _each calls).
int convert_stamps(const history_snapshot& s, clock_kind k, const vclock_stamp_t* stamps,
                   std::size_t n, std::int64_t* out, int* status = nullptr) noexcept;

// A conversion that failed as a whole (no history, an unreadable file):
// every stamp refused with `err`, for the _each calls. Returns err.
int refuse_stamps(int err, std::size_t n, std::int64_t* out, int* status) noexcept;

}  // namespace vclock::detail

#endif  // VCLOCK_SRC_LIB_STAMP_CONVERT_H_
