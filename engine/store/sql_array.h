// PostgreSQL array literals ("{1,2,NULL}", "{\"a\",\"b\"}") built in one pass. The hot
// transactions send a batch of rows as one array parameter per column and expand them with
// `unnest($1::bigint[], $2::text[], ...)`: the server parses each value once with its type's
// input function. (A JSON document expanded by jsonb_to_recordset was parsed whole, then its
// fields converted again: twice the server time for the same rows, and every row built as a
// JSON object in trigd first.) Only engine/store uses it. Not thread-safe; one per column.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trigd::pg_internal {

class SqlArray {
 public:
  SqlArray() : text_("{") {}

  // Any text, quoted: array_in takes everything between double quotes literally except the
  // two characters escaped here. For jsonb[] the element is the JSON text.
  void AddText(std::string_view s) {
    Separate();
    text_ += '"';
    // Copied in runs between the characters that need a backslash.
    while (!s.empty()) {
      size_t special = s.find_first_of("\"\\");
      text_.append(s.substr(0, special));
      if (special == std::string_view::npos) break;
      text_ += '\\';
      text_ += s[special];
      s.remove_prefix(special + 1);
    }
    text_ += '"';
  }
  void AddTextOrNull(const std::optional<std::string>& s) { s ? AddText(*s) : AddNull(); }
  void AddInt(int64_t n) {
    Separate();
    char buf[24];
    auto end = std::to_chars(buf, buf + sizeof buf, n).ptr;
    text_.append(buf, end);
  }
  void AddIntOrNull(const std::optional<int64_t>& n) { n ? AddInt(*n) : AddNull(); }
  void AddBool(bool b) {
    Separate();
    text_ += b ? 't' : 'f';
  }
  // Unquoted NULL is SQL NULL (a quoted "NULL" is the text NULL).
  void AddNull() {
    Separate();
    text_ += "NULL";
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The literal; the array is complete (nothing may be added after).
  std::string Take() {
    text_ += '}';
    return std::move(text_);
  }

 private:
  void Separate() {
    if (size_++ > 0) text_ += ',';
  }
  std::string text_;
  size_t size_ = 0;
};

}  // namespace trigd::pg_internal
