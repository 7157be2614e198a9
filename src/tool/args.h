// Command-line plumbing shared by the vclock subcommands: option parsing
// (by hand, so the tool needs no dependency; long options only, as
// "--name value" or "--name=value"), usage errors (one line on stderr and
// exit status 2, API.md) and the aligned text tables they print.
#ifndef VCLOCK_SRC_TOOL_ARGS_H_
#define VCLOCK_SRC_TOOL_ARGS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace vclock::tool {

// Exit statuses of every subcommand (API.md, "Command line").
inline constexpr int exit_ok = 0;
inline constexpr int exit_check_failed = 1;
inline constexpr int exit_usage = 2;

// Prints "vclock: <command>: <message>" (or "vclock: <message>" when
// `command` is empty) as one line on stderr and returns exit_usage.
int usage_error(std::string_view command, std::string_view message);

// The options of one subcommand. Register each option with a pointer to
// where its value goes (the pointee keeps its default when the option is
// absent), then call parse(). The parser owns no values, so a subcommand
// keeps its options in one plain struct.
class option_parser {
 public:
  explicit option_parser(std::string_view command) : command_(command) {}

  // `name` is the long option, with or without its leading "--".
  void add_flag(std::string_view name, bool* out, std::string_view help);
  // An integer in [min, max].
  void add_int(std::string_view name, std::string_view metavar, std::int64_t min, std::int64_t max,
               std::int64_t* out, std::string_view help);
  // A decimal number in [min, max].
  void add_real(std::string_view name, std::string_view metavar, double min, double max,
                double* out, std::string_view help);
  // Any text (a file name, ...).
  void add_string(std::string_view name, std::string_view metavar, std::string* out,
                  std::string_view help);
  // One of `choices` (the first is the usual default).
  void add_choice(std::string_view name, std::vector<std::string> choices, std::string* out,
                  std::string_view help);

  // Parses the arguments that follow the subcommand name. Returns false on
  // bad usage; error() then says why, without the "vclock: cmd: " prefix.
  // "--help" and "-h" set help_requested() and stop parsing.
  bool parse(std::span<char* const> args);

  const std::string& error() const { return error_; }
  bool help_requested() const { return help_requested_; }
  // The option list for --help, one option per line.
  std::string options_help() const;

 private:
  enum class kind { flag, integer, real, text, choice };
  struct option {
    std::string name;
    std::string metavar;
    std::string help;
    kind type = kind::flag;
    std::variant<bool*, std::int64_t*, double*, std::string*> out;
    std::int64_t int_min = 0;
    std::int64_t int_max = 0;
    double real_min = 0;
    double real_max = 0;
    std::vector<std::string> choices;
  };

  void add(option opt, std::string_view name);
  const option* find(std::string_view name) const;
  bool set_value(const option& opt, std::string_view text);
  bool fail(std::string message);

  std::string command_;
  std::vector<option> options_;
  std::string error_;
  bool help_requested_ = false;
};

// printf into a std::string.
[[gnu::format(printf, 1, 2)]] std::string strformat(const char* format, ...);

// A text table with aligned columns: text left-aligned, numbers (cells
// added with right-alignment) right-aligned, two spaces between columns.
class text_table {
 public:
  explicit text_table(std::vector<std::string> header);
  // Starts a new row.
  text_table& row();
  text_table& left(std::string cell);
  text_table& right(std::string cell);
  std::string str() const;

 private:
  struct cell {
    std::string text;
    bool right = false;
  };
  std::vector<std::vector<cell>> rows_;
};

}  // namespace vclock::tool

#endif  // VCLOCK_SRC_TOOL_ARGS_H_
