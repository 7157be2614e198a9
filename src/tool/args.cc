// Option parsing for the vclock CLI; see args.h.
#include "tool/args.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace vclock::tool {

int usage_error(std::string_view command, std::string_view message) {
  std::string line = "vclock: ";
  if (!command.empty()) {
    line.append(command).append(": ");
  }
  line.append(message).append("\n");
  std::fputs(line.c_str(), stderr);
  return exit_usage;
}

void option_parser::add(option opt, std::string_view name) {
  opt.name = name.starts_with("--") ? std::string(name) : "--" + std::string(name);
  options_.push_back(std::move(opt));
}

void option_parser::add_flag(std::string_view name, bool* out, std::string_view help) {
  option opt;
  opt.help = help;
  opt.type = kind::flag;
  opt.out = out;
  add(std::move(opt), name);
}

void option_parser::add_int(std::string_view name, std::string_view metavar, std::int64_t min,
                            std::int64_t max, std::int64_t* out, std::string_view help) {
  option opt;
  opt.metavar = metavar;
  opt.help = help;
  opt.type = kind::integer;
  opt.out = out;
  opt.int_min = min;
  opt.int_max = max;
  add(std::move(opt), name);
}

void option_parser::add_real(std::string_view name, std::string_view metavar, double min,
                             double max, double* out, std::string_view help) {
  option opt;
  opt.metavar = metavar;
  opt.help = help;
  opt.type = kind::real;
  opt.out = out;
  opt.real_min = min;
  opt.real_max = max;
  add(std::move(opt), name);
}

void option_parser::add_string(std::string_view name, std::string_view metavar, std::string* out,
                               std::string_view help) {
  option opt;
  opt.metavar = metavar;
  opt.help = help;
  opt.type = kind::text;
  opt.out = out;
  add(std::move(opt), name);
}

void option_parser::add_choice(std::string_view name, std::vector<std::string> choices,
                               std::string* out, std::string_view help) {
  option opt;
  opt.help = help;
  opt.type = kind::choice;
  opt.out = out;
  for (const std::string& c : choices) {
    opt.metavar += opt.metavar.empty() ? "" : "|";
    opt.metavar += c;
  }
  opt.choices = std::move(choices);
  add(std::move(opt), name);
}

const option_parser::option* option_parser::find(std::string_view name) const {
  for (const option& opt : options_) {
    if (opt.name == name) {
      return &opt;
    }
  }
  return nullptr;
}

bool option_parser::fail(std::string message) {
  error_ = std::move(message);
  return false;
}

namespace {

// std::from_chars for integers: the whole text must be the number.
bool parse_int(std::string_view text, std::int64_t& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && !text.empty();
}

// strtod rather than from_chars<double>, which older libstdc++ lacks.
bool parse_real(std::string_view text, double& value) {
  if (text.empty() || text.size() > 64) {
    return false;
  }
  const std::string copy(text);
  char* end = nullptr;
  value = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size() && std::isfinite(value);
}

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

}  // namespace

bool option_parser::set_value(const option& opt, std::string_view text) {
  const std::string bad = "invalid value " + quoted(text) + " for " + quoted(opt.name);
  switch (opt.type) {
    case kind::flag:
      return fail("option " + quoted(opt.name) + " takes no value");
    case kind::integer: {
      std::int64_t v = 0;
      if (!parse_int(text, v) || v < opt.int_min || v > opt.int_max) {
        return fail(bad + " (expected an integer from " + std::to_string(opt.int_min) + " to " +
                    std::to_string(opt.int_max) + ")");
      }
      *std::get<std::int64_t*>(opt.out) = v;
      return true;
    }
    case kind::real: {
      double v = 0;
      if (!parse_real(text, v) || v < opt.real_min || v > opt.real_max) {
        char range[96];
        std::snprintf(range, sizeof range, " (expected a number from %g to %g)", opt.real_min,
                      opt.real_max);
        return fail(bad + range);
      }
      *std::get<double*>(opt.out) = v;
      return true;
    }
    case kind::text:
      *std::get<std::string*>(opt.out) = text;
      return true;
    case kind::choice:
      for (const std::string& c : opt.choices) {
        if (c == text) {
          *std::get<std::string*>(opt.out) = c;
          return true;
        }
      }
      return fail(bad + " (expected one of " + opt.metavar + ")");
  }
  return fail(bad);
}

bool option_parser::parse(std::span<char* const> args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      help_requested_ = true;
      return true;
    }
    if (!arg.starts_with("--")) {
      return fail("unexpected argument " + quoted(arg));
    }
    const std::size_t eq = arg.find('=');
    const std::string_view name = arg.substr(0, eq);
    const option* opt = find(name);
    if (opt == nullptr) {
      return fail("unknown option " + quoted(name));
    }
    if (opt->type == kind::flag) {
      if (eq != std::string_view::npos) {
        return fail("option " + quoted(name) + " takes no value");
      }
      *std::get<bool*>(opt->out) = true;
      continue;
    }
    std::string_view value;
    if (eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return fail("option " + quoted(name) + " needs a value (" + opt->metavar + ")");
    }
    if (!set_value(*opt, value)) {
      return false;
    }
  }
  return true;
}

std::string option_parser::options_help() const {
  std::string out;
  for (const option& opt : options_) {
    std::string left = "  " + opt.name;
    if (!opt.metavar.empty()) {
      left += " " + opt.metavar;
    }
    constexpr std::size_t help_column = 24;
    if (left.size() + 2 > help_column) {
      left += "\n";  // a long choice list: the help goes on its own line
      left.resize(left.size() + help_column, ' ');
    } else {
      left.resize(help_column, ' ');
    }
    out += left + opt.help + "\n";
  }
  out += "  --help                show this help\n";
  return out;
}

std::string strformat(const char* format, ...) {
  std::va_list args;
  va_start(args, format);
  std::va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string out(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0) {
    std::vsnprintf(out.data(), out.size() + 1, format, args);
  }
  va_end(args);
  return out;
}

text_table::text_table(std::vector<std::string> header) {
  row();
  for (std::string& h : header) {
    left(std::move(h));
  }
}

text_table& text_table::row() {
  rows_.emplace_back();
  return *this;
}

text_table& text_table::left(std::string text) {
  rows_.back().push_back({std::move(text), false});
  return *this;
}

text_table& text_table::right(std::string text) {
  rows_.back().push_back({std::move(text), true});
  return *this;
}

std::string text_table::str() const {
  std::vector<std::size_t> width;
  for (const auto& r : rows_) {
    width.resize(std::max(width.size(), r.size()), 0);
    for (std::size_t i = 0; i < r.size(); ++i) {
      width[i] = std::max(width[i], r[i].text.size());
    }
  }
  // A header cell takes the alignment of the first row under it.
  const auto right = [&](std::size_t row, std::size_t col) {
    const std::size_t from = row == 0 && rows_.size() > 1 ? 1 : row;
    return col < rows_[from].size() ? rows_[from][col].right : rows_[row][col].right;
  };
  std::string out;
  for (std::size_t n = 0; n < rows_.size(); ++n) {
    const auto& r = rows_[n];
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      const std::string pad(width[i] - r[i].text.size(), ' ');
      line += i == 0 ? "" : "  ";
      line += right(n, i) ? pad + r[i].text : r[i].text + pad;
    }
    while (!line.empty() && line.back() == ' ') {
      line.pop_back();
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace vclock::tool
