#include "core/document_reader.h"

#include <cctype>
#include <set>

#include "common/json_text.h"

namespace trigd::document_reader {
namespace {

bool IsIdentifierChar(char c, bool lowercase_only) {
  if (c >= 'a' && c <= 'z') return true;
  if (c >= '0' && c <= '9') return true;
  if (c == '.' || c == '_' || c == '-') return true;
  return !lowercase_only && c >= 'A' && c <= 'Z';
}

bool IsIdentifier(std::string_view s, bool lowercase_only) {
  if (s.empty() || s.size() > kMaxIdentifierLength) return false;
  return std::all_of(s.begin(), s.end(), [lowercase_only](char c) { return IsIdentifierChar(c, lowercase_only); });
}

// "." and ".." read as paths (and Kafka refuses them as topic names), and a name of dots says
// nothing of what it names.
bool IsOnlyDots(std::string_view s) { return !s.empty() && s.find_first_not_of('.') == std::string_view::npos; }

std::string IdentifierRule(bool lowercase_only) {
  return "use 1 to " + std::to_string(kMaxIdentifierLength) + (lowercase_only ? " lowercase letters" : " letters") +
         ", digits, '.', '_' or '-'";
}

}  // namespace

std::string FieldPath(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string ElementPath(const std::string& parent, size_t index) { return parent + "[" + std::to_string(index) + "]"; }

std::string Quote(std::string_view text) { return QuoteForMessage(text, kMaxQuotedLength); }

std::string JoinAlternatives(const std::vector<std::string_view>& names, const char* last_word) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += (i + 1 == names.size()) ? std::string(" ") + last_word + " " : ", ";
    out += names[i];
  }
  return out;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::string IdentifierProblem(std::string_view s, bool lowercase_only) {
  if (!IsIdentifier(s, lowercase_only)) return ": " + IdentifierRule(lowercase_only);
  if (IsOnlyDots(s)) return ": must not be only dots";
  return "";
}

bool HasDurationShape(std::string_view text) {
  if (text.empty()) return false;
  size_t i = 0;
  while (i < text.size()) {
    size_t digits = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    size_t letters = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    if (letters == digits || i == letters) return false;
  }
  return true;
}

namespace {

// nlohmann keeps the last of repeated keys without a word; a document with "enabled" twice is
// ambiguous, so repeats are errors. The parser callback sees keys but not paths, so the path is
// rebuilt from a stack of the containers being read (no deeper than kMaxJsonNesting: the text
// was checked by CheckJsonLimits first).
class DuplicateKeyFinder {
 public:
  struct Found {
    size_t document;  // index in a top-level array, else 0
    ScheduleError error;
  };
  bool Handle(nlohmann::json::parse_event_t event, const OrderedJson& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start:
        EnterElement();
        stack_.push_back(Container{.is_array = false});
        break;
      case Event::array_start:
        EnterElement();
        stack_.push_back(Container{.is_array = true});
        break;
      case Event::object_end:
      case Event::array_end:
        if (!stack_.empty()) stack_.pop_back();
        break;
      case Event::key: {
        Container& top = stack_.back();
        top.key = parsed.get<std::string>();
        if (!top.keys.insert(top.key).second) {
          size_t document = stack_.front().is_array ? stack_.front().current_index : 0;
          found_.push_back(Found{document, ScheduleError{Path(), "duplicate field"}});
        }
        break;
      }
      case Event::value: EnterElement(); break;
    }
    return true;
  }

  const std::vector<Found>& found() const { return found_; }

 private:
  struct Container {
    bool is_array = false;
    size_t next_index = 0;
    size_t current_index = 0;
    std::string key;
    std::set<std::string> keys;
  };

  void EnterElement() {
    if (!stack_.empty() && stack_.back().is_array) {
      stack_.back().current_index = stack_.back().next_index++;
    }
  }

  std::string Path() const {
    std::string path;
    for (const Container& c : stack_) {
      path = c.is_array ? ElementPath(path, c.current_index) : FieldPath(path, c.key);
    }
    return path;
  }

  std::vector<Container> stack_;
  std::vector<Found> found_;

 public:
  // The path of the value being read when the parser stopped: the pending member of the
  // innermost object, or the next element of the innermost array.
  std::string PendingPath() const {
    std::string path;
    for (size_t i = 0; i < stack_.size(); ++i) {
      const Container& c = stack_[i];
      if (!c.is_array) {
        path = FieldPath(path, c.key);
      } else {
        path = ElementPath(path, i + 1 < stack_.size() ? c.current_index : c.next_index);
      }
    }
    return path;
  }
};

}  // namespace

JsonText ReadJsonText(std::string_view text) {
  JsonText out;
  // The limits first: the callback below sees every level as the parser reaches it, but the
  // size and depth are refused before anything is built, as for every JSON trigd reads.
  if (auto breach =
          CheckJsonLimits(text, JsonLimits{.max_bytes = kMaxDocumentTextBytes, .max_depth = kMaxJsonNesting})) {
    out.error = ScheduleError{"", std::move(breach->reason)};
    return out;
  }
  // nlohmann takes a NUL byte for the end of its input, so `{...}\0garbage` read as `{...}`;
  // JSON text has no place for a raw NUL.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    out.error = ScheduleError{
        "", "invalid JSON at byte " + std::to_string(nul) + ": a NUL byte (JSON text cannot contain one)"};
    return out;
  }
  DuplicateKeyFinder duplicates;
  try {
    out.root = OrderedJson::parse(text.begin(), text.end(),
                                  [&duplicates](int, nlohmann::json::parse_event_t event, OrderedJson& parsed) {
                                    return duplicates.Handle(event, parsed);
                                  });
  } catch (const nlohmann::json::parse_error& e) {
    out.error = ScheduleError{"", JsonSyntaxErrorReason(e)};
    return out;
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond a double ("min_bytes": 1e400) is valid JSON, but no field's range holds
    // it: said at its path, as out of range. nlohmann's message ends "parsing '<token>'".
    std::string what = e.what();
    size_t open = what.find('\''), close = what.rfind('\'');
    std::string token = open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : what;
    out.error = ScheduleError{duplicates.PendingPath(), "number " + token + " is out of range (beyond a double)"};
    return out;
  }
  for (const DuplicateKeyFinder::Found& found : duplicates.found())
    out.duplicates.emplace_back(found.document, found.error);
  return out;
}

}  // namespace trigd::document_reader
