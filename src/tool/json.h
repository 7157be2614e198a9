// A small JSON writer for the CLI's --json output: objects, arrays,
// strings, integers, doubles, booleans and null, pretty-printed with
// two-space indentation. It checks nothing about nesting beyond what
// keeps commas right; callers write well-formed documents.
#ifndef VCLOCK_SRC_TOOL_JSON_H_
#define VCLOCK_SRC_TOOL_JSON_H_

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vclock::tool {

// Integers other than bool, which is written as true/false.
template <class T>
concept json_integer = std::integral<T> && !std::same_as<T, bool>;

class json_writer {
 public:
  json_writer& begin_object();
  json_writer& end_object();
  json_writer& begin_array();
  json_writer& end_array();
  // The key of the next member; inside an object only.
  json_writer& key(std::string_view name);

  json_writer& value(std::string_view text);
  json_writer& value(const char* text) { return value(std::string_view(text)); }
  json_writer& value(const std::string& text) { return value(std::string_view(text)); }
  json_writer& value(bool b);
  // Non-finite doubles have no JSON form: they are written as null.
  json_writer& value(double d);
  json_writer& null();
  template <json_integer T>
  json_writer& value(T v) {
    if constexpr (std::signed_integral<T>) {
      return signed_value(v);
    } else {
      return unsigned_value(v);
    }
  }

  // key(name).value(v)
  template <class T>
  json_writer& field(std::string_view name, const T& v) {
    return key(name).value(v);
  }

  // The document so far, with a final newline once everything is closed.
  const std::string& str() const { return out_; }

 private:
  json_writer& signed_value(std::int64_t v);
  json_writer& unsigned_value(std::uint64_t v);
  void before_value();
  void open(char bracket);
  void close(char bracket);
  void newline();

  std::string out_;
  std::vector<bool> empty_;  // per open container: nothing in it yet
  bool after_key_ = false;
};

// Appends `text` to `out` as a quoted JSON string.
void append_json_string(std::string& out, std::string_view text);

}  // namespace vclock::tool

#endif  // VCLOCK_SRC_TOOL_JSON_H_
