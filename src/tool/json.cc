// The CLI's JSON writer; see json.h.
#include "tool/json.h"

#include <charconv>
#include <cmath>

namespace vclock::tool {

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          out += "\\u00";
          out += hex[u >> 4];
          out += hex[u & 0xf];
        } else {
          out += c;  // UTF-8 passes through unchanged
        }
    }
  }
  out += '"';
}

void json_writer::newline() {
  out_ += '\n';
  out_.append(2 * empty_.size(), ' ');
}

// Writes the comma and indentation that go before a value or a key.
void json_writer::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!empty_.empty()) {
    if (!empty_.back()) {
      out_ += ',';
    }
    empty_.back() = false;
    newline();
  }
}

void json_writer::open(char bracket) {
  before_value();
  out_ += bracket;
  empty_.push_back(true);
}

void json_writer::close(char bracket) {
  const bool was_empty = empty_.back();
  empty_.pop_back();
  if (!was_empty) {
    newline();
  }
  out_ += bracket;
  if (empty_.empty()) {
    out_ += '\n';
  }
}

json_writer& json_writer::begin_object() {
  open('{');
  return *this;
}

json_writer& json_writer::end_object() {
  close('}');
  return *this;
}

json_writer& json_writer::begin_array() {
  open('[');
  return *this;
}

json_writer& json_writer::end_array() {
  close(']');
  return *this;
}

json_writer& json_writer::key(std::string_view name) {
  before_value();
  append_json_string(out_, name);
  out_ += ": ";
  after_key_ = true;
  return *this;
}

json_writer& json_writer::value(std::string_view text) {
  before_value();
  append_json_string(out_, text);
  return *this;
}

json_writer& json_writer::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

json_writer& json_writer::value(double d) {
  if (!std::isfinite(d)) {
    return null();
  }
  before_value();
  // Shortest text that reads back as the same double; never locale-dependent.
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  out_.append(buf, ec == std::errc() ? end : buf);
  return *this;
}

json_writer& json_writer::null() {
  before_value();
  out_ += "null";
  return *this;
}

json_writer& json_writer::signed_value(std::int64_t v) {
  before_value();
  out_ += std::to_string(v);
  return *this;
}

json_writer& json_writer::unsigned_value(std::uint64_t v) {
  before_value();
  out_ += std::to_string(v);
  return *this;
}

}  // namespace vclock::tool
