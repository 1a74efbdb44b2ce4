// Time for trigd: instants are UTC with millisecond precision; durations are seconds in
// documents ("90s", "10m", "4h", "1d") and milliseconds inside the engine.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace trigd {

using Millis = std::chrono::milliseconds;
using TimePoint = std::chrono::sys_time<Millis>;

// Clock is passed in wherever logic depends on the time, so tests control it.
// Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
};

class SystemClock : public Clock {
 public:
  TimePoint Now() const override;
  static const Clock& Get();
};

// A clock that tests move by hand.
class ManualClock : public Clock {
 public:
  explicit ManualClock(TimePoint start) : now_(start) {}
  TimePoint Now() const override { return now_; }
  void Set(TimePoint t) { now_ = t; }
  void Advance(Millis d) { now_ += d; }

 private:
  TimePoint now_;
};

// The longest duration trigd reads anywhere (schedule documents, trigctl flags, TRIGD_RETENTION):
// ten years. Longer ones are typos in practice, and the cap keeps every TimePoint +/- duration
// and every duration * factor the engine computes far from int64 overflow (3650d is 3.2e11 ms).
inline constexpr Millis kMaxDuration = std::chrono::hours(24 * 3650);

// Parses "90s", "10m", "4h", "1d" (also "500ms" and compound "1h30m"): the one duration parser
// of every path. Each number, product and sum is checked, so a duration longer than
// kMaxDuration is refused as such ("... is longer than the maximum of 3650d"), never wrapped.
// Returns kInvalid naming what is wrong.
Result<Millis> ParseDuration(std::string_view text);
// Formats the shortest exact form: 90000ms -> "90s", 600000 -> "10m", 86400000 -> "1d".
std::string FormatDuration(Millis d);

// RFC 3339 in UTC, e.g. "2026-11-22T10:00:00Z" or with ".123Z" when there are millis.
std::string FormatTime(TimePoint t);
// Accepts "2026-11-22T10:00:00Z", fractional seconds and numeric offsets ("+01:00").
Result<TimePoint> ParseTime(std::string_view text);

// "HH:MM" -> minutes since midnight (0..1439); "24:00" is refused.
Result<int> ParseTimeOfDay(std::string_view text);

// True when the IANA zone name is known to the system's zoneinfo.
bool IsKnownTimeZone(std::string_view name);

}  // namespace trigd
