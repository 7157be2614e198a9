// TIME OPTIONS (API.md, "Virtual time"), shared by `vclock run` and
// `vclock ns create|set`: parsing of durations, instants and rates, and the
// options themselves.
//
//   DUR   a signed number with a unit: d h m s ms us ns ("+1d", "-90s",
//         "+250ms", "1.5h"); a bare number is seconds. Decimal fractions
//         are exact to the nanosecond (parsed as integers, never through a
//         double).
//   T     "2030-01-01T00:00:00Z" (ISO 8601, UTC, optional fraction of a
//         second up to nanoseconds) or "@SECONDS" since the epoch (may be
//         negative or fractional).
//   R     a rate: a decimal number, 0.000001 to 1000 (virtual seconds per
//         real second).
#ifndef VCLOCK_SRC_TIMENS_TIME_OPTIONS_H_
#define VCLOCK_SRC_TIMENS_TIME_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace vclock::timens {

// Each returns false with `error` set (one phrase, no prefix) on bad input:
// a malformed text, a value out of int64 ns, a rate out of range.
bool parse_duration(std::string_view text, std::int64_t& ns, std::string& error);
bool parse_instant(std::string_view text, std::int64_t& since_epoch_ns, std::string& error);
// The rate as Q32.32 (virtual ns per host ns, times 2^32).
bool parse_rate(std::string_view text, std::uint64_t& rate_q32, std::string& error);

inline constexpr double min_rate = 0.000001;
inline constexpr double max_rate = 1000;

struct time_options {
  std::optional<std::int64_t> realtime_offset_ns;   // --realtime DUR
  std::optional<std::int64_t> realtime_at_ns;       // --realtime-at T
  std::optional<std::int64_t> monotonic_offset_ns;  // --monotonic DUR
  std::optional<std::int64_t> boottime_offset_ns;   // --boottime DUR
  std::optional<std::uint64_t> rate_q32;            // --rate R
  bool frozen = false;                              // --frozen
  bool thaw = false;                                // --thaw (ns set)
  bool allow_backward = false;                      // --allow-backward (ns set)
  std::string ns;                                   // --ns NAME (run)

  // True when an option changes the clocks (not --ns alone).
  bool changes_clocks() const {
    return realtime_offset_ns || realtime_at_ns || monotonic_offset_ns || boottime_offset_ns ||
           rate_q32 || frozen || thaw;
  }
};

// Takes args[i] (and its value, advancing i) if it is a time option:
// returns 1 when taken, 0 when args[i] is not one, -1 on bad usage with
// `error` set. `--name=value` and `--name value` both work. Options that
// `command` does not accept (run: --thaw, --allow-backward; create: --ns,
// --thaw, --allow-backward) are not time options there.
int take_time_option(std::string_view command, std::span<char* const> args, std::size_t& i,
                     time_options& out, std::string& error);

// The usage lines of the options `command` takes, for --help.
std::string time_options_help(std::string_view command);

}  // namespace vclock::timens

#endif  // VCLOCK_SRC_TIMENS_TIME_OPTIONS_H_
