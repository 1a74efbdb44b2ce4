#include "common/json_reader.h"

#include <vector>

#include "common/json_text.h"

namespace trigd {
namespace {

// Where the scan is: one frame per open array or object, never more than max_depth of them.
struct Frame {
  bool is_array = false;
  bool expecting_key = false;
  size_t index = 0;      // arrays: the element being read
  std::string_view key;  // objects: the member being read, as written (escapes not decoded)
};

// A member name as the parser would read it (escapes decoded); as written if it is no string.
std::string DecodeKey(std::string_view raw) {
  std::string quoted;
  quoted.reserve(raw.size() + 2);
  quoted += '"';
  quoted += raw;
  quoted += '"';
  nlohmann::json key = nlohmann::json::parse(quoted, nullptr, /*allow_exceptions=*/false);
  return key.is_string() ? key.get<std::string>() : std::string(raw);
}

// "a.b[0]": the path of the value being read, as the schedule parser words its paths.
std::string PathOf(const std::vector<Frame>& stack) {
  std::string path;
  for (const Frame& frame : stack) {
    if (frame.is_array) {
      path += "[" + std::to_string(frame.index) + "]";
    } else {
      if (!path.empty()) path += '.';
      path += DecodeKey(frame.key);
    }
  }
  return path;
}

// The path of a text nested 128 deep is long: quoted, it is cut after 80 bytes.
std::string QuotePath(std::string_view text) { return QuoteForMessage(text, 80); }

}  // namespace

std::optional<JsonLimitBreach> CheckJsonLimits(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return JsonLimitBreach{"invalid JSON: " + std::to_string(text.size()) + " bytes, more than the limit of " +
                               std::to_string(limits.max_bytes),
                           ""};
  }
  std::vector<Frame> stack;
  stack.reserve(std::min<size_t>(limits.max_depth, 64));
  bool in_string = false, escaped = false, string_is_key = false;
  size_t string_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
        if (string_is_key) stack.back().key = text.substr(string_start, i - string_start);
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        string_start = i + 1;
        string_is_key = !stack.empty() && stack.back().expecting_key;
        if (string_is_key) stack.back().expecting_key = false;
        break;
      case '[':
      case '{':
        if (stack.size() >= limits.max_depth) {
          const std::string path = PathOf(stack);
          return JsonLimitBreach{
              "invalid JSON: nested deeper than " + std::to_string(limits.max_depth) + " levels at " + QuotePath(path),
              path};
        }
        stack.push_back(Frame{.is_array = c == '[', .expecting_key = c == '{'});
        break;
      case ']':
      case '}':
        if (!stack.empty()) stack.pop_back();
        break;
      case ',':
        if (stack.empty()) break;
        if (stack.back().is_array) {
          ++stack.back().index;
        } else {
          stack.back().expecting_key = true;
        }
        break;
      default: break;
    }
  }
  return std::nullopt;
}

std::string JsonSyntaxErrorReason(const nlohmann::json::parse_error& e) {
  std::string what = e.what();
  const std::string marker = "parse error at ";
  size_t at = what.find(marker);
  if (at != std::string::npos) {
    size_t colon = what.find(": ", at);
    if (colon != std::string::npos) {
      std::string position = what.substr(at + marker.size(), colon - at - marker.size());
      return "invalid JSON at " + position + " (byte " + std::to_string(e.byte) + "): " + what.substr(colon + 2);
    }
  }
  return "invalid JSON at byte " + std::to_string(e.byte) + ": " + what;
}

Result<nlohmann::json> ReadJson(std::string_view text, const JsonLimits& limits) {
  if (auto breach = CheckJsonLimits(text, limits)) return Invalid(breach->reason);
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return Invalid("invalid JSON at byte " + std::to_string(nul) + ": a NUL byte (JSON text cannot contain one)");
  }
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    return Invalid(JsonSyntaxErrorReason(e));
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond a double (1e400): valid JSON that no value of trigd's holds.
    std::string what = e.what();
    size_t open = what.find('\''), close = what.rfind('\'');
    std::string token = open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : what;
    return Invalid("invalid JSON: number " + token + " is out of range (beyond a double)");
  }
}

}  // namespace trigd
