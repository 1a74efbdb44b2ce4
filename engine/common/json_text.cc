#include "common/json_text.h"

namespace trigd {

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  // Runs of characters that need no escape (nearly all of them) are copied whole, not one
  // character at a time.
  size_t plain = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c != '"' && c != '\\' && c >= 0x20) continue;
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

}  // namespace trigd
