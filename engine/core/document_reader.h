// The field readers of a schedule document (core/schedule_parser.cc walks its structure over
// them): each reads one JSON value as a string, identifier, integer in a range, boolean,
// duration, time zone, time of day or enum name, and words what is wrong at its path; the paths,
// quoting and "did you mean" of those messages; and the reading of a file's JSON text with its
// repeated keys and nesting limit. Internal to core. Pure: no I/O.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_reader.h"
#include "common/time.h"
#include "core/schedule_names.h"
#include "core/schedule_parser.h"
#include "model/schedule.h"

namespace trigd::document_reader {

using OrderedJson = nlohmann::ordered_json;
using FieldList = std::span<const std::string_view>;
using schedule_names::EnumName;

// Identifiers (namespace, name, program names, concurrency groups, targets) end up in event
// keys, Kafka keys and topic names, so they are kept to a portable alphabet.
constexpr size_t kMaxIdentifierLength = 128;
// Copying, comparing and dumping a JSON value recurse (program.args is copied into Schedule); a
// document nested 10,000 deep would overflow the stack. Deep enough for any args and for
// triggers nested past the parser's depth limit to get that limit's clearer message.
constexpr size_t kMaxJsonNesting = kMaxJsonDepth;
// A file of documents: one apply may hold thousands of schedules (an API body is 1 MiB).
constexpr size_t kMaxDocumentTextBytes = 64 << 20;
// Values quoted in messages are cut so that one absurd field cannot flood a terminal.
constexpr size_t kMaxQuotedLength = 80;

// "parent.key" ("key" at the top).
std::string FieldPath(const std::string& parent, std::string_view key);
// "parent[index]".
std::string ElementPath(const std::string& parent, size_t index);
// `"value"` with JSON escaping, cut at a UTF-8 boundary when longer than kMaxQuotedLength.
std::string Quote(std::string_view text);
// "a, b or c" (`last_word` "or").
std::string JoinAlternatives(const std::vector<std::string_view>& names, const char* last_word);
// Optimal string alignment distance: Levenshtein plus adjacent transpositions, so "nmae" is
// one edit from "name", as a person would count it.
size_t EditDistance(std::string_view a, std::string_view b);
// Why `s` is no identifier, after "invalid <what> \"s\"": "" when it is one.
std::string IdentifierProblem(std::string_view s, bool lowercase_only);
// True when `text` is one or more <digits><letters> parts. ParseDuration names a bad unit
// well ("1w": unknown unit "w") but not a missing one ("10", "1.5m", "15 minutes").
bool HasDurationShape(std::string_view text);

// A file's JSON text read in document order. nlohmann keeps the last of repeated keys without a
// word; a document with "enabled" twice is ambiguous, so each repeat is an error at its path,
// with the index of its document in a top-level array (else 0). `error`: what stopped the
// reading (a syntax error, a NUL byte, nesting deeper than kMaxJsonNesting, a number beyond a
// double), at the path where it stopped; `root` is then empty.
struct JsonText {
  OrderedJson root;
  std::vector<std::pair<size_t, ScheduleError>> duplicates;
  std::optional<ScheduleError> error;
};
JsonText ReadJsonText(std::string_view text);

// Reads the fields of one document of type Json: nlohmann::json (keys sorted: known fields are
// visited in the order given) or nlohmann::ordered_json (parsed from text: document order).
// Every problem is appended to `errors`.
template <class Json>
class FieldReader {
 public:
  explicit FieldReader(std::vector<ScheduleError>& errors) : errors_(errors) {}

 protected:
  using Field = std::pair<std::string_view, const Json*>;

  void Error(std::string path, std::string reason) {
    errors_.push_back(ScheduleError{std::move(path), std::move(reason)});
  }

  // U+0000 anywhere (a name, a program argument, a member name): valid JSON, but PostgreSQL's
  // jsonb cannot store it, and applying the document would fail with the server's error.
  void RefuseNul(const Json& value, const std::string& path) {
    constexpr const char* kWhy = "contains \\u0000 (NUL), which trigd cannot store";
    if (value.is_string()) {
      if (value.template get_ref<const std::string&>().find('\0') != std::string::npos) Error(path, kWhy);
    } else if (value.is_object()) {
      for (auto it = value.begin(); it != value.end(); ++it) {
        std::string key = it.key();
        if (key.find('\0') != std::string::npos) {
          for (size_t at; (at = key.find('\0')) != std::string::npos;) key.replace(at, 1, "\\u0000");
          Error(path.empty() ? key : path + "." + key, kWhy);
        }
        RefuseNul(it.value(), path.empty() ? key : path + "." + key);
      }
    } else if (value.is_array()) {
      for (size_t i = 0; i < value.size(); ++i) RefuseNul(value[i], path + "[" + std::to_string(i) + "]");
    }
  }

  static std::vector<Field> Fields(const Json& object, FieldList known) {
    std::vector<Field> fields;
    if constexpr (std::is_same_v<Json, OrderedJson>) {
      for (auto it = object.begin(); it != object.end(); ++it) {
        fields.emplace_back(it.key(), &it.value());
      }
    } else {
      // nlohmann::json has lost the document's order; SPEC order reads better than alphabetical.
      for (std::string_view name : known) {
        auto it = object.find(std::string(name));
        if (it != object.end()) fields.emplace_back(it.key(), &it.value());
      }
      for (auto it = object.begin(); it != object.end(); ++it) {
        if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
          fields.emplace_back(it.key(), &it.value());
        }
      }
    }
    return fields;
  }

  bool ExpectObject(const Json& value, const std::string& path) {
    if (value.is_object()) return true;
    Error(path, std::string("expected an object, got ") + value.type_name());
    return false;
  }

  void Required(const Json& object, const std::string& path, std::string_view key) {
    if (!object.contains(std::string(key))) Error(FieldPath(path, key), "required");
  }

  void UnknownField(std::string_view key, const std::string& path, FieldList known) {
    std::string_view best;
    size_t best_distance = 3;
    for (std::string_view name : known) {
      size_t d = EditDistance(key, name);
      // A distance as large as the key itself would "correct" any short key into any field.
      if (d < best_distance && d < key.size()) {
        best = name;
        best_distance = d;
      }
    }
    if (!best.empty()) {
      Error(path, "unknown field (did you mean \"" + std::string(best) + "\"?)");
      return;
    }
    std::string list;
    for (std::string_view name : known) list += (list.empty() ? "" : ", ") + std::string(name);
    Error(path, "unknown field (expected one of: " + list + ")");
  }

  std::optional<std::string> ReadString(const Json& value, const std::string& path) {
    if (!value.is_string()) {
      Error(path, std::string("expected a string, got ") + value.type_name());
      return std::nullopt;
    }
    return value.template get<std::string>();
  }

  std::optional<std::string> ReadIdentifier(const Json& value, const std::string& path, std::string_view what,
                                            bool lowercase_only) {
    auto s = ReadString(value, path);
    if (!s) return std::nullopt;
    if (std::string problem = IdentifierProblem(*s, lowercase_only); !problem.empty()) {
      Error(path, "invalid " + std::string(what) + " " + Quote(*s) + problem);
      return std::nullopt;
    }
    return s;
  }

  // A range with a negative minimum (priority) is stated whole; a count's is stated by the
  // end that was crossed ("must be at least 1", "must be at most 2147483647").
  std::optional<int64_t> ReadInteger(const Json& value, const std::string& path, IntegerRange range) {
    const int64_t min = range.min, max = range.max;
    auto out_of_range = [&](const std::string& got, bool too_large) {
      if (min < 0) {
        Error(path, "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + got);
      } else if (too_large) {
        Error(path, "must be at most " + std::to_string(max) + ", got " + got);
      } else {
        Error(path, "must be at least " + std::to_string(min) + ", got " + got);
      }
      return std::nullopt;
    };
    int64_t n;
    if (value.is_number_unsigned()) {
      uint64_t u = value.template get<uint64_t>();
      if (u > static_cast<uint64_t>(max)) return out_of_range(value.dump(), true);
      n = static_cast<int64_t>(u);
    } else if (value.is_number_integer()) {
      n = value.template get<int64_t>();
    } else if (value.is_number_float()) {
      // 5.0 is an integer to JSON Schema too; 1.5 is not.
      double d = value.template get<double>();
      if (!std::isfinite(d) || std::trunc(d) != d) {
        Error(path, "expected an integer, got number " + value.dump());
        return std::nullopt;
      }
      // Compared as doubles: int64's limits are not exact doubles, so stay clear of them.
      if (d > static_cast<double>(max) || d >= 9.2e18) return out_of_range(value.dump(), true);
      if (d < static_cast<double>(min) || d <= -9.2e18) return out_of_range(value.dump(), false);
      n = static_cast<int64_t>(d);
    } else {
      Error(path, std::string("expected an integer, got ") + value.type_name());
      return std::nullopt;
    }
    if (n < min || n > max) return out_of_range(std::to_string(n), n > max);
    return n;
  }

  std::optional<bool> ReadBool(const Json& value, const std::string& path) {
    if (!value.is_boolean()) {
      Error(path, std::string("expected a boolean, got ") + value.type_name());
      return std::nullopt;
    }
    return value.template get<bool>();
  }

  std::optional<Millis> ReadDuration(const Json& value, const std::string& path, bool allow_zero) {
    if (!value.is_string()) {
      Error(path, std::string("expected a duration such as \"10m\", got ") + value.type_name());
      return std::nullopt;
    }
    std::string text = value.template get<std::string>();
    if (!HasDurationShape(text)) {
      Error(path, "invalid duration " + Quote(text) +
                      ": expected numbers with units ms, s, m, h or d, e.g. \"90s\" or \"1h30m\"");
      return std::nullopt;
    }
    // ParseDuration refuses what is longer than kMaxDuration, checked, naming the maximum.
    Result<Millis> d = ParseDuration(text);
    if (!d.ok()) {
      Error(path, d.status().message());
      return std::nullopt;
    }
    if (!allow_zero && d->count() == 0) {
      Error(path, "must be longer than 0, got " + Quote(text));
      return std::nullopt;
    }
    return *d;
  }

  std::optional<std::string> ReadTimeZone(const Json& value, const std::string& path) {
    auto s = ReadString(value, path);
    if (!s) return std::nullopt;
    if (!IsKnownTimeZone(*s)) {
      Error(path, "unknown time zone " + Quote(*s));
      return std::nullopt;
    }
    return s;
  }

  std::optional<int> ReadTimeOfDay(const Json& value, const std::string& path) {
    if (!value.is_string()) {
      Error(path, std::string("expected a time of day such as \"22:00\", got ") + value.type_name());
      return std::nullopt;
    }
    Result<int> minute = ParseTimeOfDay(value.template get<std::string>());
    if (!minute.ok()) {
      Error(path, minute.status().message());
      return std::nullopt;
    }
    return *minute;
  }

  // `noun` names the field in the message: `unknown catchup "sometimes" (expected ...)`.
  template <class E, size_t N>
  std::optional<E> ReadEnum(const Json& value, const std::string& path, std::string_view noun,
                            const EnumName<E> (&table)[N]) {
    auto s = ReadString(value, path);
    if (!s) return std::nullopt;
    std::vector<std::string_view> names;
    for (const EnumName<E>& e : table) {
      if (e.name == *s) return e.value;
      names.push_back(e.name);
    }
    Error(path, "unknown " + std::string(noun) + " " + Quote(*s) + " (expected " + JoinAlternatives(names, "or") + ")");
    return std::nullopt;
  }

 private:
  std::vector<ScheduleError>& errors_;
};

}  // namespace trigd::document_reader
