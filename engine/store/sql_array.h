// PostgreSQL array literals ("{1,2,NULL}", "{\"a\",\"b\"}") built in one pass. The hot
// transactions send a batch of rows as one array parameter per column and expand them with
// `unnest($1::bigint[], $2::text[], ...)`: the server parses each value once with its type's
// input function. (A JSON document expanded by jsonb_to_recordset is parsed whole, then its
// fields converted again: twice the server time for the same rows, and every row built as a
// JSON object in trigd first.) Only engine/store uses it. Not thread-safe; one per column.
#pragma once

#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/byte_scan.h"

namespace trigd::pg_internal {

// The first byte of s at or after `from` that an array element's quoting escapes (" and \).
inline size_t NextArrayEscape(std::string_view s, size_t from) {
  return byte_scan::Find(
      s, from, [](uint64_t w) { return byte_scan::HasByte(w, '"') | byte_scan::HasByte(w, '\\'); },
      [](unsigned char c) { return c == '"' || c == '\\'; });
}

class SqlArray {
 public:
  SqlArray() : text_("{") {}

  // Any text, quoted: array_in takes everything between double quotes literally except the
  // two characters escaped here. For jsonb[] the element is the JSON text.
  void AddText(std::string_view s) {
    Separate();
    text_ += '"';
    // Copied in runs between the characters that need a backslash.
    size_t run = 0;
    for (size_t i = NextArrayEscape(s, 0); i < s.size(); i = NextArrayEscape(s, i + 1)) {
      text_.append(s.data() + run, i - run);
      text_ += '\\';
      run = i;
    }
    text_.append(s.data() + run, s.size() - run);
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

// The character after the backslash for each byte COPY's text format escapes, 0 for the rest.
inline constexpr std::array<char, 256> kCopyEscapes = [] {
  std::array<char, 256> t{};
  t['\\'] = '\\';
  t['\t'] = 't';
  t['\n'] = 'n';
  t['\r'] = 'r';
  return t;
}();

// The first byte of s at or after `from` that COPY's text format escapes. The escaped bytes are
// all below 0x20 but the backslash: a word with neither is skipped whole.
inline size_t NextCopyEscape(std::string_view s, size_t from) {
  return byte_scan::Find(
      s, from, [](uint64_t w) { return byte_scan::HasByteBelow(w, 0x20) | byte_scan::HasByte(w, '\\'); },
      [](unsigned char c) { return kCopyEscapes[c] != 0; });
}

// Rows in COPY's text format ("1\tabc\t\\N\n"), built in one buffer to be sent in one piece.
// Not thread-safe.
class CopyRows {
 public:
  // Any text, escaped as COPY's text format requires (backslash, tab, newline, carriage return;
  // bytes of multibyte UTF-8 characters are never ASCII, so they pass as they are).
  // Runs without an escape (nearly all text) are found a word at a time and copied whole.
  void AddText(std::string_view s) {
    Separate();
    size_t run = 0;
    for (size_t i = NextCopyEscape(s, 0); i < s.size(); i = NextCopyEscape(s, i + 1)) {
      text_.append(s.data() + run, i - run);
      text_ += '\\';
      text_ += kCopyEscapes[static_cast<unsigned char>(s[i])];
      run = i + 1;
    }
    text_.append(s.data() + run, s.size() - run);
  }
  void AddInt(int64_t n) {
    Separate();
    char buf[24];
    auto end = std::to_chars(buf, buf + sizeof buf, n).ptr;
    text_.append(buf, end);
  }
  void AddNull() {
    Separate();
    text_ += "\\N";
  }
  void EndRow() {
    text_ += '\n';
    first_ = true;
    ++rows_;
  }

  size_t rows() const { return rows_; }
  const std::string& text() const { return text_; }
  // Drops the rows' text once sent (rows() still counts them).
  void ClearText() {
    text_.clear();
    first_ = true;
  }

 private:
  void Separate() {
    if (!first_) text_ += '\t';
    first_ = false;
  }
  std::string text_;
  bool first_ = true;
  size_t rows_ = 0;
};

// Rows of one table, built field by field for one of two ways in, chosen before the first row:
// COPY's text (copy()), or one array literal per column (TakeColumn) for an INSERT ... SELECT
// FROM unnest(...) that rides on a statement the transaction sends anyway. A COPY costs two
// round trips of its own (about 0.1 ms each on a busy 2-core machine), most of what a few rows
// cost; for many rows COPY's whole-page WAL records win. The same text either way: every value
// goes through its column type's input function. Not thread-safe.
class TableRows {
 public:
  TableRows(size_t columns, bool as_arrays) : columns_(as_arrays ? columns : 0) {}

  bool as_arrays() const { return !columns_.empty(); }
  void AddText(std::string_view s) { as_arrays() ? Next().AddText(s) : copy_.AddText(s); }
  void AddInt(int64_t n) { as_arrays() ? Next().AddInt(n) : copy_.AddInt(n); }
  void AddNull() { as_arrays() ? Next().AddNull() : copy_.AddNull(); }
  void EndRow() {
    if (as_arrays()) {
      column_ = 0;
      ++rows_;
    } else {
      copy_.EndRow();
    }
  }

  size_t rows() const { return as_arrays() ? rows_ : copy_.rows(); }
  // The rows for COPY (none when built as arrays).
  const CopyRows& copy() const { return copy_; }
  // Column i's array literal, once; "{}" when built for COPY (an INSERT of no rows).
  std::string TakeColumn(size_t i) { return as_arrays() ? columns_[i].Take() : "{}"; }

 private:
  SqlArray& Next() { return columns_[column_++]; }
  std::vector<SqlArray> columns_;
  size_t column_ = 0, rows_ = 0;
  CopyRows copy_;
};

}  // namespace trigd::pg_internal
