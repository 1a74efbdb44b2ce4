#include "common/json_text.h"

#include <nlohmann/json.hpp>

#include "common/byte_scan.h"

namespace trigd {

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  // Runs of characters that need no escape (nearly all of them) are found a word at a time and
  // copied whole.
  auto next = [&s](size_t from) {
    return byte_scan::Find(
        s, from,
        [](uint64_t w) {
          return byte_scan::HasByteBelow(w, 0x20) | byte_scan::HasByte(w, '"') | byte_scan::HasByte(w, '\\');
        },
        [](unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; });
  };
  size_t plain = 0;
  for (size_t i = next(0); i < s.size(); i = next(i + 1)) {
    auto c = static_cast<unsigned char>(s[i]);
    out.append(s.substr(plain, i - plain));
    plain = i + 1;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += s[i];
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  out.append(s.substr(plain));
  out += '"';
}

std::string QuoteForMessage(std::string_view text, size_t max_bytes) {
  bool cut = false;
  if (text.size() > max_bytes) {
    size_t end = max_bytes;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    text = text.substr(0, end);
    cut = true;
  }
  std::string quoted = nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (cut) quoted.insert(quoted.size() - 1, "...");
  return quoted;
}

}  // namespace trigd
