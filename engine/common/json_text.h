// JSON text written directly, for the documents trigd writes on every event and launch (job
// history entries, constraint checks): building an nlohmann::json object for each (a tree of
// allocations) and dumping it cost a fifth of trigd's CPU in a storm. Members stay in the
// order written (PostgreSQL's jsonb orders the stored keys its own way).
#pragma once

#include <string>
#include <string_view>

namespace trigd {

// Appends `s` as a JSON string literal. trigd's strings come from parsed JSON documents
// (events, schedules) or its own text, so they are valid UTF-8, which is copied as is.
void AppendJsonString(std::string& out, std::string_view s);

// `"text"` as a JSON string for an error message, with JSON escaping (bytes that are not UTF-8
// replaced), cut at a UTF-8 boundary after `max_bytes` ("..." marks the cut).
std::string QuoteForMessage(std::string_view text, size_t max_bytes);

// A JSON object's text, member by member: JsonObjectText().String("a", "x").Raw("b", "[1]").Take()
// is {"a":"x","b":[1]}. Keys are trigd's own (written as given, never escaped).
class JsonObjectText {
 public:
  // Room for a typical history entry or check at once, instead of a series of reallocations as
  // the text grows (these are written for every event a job counts).
  JsonObjectText() { out_.reserve(128); }
  JsonObjectText& String(std::string_view key, std::string_view value) {
    Key(key);
    AppendJsonString(out_, value);
    return *this;
  }
  // `json`: a value already written as JSON text.
  JsonObjectText& Raw(std::string_view key, std::string_view json) {
    Key(key);
    out_ += json;
    return *this;
  }
  std::string Take() {
    out_ += '}';
    return std::move(out_);
  }

 private:
  void Key(std::string_view key) {
    if (out_.size() > 1) out_ += ',';
    out_ += '"';
    out_ += key;
    out_ += "\":";
  }
  std::string out_ = "{";
};

// A JSON array's text from elements already written as JSON text.
class JsonArrayText {
 public:
  JsonArrayText& Raw(std::string_view json) {
    if (out_.size() > 1) out_ += ',';
    out_ += json;
    return *this;
  }
  JsonArrayText& String(std::string_view value) {
    if (out_.size() > 1) out_ += ',';
    AppendJsonString(out_, value);
    return *this;
  }
  std::string Take() {
    out_ += ']';
    return std::move(out_);
  }

 private:
  std::string out_ = "[";
};

}  // namespace trigd
