#include "core/glob.h"

namespace trigd {

bool GlobMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0;
  // Where the last `*` was, and the text position it currently stands for the end of.
  size_t star = std::string_view::npos, star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_text = t;
    } else if (star != std::string_view::npos) {
      // The last `*` takes one more character; an earlier `*` never needs to (any match it
      // allows, the last one allows too).
      p = star + 1;
      t = ++star_text;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace trigd
