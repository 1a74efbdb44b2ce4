#include "common/time.h"

// date::parse trips a g++ 12 false positive inside <chrono> at -O2.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <date/date.h>
#include <date/tz.h>

#include <cctype>
#include <sstream>

namespace trigd {

TimePoint SystemClock::Now() const {
  return std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now());
}

const Clock& SystemClock::Get() {
  static const SystemClock kClock;
  return kClock;
}

Result<Millis> ParseDuration(std::string_view text) {
  if (text.empty()) return Invalid("empty duration");
  Millis total{0};
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start) {
      return Invalid("invalid duration \"" + std::string(text) +
                     "\": expected a number followed by ms, s, m, h or d");
    }
    if (i - start > 12) return Invalid("duration \"" + std::string(text) + "\" is too large");
    long long n = std::stoll(std::string(text.substr(start, i - start)));
    size_t ustart = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(ustart, i - ustart);
    long long ms;
    if (unit == "ms") ms = 1;
    else if (unit == "s") ms = 1000;
    else if (unit == "m") ms = 60'000;
    else if (unit == "h") ms = 3'600'000;
    else if (unit == "d") ms = 86'400'000;
    else
      return Invalid("invalid duration \"" + std::string(text) + "\": unknown unit \"" +
                     std::string(unit) + "\" (use ms, s, m, h or d)");
    total += Millis(n * ms);
  }
  return total;
}

std::string FormatDuration(Millis d) {
  long long ms = d.count();
  if (ms == 0) return "0s";
  struct Unit { long long ms; const char* name; };
  static constexpr Unit kUnits[] = {{86'400'000, "d"}, {3'600'000, "h"}, {60'000, "m"},
                                    {1000, "s"}, {1, "ms"}};
  for (const Unit& u : kUnits) {
    if (ms % u.ms == 0) return std::to_string(ms / u.ms) + u.name;
  }
  return std::to_string(ms) + "ms";
}

std::string FormatTime(TimePoint t) {
  // A batch stamps many rows with the same instant (history entries, launched_at), and
  // date::format costs microseconds (an ostringstream per call): remember the last one.
  thread_local TimePoint last_time{Millis(-1)};
  thread_local std::string last_text;
  if (t == last_time && !last_text.empty()) return last_text;
  std::string text = t.time_since_epoch().count() % 1000 == 0
                         ? date::format("%FT%TZ", std::chrono::time_point_cast<std::chrono::seconds>(t))
                         : date::format("%FT%TZ", t);
  last_time = t;
  last_text = text;
  return text;
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
    return Invalid("invalid time \"" + std::string(text) +
                   "\": expected RFC 3339, e.g. 2026-11-22T10:00:00Z");
  }
  return TimePoint(tp);
}

Result<int> ParseTimeOfDay(std::string_view text) {
  if (text.size() != 5 || text[2] != ':' || !std::isdigit(static_cast<unsigned char>(text[0])) ||
      !std::isdigit(static_cast<unsigned char>(text[1])) ||
      !std::isdigit(static_cast<unsigned char>(text[3])) ||
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
