// The writer's arithmetic of the error bound (page.h, bound_line): the
// growth per counter tick as a fixed-point multiplier whose product with any
// delta below the void point fits 64 bits.
#ifndef VCLOCK_SRC_LIB_BOUND_MATH_H_
#define VCLOCK_SRC_LIB_BOUND_MATH_H_

#include <cstdint>

namespace vclock {

struct bound_growth {
  std::uint64_t mult = 0;
  std::uint32_t shift = 0;
};

// A growth of `ppb` ns per second of a counter running at `counter_hz`, as
// mult / 2^shift ns per tick, rounded up (the bound never grows slower than
// it should): the largest shift <= 32 for which void_delta * mult < 2^64,
// so the reader's 64-bit product cannot overflow below the void point. If
// even shift 0 does not fit (a void point further away than any real
// source allows), `void_delta` is lowered until it does.
inline bound_growth choose_bound_growth(std::uint64_t ppb, double counter_hz,
                                        std::uint64_t& void_delta) noexcept {
  __extension__ typedef unsigned __int128 u128;
  bound_growth g;
  if (ppb == 0 || counter_hz <= 0) return g;
  for (int shift = 32; shift >= 0; --shift) {
    // ppb / 1e9 ns per ns times 1e9 / counter_hz ns per tick: ppb /
    // counter_hz ns per tick, times 2^shift; + 1 rounds up, with room for
    // the rounding of the long double.
    const long double exact = static_cast<long double>(ppb) / static_cast<long double>(counter_hz) *
                              static_cast<long double>(std::uint64_t{1} << shift);
    if (exact + 1.0L >= 18446744073709551615.0L) continue;
    g.mult = static_cast<std::uint64_t>(exact + 1.0L);
    g.shift = static_cast<std::uint32_t>(shift);
    if ((static_cast<u128>(g.mult) * void_delta) >> 64 == 0) return g;
  }
  void_delta = g.mult != 0 ? UINT64_MAX / g.mult : 0;
  return g;
}

}  // namespace vclock

#endif  // VCLOCK_SRC_LIB_BOUND_MATH_H_
