// Cron expressions (5 fields: minute hour day-of-month month day-of-week) and the fire times
// of time triggers, in an IANA time zone with DST handled as users expect:
// - a fire time whose local time falls in a skipped hour (spring forward) fires once, at the
//   first valid instant after the gap (e.g. 02:30 Europe/Berlin on the spring-forward day
//   fires at 03:00 CEST);
// - a local time that occurs twice (fall back) fires once, at its first occurrence.
// Day-of-month and day-of-week follow Vixie cron's rule: when both are restricted (neither is
// "*"), a day matches if either matches. Names (jan-dec, sun-sat) and 7 for Sunday are
// accepted. Pure: no I/O; thread-safe.
#pragma once

#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "model/schedule.h"

namespace trigd {

class CronExpr {
 public:
  // kInvalid with a message naming the field, e.g. "field 2 (hour) out of range: 25",
  // "expected 5 fields, got 6".
  static Result<CronExpr> Parse(std::string_view text);

  // The first fire time strictly after `after`, evaluated in time zone `timezone` (an IANA
  // name that IsKnownTimeZone accepts). std::nullopt when none exists within 5 years
  // (e.g. "0 0 30 2 *").
  std::optional<TimePoint> Next(TimePoint after, const std::string& timezone) const;

  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_of_month_;  // 1..31
  std::bitset<13> months_;         // 1..12
  std::bitset<7> days_of_week_;    // 0..6, Sunday = 0
  bool dom_restricted_ = false;
  bool dow_restricted_ = false;
};

// The first fire time of `trigger` strictly after `after`. For `every`, fire times are
// anchor + k * every (k >= 1). For `cron`, `anchor` is unused. std::nullopt when the trigger
// has no further fire time or its cron text is invalid.
std::optional<TimePoint> NextFireTime(const TimeTrigger& trigger, TimePoint anchor, TimePoint after);

// Which fire times to produce now. Due fire times are those in (last_fired, now] (with
// last_fired = anchor for a new schedule), at most `limit` of them are looked at. A fire time
// is "missed" when it is older than `grace` (trigd was down or behind). Policy:
// - every due fire time older than catchup_window is skipped, whatever the policy;
// - all: every remaining due fire time, oldest first;
// - latest: only the newest remaining due fire time;
// - none: only due fire times that are not missed.
// `next_after` is the fire time to wait for next (strictly after now).
// `not_fired`: ranges (after, through] holding every due fire time not produced, and no
// produced one (for the identity of a fire time a producer's tick names, see PgStore).
struct DueFireTimes {
  std::vector<TimePoint> fire;    // to produce, oldest first
  int64_t skipped = 0;            // due but not produced (policy or window)
  std::optional<TimePoint> next;  // the next fire time after now
  std::vector<std::pair<TimePoint, TimePoint>> not_fired;
};
// How late a fire time may be produced before it counts as missed.
inline constexpr Millis kTickGrace = std::chrono::seconds(60);
DueFireTimes ComputeDueFireTimes(const TimeTrigger& trigger, TimePoint anchor, std::optional<TimePoint> last_fired,
                                 TimePoint now, Millis grace = kTickGrace, size_t limit = 100000);

// The same, for a schedule with an active period (SPEC §9, `active`): fire times outside
// [active.from, active.until) do not exist. None before `from` is due or skipped (the first is
// the first at or after `from`); none at or after `until` is produced, those of the period still
// due once it has ended are skipped (events are ignored by then), and `next` is unset once the
// period has ended (the producer stops). Without a period: ComputeDueFireTimes.
DueFireTimes ComputeDueFireTimes(const TimeTrigger& trigger, const std::optional<ActivePeriod>& active,
                                 TimePoint anchor, std::optional<TimePoint> last_fired, TimePoint now);

// The first fire time of `trigger` strictly after `after` inside `active` (NextFireTime when
// there is no period); std::nullopt when the period ends before it.
std::optional<TimePoint> NextActiveFireTime(const TimeTrigger& trigger, const std::optional<ActivePeriod>& active,
                                            TimePoint anchor, TimePoint after);

}  // namespace trigd
