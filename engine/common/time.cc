#include "common/time.h"

// date::parse trips a g++ 12 false positive inside <chrono> at -O2.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <date/date.h>
#include <date/tz.h>

#include <cctype>
#include <sstream>

namespace trigd {

TimePoint SystemClock::Now() const { return std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now()); }

const Clock& SystemClock::Get() {
  static const SystemClock kClock;
  return kClock;
}

Result<Millis> ParseDuration(std::string_view text) {
  if (text.empty()) return Invalid("empty duration");
  const long long max = kMaxDuration.count();
  auto too_long = [&] {
    std::string shown(text.substr(0, 40));
    if (text.size() > 40) shown += "...";
    return Invalid("duration \"" + shown + "\" is longer than the maximum of " + FormatDuration(kMaxDuration));
  };
  long long total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    // Each step stays within kMaxDuration (3.2e11), so n * 10 + 9 cannot overflow.
    long long n = 0;
    bool over = false;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (!over) {
        n = n * 10 + (text[i] - '0');
        over = n > max;
      }
      ++i;
    }
    if (i == start) {
      return Invalid("invalid duration \"" + std::string(text) + "\": expected a number followed by ms, s, m, h or d");
    }
    size_t ustart = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(ustart, i - ustart);
    long long ms;
    if (unit == "ms")
      ms = 1;
    else if (unit == "s")
      ms = 1000;
    else if (unit == "m")
      ms = 60'000;
    else if (unit == "h")
      ms = 3'600'000;
    else if (unit == "d")
      ms = 86'400'000;
    else
      return Invalid("invalid duration \"" + std::string(text) + "\": unknown unit \"" + std::string(unit) +
                     "\" (use ms, s, m, h or d)");
    // Checked as divisions: n * ms and total + part are only computed when they fit.
    if (over || n > (max - total) / ms) return too_long();
    total += n * ms;
  }
  return Millis(total);
}

std::string FormatDuration(Millis d) {
  long long ms = d.count();
  if (ms == 0) return "0s";
  struct Unit {
    long long ms;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{86'400'000, "d"}, {3'600'000, "h"}, {60'000, "m"}, {1000, "s"}, {1, "ms"}};
  for (const Unit& u : kUnits) {
    if (ms % u.ms == 0) return std::to_string(ms / u.ms) + u.name;
  }
  return std::to_string(ms) + "ms";
}

std::string FormatTime(TimePoint t) {
  // Every row a batch writes carries instants (history entries, launched_at, a tick's id and
  // fire time), and date::format costs microseconds (an ostringstream per call): years 0-9999
  // are written digit by digit, from date's civil calendar conversion.
  const auto day = date::floor<date::days>(t);
  const date::year_month_day ymd{day};
  const int year = static_cast<int>(ymd.year());
  if (year < 0 || year > 9999) {
    return t.time_since_epoch().count() % 1000 == 0
               ? date::format("%FT%TZ", std::chrono::time_point_cast<std::chrono::seconds>(t))
               : date::format("%FT%TZ", t);
  }
  const int64_t ms = (t - day).count();  // within the day: 0 .. 86,399,999
  char buf[24];
  auto put = [&buf](int at, int64_t value, int digits) {
    for (int i = digits - 1; i >= 0; --i, value /= 10) buf[at + i] = static_cast<char>('0' + value % 10);
  };
  put(0, year, 4);
  buf[4] = '-';
  put(5, static_cast<unsigned>(ymd.month()), 2);
  buf[7] = '-';
  put(8, static_cast<unsigned>(ymd.day()), 2);
  buf[10] = 'T';
  put(11, ms / 3600000, 2);
  buf[13] = ':';
  put(14, ms / 60000 % 60, 2);
  buf[16] = ':';
  put(17, ms / 1000 % 60, 2);
  int size = 19;
  if (ms % 1000 != 0) {
    buf[19] = '.';
    put(20, ms % 1000, 3);
    size = 23;
  }
  buf[size++] = 'Z';
  return std::string(buf, size);
}

Result<TimePoint> ParseTime(std::string_view text) {
  std::string s(text);
  // Accept lowercase 't'/'z' and a trailing 'Z' as +00:00 for date::parse's %Ez.
  for (char& c : s) {
    if (c == 't') c = 'T';
    if (c == 'z') c = 'Z';
  }
  if (!s.empty() && s.back() == 'Z') s.replace(s.size() - 1, 1, "+00:00");
  std::istringstream in(s);
  date::sys_time<Millis> tp;
  in >> date::parse("%FT%T%Ez", tp);
  if (in.fail() || in.peek() != std::char_traits<char>::eof()) {
    return Invalid("invalid time \"" + std::string(text) + "\": expected RFC 3339, e.g. 2026-11-22T10:00:00Z");
  }
  return TimePoint(tp);
}

Result<int> ParseTimeOfDay(std::string_view text) {
  if (text.size() != 5 || text[2] != ':' || !std::isdigit(static_cast<unsigned char>(text[0])) ||
      !std::isdigit(static_cast<unsigned char>(text[1])) || !std::isdigit(static_cast<unsigned char>(text[3])) ||
      !std::isdigit(static_cast<unsigned char>(text[4]))) {
    return Invalid("invalid time of day \"" + std::string(text) + "\": expected HH:MM");
  }
  int h = (text[0] - '0') * 10 + (text[1] - '0');
  int m = (text[3] - '0') * 10 + (text[4] - '0');
  if (h > 23 || m > 59) {
    return Invalid("invalid time of day \"" + std::string(text) + "\": out of range 00:00-23:59");
  }
  return h * 60 + m;
}

bool IsKnownTimeZone(std::string_view name) {
  if (name.empty()) return false;
  try {
    date::locate_zone(std::string(name));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace trigd
