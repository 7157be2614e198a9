// A short phrase for why the page cannot answer (page.h, fallback_reason): for
// `vclock status` and vclockd's log. A file of its own, so that vclockd links
// it without the library's runtime (which would attach to a page at load).
#ifndef VCLOCK_SRC_LIB_FALLBACK_REASON_TEXT_H_
#define VCLOCK_SRC_LIB_FALLBACK_REASON_TEXT_H_

#include "vclock/page.h"

namespace vclock {

// "" for none.
const char* fallback_reason_text(fallback_reason r) noexcept;

}  // namespace vclock

#endif  // VCLOCK_SRC_LIB_FALLBACK_REASON_TEXT_H_
