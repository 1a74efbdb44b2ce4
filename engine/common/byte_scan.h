// Finding the next byte that needs escaping, a word (eight bytes) at a time. Most text that
// trigd escapes (JSON for COPY and array literals, strings for JSON) has nothing to escape in
// it, and testing a word costs a handful of arithmetic operations where testing its bytes one
// by one costs about ten instructions each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace trigd::byte_scan {

inline constexpr uint64_t kOnes = 0x0101010101010101ULL;
inline constexpr uint64_t kHighBits = 0x8080808080808080ULL;

inline uint64_t Load(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

// Nonzero if and only if a byte of `w` is `c` ("Bit Twiddling Hacks"' haszero on w ^ c; a false
// mark can follow a true one, never stand alone).
inline uint64_t HasByte(uint64_t w, unsigned char c) {
  const uint64_t x = w ^ (kOnes * c);
  return (x - kOnes) & ~x & kHighBits;
}

// Nonzero if and only if a byte of `w` is below `n` (n <= 128; "Bit Twiddling Hacks"' hasless).
inline uint64_t HasByteBelow(uint64_t w, unsigned char n) { return (w - kOnes * n) & ~w & kHighBits; }

// The index of the first byte of s at or after `from` for which `is` holds, or s.size();
// `maybe` tells whether a word can hold such a byte (it may say yes wrongly, never no).
template <typename Maybe, typename Is>
size_t Find(std::string_view s, size_t from, Maybe maybe, Is is) {
  size_t i = from;
  while (i + 8 <= s.size()) {
    if (!maybe(Load(s.data() + i))) {
      i += 8;
      continue;
    }
    for (const size_t end = i + 8; i < end; ++i) {
      if (is(static_cast<unsigned char>(s[i]))) return i;
    }
  }
  for (; i < s.size(); ++i) {
    if (is(static_cast<unsigned char>(s[i]))) return i;
  }
  return s.size();
}

}  // namespace trigd::byte_scan
