// Fixed-point conversion parameters for the page: ns = (delta * mult) >> shift.
// Pure functions, used by the timekeeper and tested against 128-bit math.
#ifndef VCLOCK_SRC_LIB_MULT_SHIFT_H_
#define VCLOCK_SRC_LIB_MULT_SHIFT_H_

#include <cmath>
#include <cstdint>
#include <limits>

namespace vclock {

struct mult_shift {
  std::uint32_t shift = 0;
  std::uint64_t max_delta = 0;  // exclusive: valid for delta < max_delta
};

// Picks the largest shift (most precision) such that, for every rate up to
// `max_ns_per_tick` and every delta below `wanted_delta`,
//   mult = round(ns_per_tick * 2^shift) < 2^32   and   delta * mult < 2^64.
// The proof of no overflow in the reader: mult <= max_mult(shift) and
// delta < max_delta <= floor((2^64 - 1) / max_mult), so
// delta * mult <= (max_delta - 1) * max_mult < 2^64.
// Returns max_delta <= wanted_delta; smaller only when no shift allows the
// whole interval (a counter so slow that 2^32 ns-ticks overflow).
// `only_shift`, if nonzero, is the one shift allowed (arch::fixed_shift);
// max_delta is 0 when the rate does not fit it.
inline mult_shift choose_mult_shift(double max_ns_per_tick, std::uint64_t wanted_delta,
                                    std::uint32_t only_shift = 0) noexcept {
  mult_shift best;
  if (only_shift != 0) {
    const double max_mult = std::ceil(std::ldexp(max_ns_per_tick, static_cast<int>(only_shift)));
    if (max_mult >= 4294967296.0 || max_mult < 1.0) {
      return best;
    }
    const std::uint64_t limit =
        std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(max_mult);
    best.shift = only_shift;
    best.max_delta = limit < wanted_delta ? limit : wanted_delta;
    return best;
  }
  for (std::uint32_t shift = 32;; --shift) {
    const double max_mult = std::ceil(std::ldexp(max_ns_per_tick, static_cast<int>(shift)));
    if (max_mult < 4294967296.0 && max_mult >= 1.0) {
      const auto m = static_cast<std::uint64_t>(max_mult);
      const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() / m;
      if (limit >= wanted_delta || shift == 0) {
        best.shift = shift;
        best.max_delta = limit < wanted_delta ? limit : wanted_delta;
        return best;
      }
    }
    if (shift == 0) {
      return best;  // rate too large for any shift: max_delta 0, never used
    }
  }
}

// mult for `ns_per_tick` at `shift`, rounded to nearest.
inline std::uint32_t mult_for(double ns_per_tick, std::uint32_t shift) noexcept {
  const double m = std::nearbyint(std::ldexp(ns_per_tick, static_cast<int>(shift)));
  if (m <= 0) return 0;
  if (m >= 4294967295.0) return 4294967295u;
  return static_cast<std::uint32_t>(m);
}

}  // namespace vclock

#endif  // VCLOCK_SRC_LIB_MULT_SHIFT_H_
