// TIME OPTIONS: exact decimal parsing (integers only: no double rounds a
// nanosecond away) and the option table of each command.
#include "timens/time_options.h"

#include <cstdio>
#include <string>

#include "vclock/detail/reader.h"

namespace vclock::timens {
namespace {

__extension__ typedef unsigned __int128 u128;

using detail::ns_per_s;

// A decimal number "[+-]DIGITS[.DIGITS]" at the start of `text`: its digits
// as an integer `mantissa` and the count of fraction digits `scale`
// (value = mantissa / 10^scale). Consumes what it reads. At most 20 digits
// (so that mantissa times a day in ns fits 128 bits).
struct decimal {
  bool negative = false;
  u128 mantissa = 0;
  int scale = 0;
};

bool take_decimal(std::string_view& text, decimal& d, std::string& error) {
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) d.negative = text[i++] == '-';
  int digits = 0;
  bool in_fraction = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !in_fraction) {
      in_fraction = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    if (++digits > 20) {
      error = "too many digits";
      return false;
    }
    d.mantissa = d.mantissa * 10 + static_cast<unsigned>(c - '0');
    if (in_fraction) ++d.scale;
  }
  if (digits == 0) {
    error = "expected a number";
    return false;
  }
  text.remove_prefix(i);
  return true;
}

u128 power_of_ten(int n) {
  u128 p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

// mantissa / 10^scale * unit_ns as exact signed ns.
bool to_ns(const decimal& d, std::int64_t unit_ns, std::int64_t& ns, std::string& error) {
  const u128 scaled = d.mantissa * static_cast<u128>(unit_ns);
  const u128 divisor = power_of_ten(d.scale);
  if (scaled % divisor != 0) {
    error = "finer than a nanosecond";
    return false;
  }
  const u128 magnitude = scaled / divisor;
  const u128 limit = d.negative ? u128{1} << 63 : (u128{1} << 63) - 1;
  if (d.mantissa != 0 && (scaled / static_cast<u128>(unit_ns) != d.mantissa || magnitude > limit)) {
    error = "out of range (int64 nanoseconds: about 292 years)";
    return false;
  }
  ns = d.negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
// days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool take_fixed_digits(std::string_view& text, int count, unsigned& value) {
  if (text.size() < static_cast<std::size_t>(count)) return false;
  value = 0;
  for (int i = 0; i < count; ++i) {
    const char c = text[static_cast<std::size_t>(i)];
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  text.remove_prefix(static_cast<std::size_t>(count));
  return true;
}

bool take_char(std::string_view& text, char c) {
  if (text.empty() || text.front() != c) return false;
  text.remove_prefix(1);
  return true;
}

bool parse_iso8601(std::string_view text, std::int64_t& ns, std::string& error) {
  const std::string_view original = text;
  unsigned year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  const bool shape = take_fixed_digits(text, 4, year) && take_char(text, '-') &&
                     take_fixed_digits(text, 2, month) && take_char(text, '-') &&
                     take_fixed_digits(text, 2, day) && take_char(text, 'T') &&
                     take_fixed_digits(text, 2, hour) && take_char(text, ':') &&
                     take_fixed_digits(text, 2, minute) && take_char(text, ':') &&
                     take_fixed_digits(text, 2, second);
  if (!shape) {
    error = "expected YYYY-MM-DDTHH:MM:SSZ or @SECONDS";
    return false;
  }
  std::int64_t fraction_ns = 0;
  if (take_char(text, '.')) {
    int digits = 0;
    while (!text.empty() && text.front() >= '0' && text.front() <= '9') {
      if (++digits > 9) {
        error = "finer than a nanosecond";
        return false;
      }
      fraction_ns = fraction_ns * 10 + (text.front() - '0');
      text.remove_prefix(1);
    }
    if (digits == 0) {
      error = "expected digits after '.'";
      return false;
    }
    for (int i = digits; i < 9; ++i) fraction_ns *= 10;
  }
  if (!take_char(text, 'Z') || !text.empty()) {
    error = "expected 'Z' (UTC) at the end of '" + std::string(original) + "'";
    return false;
  }
  static constexpr unsigned month_days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (month < 1 || month > 12 || day < 1 || day > month_days[month - 1] ||
      (month == 2 && day == 29 && !leap) || hour > 23 || minute > 59 || second > 59) {
    error = "no such date or time";
    return false;
  }
  const std::int64_t days = days_from_civil(year, month, day);
  const std::int64_t seconds =
      days * 86400 + std::int64_t{hour} * 3600 + std::int64_t{minute} * 60 + second;
  // int64 ns reach 1677-09-21 to 2262-04-11.
  if (seconds < INT64_MIN / ns_per_s + 1 || seconds > INT64_MAX / ns_per_s - 1) {
    error = "out of range (int64 nanoseconds: 1677 to 2262)";
    return false;
  }
  ns = seconds * ns_per_s + fraction_ns;
  return true;
}

struct unit {
  std::string_view name;
  std::int64_t ns;
};
constexpr unit units[] = {{"ns", 1},
                          {"us", 1'000},
                          {"ms", 1'000'000},
                          {"s", ns_per_s},
                          {"m", 60 * ns_per_s},
                          {"h", 3600 * ns_per_s},
                          {"d", 86400 * ns_per_s}};

}  // namespace

bool parse_duration(std::string_view text, std::int64_t& ns, std::string& error) {
  const std::string original(text);
  decimal d;
  if (!take_decimal(text, d, error)) {
    error = "'" + original + "': " + error + " (a duration: +1d, -90s, +250ms)";
    return false;
  }
  std::int64_t unit_ns = ns_per_s;  // a bare number is seconds
  if (!text.empty()) {
    bool known = false;
    for (const unit& u : units) {
      if (text == u.name) {
        unit_ns = u.ns;
        known = true;
      }
    }
    if (!known) {
      error = "'" + original + "': unknown unit '" + std::string(text) + "' (d h m s ms us ns)";
      return false;
    }
  }
  if (!to_ns(d, unit_ns, ns, error)) {
    error = "'" + original + "': " + error;
    return false;
  }
  return true;
}

bool parse_instant(std::string_view text, std::int64_t& ns, std::string& error) {
  const std::string original(text);
  if (text.starts_with('@')) {
    text.remove_prefix(1);
    decimal d;
    if (!take_decimal(text, d, error) || !text.empty() || !to_ns(d, ns_per_s, ns, error)) {
      if (error.empty() || !text.empty()) error = "expected @SECONDS";
      error = "'" + original + "': " + error;
      return false;
    }
    return true;
  }
  if (!parse_iso8601(text, ns, error)) {
    error = "'" + original + "': " + error;
    return false;
  }
  return true;
}

bool parse_rate(std::string_view text, std::uint64_t& rate_q32, std::string& error) {
  const std::string original(text);
  decimal d;
  if (!take_decimal(text, d, error) || !text.empty() || d.negative) {
    error = "'" + original + "': not a rate (a positive decimal number, e.g. 2 or 0.5)";
    return false;
  }
  const u128 divisor = power_of_ten(d.scale);
  // value in [1e-6, 1000]: compare mantissa against the bounds scaled alike.
  if (d.mantissa * 1'000'000 < divisor || d.mantissa > divisor * 1000) {
    error = "'" + original + "': out of range (0.000001 to 1000)";
    return false;
  }
  rate_q32 = static_cast<std::uint64_t>(((d.mantissa << 32) + divisor / 2) / divisor);
  return true;
}

int take_time_option(std::string_view command, std::span<char* const> args, std::size_t& i,
                     time_options& out, std::string& error) {
  const std::string_view arg = args[i];
  if (!arg.starts_with("--")) return 0;
  const std::size_t eq = arg.find('=');
  const std::string_view name = arg.substr(0, eq);
  const bool run = command == "run";
  const bool set = command == "ns set";
  const auto value = [&](std::string_view& v) {
    if (eq != std::string_view::npos) {
      v = arg.substr(eq + 1);
      return true;
    }
    if (i + 1 >= args.size()) {
      error = std::string(name) + " needs a value";
      return false;
    }
    v = args[++i];
    return true;
  };
  const auto flag = [&](bool& f) {
    if (eq != std::string_view::npos) {
      error = std::string(name) + " takes no value";
      return -1;
    }
    f = true;
    return 1;
  };
  std::string_view v;
  std::int64_t ns = 0;
  if (name == "--realtime" || name == "--monotonic" || name == "--boottime") {
    if (!value(v)) return -1;
    if (!parse_duration(v, ns, error)) {
      error = std::string(name) + ": " + error;
      return -1;
    }
    (name == "--realtime"    ? out.realtime_offset_ns
     : name == "--monotonic" ? out.monotonic_offset_ns
                             : out.boottime_offset_ns) = ns;
    return 1;
  }
  if (name == "--realtime-at") {
    if (!value(v)) return -1;
    if (!parse_instant(v, ns, error)) {
      error = "--realtime-at: " + error;
      return -1;
    }
    out.realtime_at_ns = ns;
    return 1;
  }
  if (name == "--rate") {
    if (!value(v)) return -1;
    std::uint64_t q = 0;
    if (!parse_rate(v, q, error)) {
      error = "--rate: " + error;
      return -1;
    }
    out.rate_q32 = q;
    return 1;
  }
  if (name == "--frozen") return flag(out.frozen);
  if (set && name == "--thaw") return flag(out.thaw);
  if (set && name == "--allow-backward") return flag(out.allow_backward);
  if (run && name == "--ns") {
    if (!value(v)) return -1;
    if (v.empty()) {
      error = "--ns: empty name";
      return -1;
    }
    out.ns = std::string(v);
    return 1;
  }
  return 0;
}

std::string time_options_help(std::string_view command) {
  std::string h =
      "  --realtime DUR        REALTIME, REALTIME_COARSE and TAI: host + DUR (+1d, -90s, 250ms)\n"
      "  --realtime-at T       REALTIME starts at T (2030-01-01T00:00:00Z, or @SECONDS)\n"
      "  --monotonic DUR       MONOTONIC, MONOTONIC_RAW and MONOTONIC_COARSE: host + DUR\n"
      "  --boottime DUR        BOOTTIME: host + DUR\n"
      "  --rate R              every clock advances R virtual seconds per second (0.000001-1000)\n"
      "  --frozen              every clock stands still\n";
  if (command == "ns set") {
    h += "  --thaw                the clocks run again (at the rate last set)\n";
    h += "  --allow-backward      allow an offset change that moves a monotonic clock back\n";
  }
  if (command == "run")
    h += "  --ns NAME             join the named namespace (vclock ns create)\n";
  return h;
}

}  // namespace vclock::timens
