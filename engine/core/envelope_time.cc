#include "core/envelope_time.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>

namespace trigd {
namespace {

// RFC 3339 years have four digits, but an offset can carry 0000-01-01 or 9999-12-31 across a
// year boundary; trigd could not write such an instant back as RFC 3339.
constexpr TimePoint kMinTime{std::chrono::sys_days{std::chrono::year{0} / 1 / 1}};
constexpr TimePoint kEndTime{std::chrono::sys_days{std::chrono::year{10000} / 1 / 1}};

bool InRange(TimePoint t) { return t >= kMinTime && t < kEndTime; }

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Checks the exact RFC 3339 shape (YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)) and cuts
// the fraction to milliseconds, trigd's precision. Producers commonly send microseconds
// (Python) or nanoseconds (Go), which ParseTime refuses; and only well-formed text reaches
// date::parse, which misbehaves on some malformed offsets.
std::optional<std::string> NormalizeRfc3339(std::string_view text) {
  auto digits = [&](size_t at, size_t n) {
    if (at + n > text.size()) return false;
    for (size_t i = at; i < at + n; ++i) {
      if (!IsDigit(text[i])) return false;
    }
    return true;
  };
  auto is = [&](size_t at, std::string_view any_of) {
    return at < text.size() && any_of.find(text[at]) != std::string_view::npos;
  };
  if (!(digits(0, 4) && is(4, "-") && digits(5, 2) && is(7, "-") && digits(8, 2) && is(10, "Tt") && digits(11, 2) &&
        is(13, ":") && digits(14, 2) && is(16, ":") && digits(17, 2))) {
    return std::nullopt;
  }
  std::string normalized(text.substr(0, 19));
  size_t at = 19;
  if (is(at, ".")) {
    size_t end = at + 1;
    while (digits(end, 1)) ++end;
    if (end == at + 1) return std::nullopt;
    normalized += text.substr(at, std::min<size_t>(end - at, 4));  // '.' and 3 digits
    at = end;
  }
  if (is(at, "Zz") && at + 1 == text.size()) return normalized + "Z";
  if (is(at, "+-") && digits(at + 1, 2) && is(at + 3, ":") && digits(at + 4, 2) && at + 6 == text.size()) {
    return normalized + std::string(text.substr(at));
  }
  return std::nullopt;
}

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard Hinnant's
// days_from_civil, the algorithm date.h uses).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

unsigned DaysInMonth(int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
  return m == 2 && leap ? 29 : kDays[m - 1];
}

}  // namespace

std::optional<TimePoint> ParseEnvelopeTimeFast(std::string_view text) {
  const char* s = text.data();
  const size_t n = text.size();
  if (n < 20) return std::nullopt;
  auto digit = [&](size_t i) { return static_cast<unsigned>(static_cast<unsigned char>(s[i]) - '0'); };
  // The digits of "YYYY-MM-DDTHH:MM:SS" up to the minutes, eight bytes at a time: XOR with '0'
  // maps exactly '0'-'9' to 0-9, and adding 0x76 then sets the high bit of any byte above 9
  // (a byte that carries into the next can only make that one look bad: a false "not sure").
  bool digits = true;
  if constexpr (std::endian::native == std::endian::little) {
    constexpr uint64_t kZeros = 0x3030303030303030ULL, kHighs = 0x8080808080808080ULL;
    constexpr uint64_t kAboveNine = 0x7676767676767676ULL;
    constexpr uint64_t kDigits0 = 0x00FFFF00FFFFFFFFULL;  // bytes 0-3 (year), 5-6 (month)
    constexpr uint64_t kDigits1 = 0xFFFF00FFFF00FFFFULL;  // 8-9 (day), 11-12 (hour), 14-15 (minute)
    uint64_t w0, w1;
    std::memcpy(&w0, s, 8);
    std::memcpy(&w1, s + 8, 8);
    const uint64_t x0 = w0 ^ kZeros, x1 = w1 ^ kZeros;
    digits = ((((x0 + kAboveNine) | x0) & kHighs & kDigits0) | (((x1 + kAboveNine) | x1) & kHighs & kDigits1)) == 0;
  } else {
    for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15}) digits = digits && digit(i) <= 9;
  }
  if (!digits) return std::nullopt;
  if (digit(17) > 9 || digit(18) > 9 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' ||
      s[16] != ':') {
    return std::nullopt;
  }
  auto two = [&](size_t at) { return digit(at) * 10 + digit(at + 1); };
  const int64_t year = two(0) * 100 + two(2);
  const unsigned month = two(5), day = two(8), hour = two(11), minute = two(14), second = two(17);
  // Whatever date::parse would make of a leap second or an impossible date, the reference
  // decides it.
  if (month < 1 || month > 12 || day < 1 || day > DaysInMonth(year, month) || hour > 23 || minute > 59 || second > 59) {
    return std::nullopt;
  }
  size_t at = 19;
  int64_t millis = 0;
  if (s[at] == '.') {
    const size_t start = ++at;
    while (at < n && IsDigit(s[at])) {
      if (at - start < 3) millis = millis * 10 + (s[at] - '0');
      ++at;
    }
    if (at == start) return std::nullopt;
    for (size_t k = std::min<size_t>(at - start, 3); k < 3; ++k) millis *= 10;
  }
  if (at >= n) return std::nullopt;
  int64_t offset_minutes = 0;
  if (at + 1 == n && (s[at] == 'Z' || s[at] == 'z')) {
    offset_minutes = 0;
  } else if (at + 6 == n && (s[at] == '+' || s[at] == '-') && IsDigit(s[at + 1]) && IsDigit(s[at + 2]) &&
             s[at + 3] == ':' && IsDigit(s[at + 4]) && IsDigit(s[at + 5])) {
    const unsigned offset_hours = two(at + 1), offset_mins = two(at + 4);
    if (offset_hours > 23 || offset_mins > 59) return std::nullopt;
    offset_minutes = (s[at] == '-' ? -1 : 1) * static_cast<int64_t>(offset_hours * 60 + offset_mins);
  } else {
    return std::nullopt;
  }
  const int64_t ms = DaysFromCivil(year, month, day) * 86'400'000 +
                     static_cast<int64_t>((hour * 60 + minute) * 60 + second) * 1000 + millis - offset_minutes * 60'000;
  const TimePoint t{Millis(ms)};
  // An offset that carries the instant out of years 0000-9999 is refused by the reference
  // too; leave the message to it.
  if (!InRange(t)) return std::nullopt;
  return t;
}

std::optional<TimePoint> ParseEnvelopeTimeReference(std::string_view text) {
  std::optional<std::string> normalized = NormalizeRfc3339(text);
  if (!normalized) return std::nullopt;
  Result<TimePoint> time = ParseTime(*normalized);
  if (!time.ok() || !InRange(*time)) return std::nullopt;
  return *time;
}

std::optional<TimePoint> ParseEnvelopeTime(std::string_view text) {
  if (std::optional<TimePoint> fast = ParseEnvelopeTimeFast(text)) return fast;
  return ParseEnvelopeTimeReference(text);
}

}  // namespace trigd
