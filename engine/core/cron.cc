#include "core/cron.h"

#include <date/date.h>
#include <date/tz.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <exception>
#include <unordered_map>

namespace trigd {
namespace {

struct FieldSpec {
  const char* name;
  int min;
  int max;                                   // day-of-week accepts 7 (Sunday) on input; it is folded to 0
  const std::array<const char*, 12>* names;  // value of names[i] is i + names_base
  int names_base;
};

constexpr std::array<const char*, 12> kMonthNames = {"jan", "feb", "mar", "apr", "may", "jun",
                                                     "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<const char*, 12> kDayNames = {"sun", "mon",   "tue",   "wed",   "thu",   "fri",
                                                   "sat", nullptr, nullptr, nullptr, nullptr, nullptr};

constexpr FieldSpec kFields[5] = {
    {"minute", 0, 59, nullptr, 0},     {"hour", 0, 23, nullptr, 0},          {"day-of-month", 1, 31, nullptr, 0},
    {"month", 1, 12, &kMonthNames, 1}, {"day-of-week", 0, 7, &kDayNames, 0},
};

// Five years of local days, plus slack for leap days: "none within 5 years" of the header.
constexpr int kSearchDays = 5 * 366 + 1;

std::string FieldPrefix(int index) { return "field " + std::to_string(index + 1) + " (" + kFields[index].name + ")"; }

Status OutOfRange(int index, std::string_view token) {
  return Invalid(FieldPrefix(index) + " out of range: " + std::string(token));
}

Status InvalidValue(int index, std::string_view token) {
  return Invalid(FieldPrefix(index) + ": invalid value \"" + std::string(token) + "\"");
}

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(separator, start);
    if (pos == std::string_view::npos) {
      parts.push_back(text.substr(start));
      return parts;
    }
    parts.push_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

bool AllDigits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

// A number or (month, day-of-week) a three-letter name, checked against the field's range.
Result<int> ParseValue(int index, std::string_view token) {
  const FieldSpec& spec = kFields[index];
  if (AllDigits(token)) {
    // More than 4 digits cannot be in any field's range; stopping here avoids overflow.
    if (token.size() > 4) return OutOfRange(index, token);
    int value = 0;
    for (char c : token) value = value * 10 + (c - '0');
    if (value < spec.min || value > spec.max) return OutOfRange(index, token);
    return value;
  }
  if (spec.names != nullptr && token.size() == 3) {
    std::string lower;
    for (char c : token) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (size_t i = 0; i < spec.names->size(); ++i) {
      const char* name = (*spec.names)[i];
      if (name != nullptr && lower == name) return static_cast<int>(i) + spec.names_base;
    }
  }
  return InvalidValue(index, token);
}

// Parses one field ("*", "*/n", "a", "a-b", "a-b/n", "a/n", comma lists) into a bit per value
// (bit i = value i). `star` reports whether the field begins with '*': Vixie cron treats such
// a day field ("*" or "*/2") as unrestricted for the day-of-month/day-of-week rule.
Result<uint64_t> ParseField(int index, std::string_view text, bool& star) {
  const FieldSpec& spec = kFields[index];
  star = !text.empty() && text.front() == '*';
  uint64_t bits = 0;
  for (std::string_view item : Split(text, ',')) {
    if (item.empty()) {
      return Invalid(FieldPrefix(index) + ": empty item in \"" + std::string(text) + "\"");
    }
    std::vector<std::string_view> range_and_step = Split(item, '/');
    if (range_and_step.size() > 2) return InvalidValue(index, item);
    std::string_view range = range_and_step[0];
    int step = 1;
    if (range_and_step.size() == 2) {
      std::string_view step_text = range_and_step[1];
      if (!AllDigits(step_text) || step_text.size() > 4) {
        return Invalid(FieldPrefix(index) + ": invalid step \"" + std::string(step_text) + "\"");
      }
      step = 0;
      for (char c : step_text) step = step * 10 + (c - '0');
      if (step == 0) {
        return Invalid(FieldPrefix(index) + ": invalid step \"" + std::string(step_text) + "\"");
      }
    }
    int first;
    int last;
    if (range == "*") {
      first = spec.min;
      last = spec.max;
    } else {
      std::vector<std::string_view> bounds = Split(range, '-');
      if (bounds.size() > 2) return InvalidValue(index, item);
      Result<int> low = ParseValue(index, bounds[0]);
      if (!low.ok()) return low.status();
      first = *low;
      if (bounds.size() == 2) {
        Result<int> high = ParseValue(index, bounds[1]);
        if (!high.ok()) return high.status();
        last = *high;
        // "fri-sun" and "5-0" mean Friday to Sunday: Sunday closes a week-day range as 7.
        if (index == 4 && last == 0 && first > 0) last = 7;
        if (first > last) {
          return Invalid(FieldPrefix(index) + ": invalid range \"" + std::string(range) + "\"");
        }
      } else {
        // "a/n" runs from a to the field's end, as in most cron implementations.
        last = range_and_step.size() == 2 ? spec.max : first;
      }
    }
    for (int v = first; v <= last; v += step) bits |= uint64_t{1} << v;
  }
  return bits;
}

// The UTC instant at which local time `local` fires in `zone`: a local time inside a DST gap
// fires at the end of the gap (the first valid instant), a local time that occurs twice fires
// at its first occurrence.
TimePoint LocalToUtc(const date::time_zone* zone, date::local_seconds local) {
  date::local_info info = zone->get_info(local);
  switch (info.result) {
    case date::local_info::nonexistent: return TimePoint(info.second.begin);
    case date::local_info::ambiguous:
    case date::local_info::unique: break;
  }
  // For an ambiguous time `first` is the period before the transition: the earlier instant.
  return TimePoint(std::chrono::seconds(local.time_since_epoch() - info.first.offset));
}

}  // namespace

Result<CronExpr> CronExpr::Parse(std::string_view text) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) fields.push_back(text.substr(start, i - start));
  }
  if (fields.size() != 5) {
    return Invalid("expected 5 fields, got " + std::to_string(fields.size()));
  }
  CronExpr expr;
  expr.text_ = std::string(text);
  bool star = false;
  Result<uint64_t> minutes = ParseField(0, fields[0], star);
  if (!minutes.ok()) return minutes.status();
  expr.minutes_ = std::bitset<60>(*minutes);
  Result<uint64_t> hours = ParseField(1, fields[1], star);
  if (!hours.ok()) return hours.status();
  expr.hours_ = std::bitset<24>(*hours);
  Result<uint64_t> days_of_month = ParseField(2, fields[2], star);
  if (!days_of_month.ok()) return days_of_month.status();
  expr.days_of_month_ = std::bitset<32>(*days_of_month);
  expr.dom_restricted_ = !star;
  Result<uint64_t> months = ParseField(3, fields[3], star);
  if (!months.ok()) return months.status();
  expr.months_ = std::bitset<13>(*months);
  Result<uint64_t> days_of_week = ParseField(4, fields[4], star);
  if (!days_of_week.ok()) return days_of_week.status();
  uint64_t dow = *days_of_week;
  if (dow & (uint64_t{1} << 7)) dow = (dow | 1) & ~(uint64_t{1} << 7);  // 7 is Sunday
  expr.days_of_week_ = std::bitset<7>(dow);
  expr.dow_restricted_ = !star;
  return expr;
}

std::optional<TimePoint> CronExpr::Next(TimePoint after, const std::string& timezone) const {
  const date::time_zone* zone = nullptr;
  try {
    zone = date::locate_zone(timezone);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  // Local fire times map to UTC monotonically (gaps collapse to their end, repeats take the
  // first occurrence), and no local time before `after`'s own local time maps after it. So
  // scanning matching local minutes from there, the first that maps after `after` is the
  // answer; in a repeated hour the scan passes over the first occurrences already gone.
  const auto after_seconds = date::floor<std::chrono::seconds>(after);
  const date::sys_info after_info = zone->get_info(after_seconds);
  const date::local_seconds local_after{after_seconds.time_since_epoch() + after_info.offset};
  const auto local_minute = date::floor<std::chrono::minutes>(local_after);
  date::local_days day = date::floor<date::days>(local_minute);
  int first_minute_of_day = static_cast<int>((local_minute - day).count());
  const date::local_days last_day = day + date::days(kSearchDays);

  while (day <= last_day) {
    const date::year_month_day ymd(day);
    const unsigned month = static_cast<unsigned>(ymd.month());
    if (!months_[month]) {
      // Jump to the first day of the next month.
      const date::year_month next = date::year_month(ymd.year(), ymd.month()) + date::months(1);
      day = date::local_days(next / 1);
      first_minute_of_day = 0;
      continue;
    }
    const unsigned day_of_month = static_cast<unsigned>(ymd.day());
    const unsigned day_of_week = date::weekday(day).c_encoding();
    const bool dom_match = days_of_month_[day_of_month];
    const bool dow_match = days_of_week_[day_of_week];
    // Vixie cron: with both day fields restricted either may match; otherwise the
    // unrestricted one matches every day, so requiring both is the same as the other alone.
    const bool day_match = (dom_restricted_ && dow_restricted_) ? (dom_match || dow_match) : (dom_match && dow_match);
    if (day_match) {
      for (int hour = first_minute_of_day / 60; hour < 24; ++hour) {
        if (!hours_[hour]) continue;
        const int first_minute = hour == first_minute_of_day / 60 ? first_minute_of_day % 60 : 0;
        for (int minute = first_minute; minute < 60; ++minute) {
          if (!minutes_[minute]) continue;
          const date::local_seconds local = day + std::chrono::hours(hour) + std::chrono::minutes(minute);
          const TimePoint fire = LocalToUtc(zone, local);
          if (fire > after) return fire;
        }
      }
    }
    day += date::days(1);
    first_minute_of_day = 0;
  }
  return std::nullopt;
}

namespace {

// The parsed form of a cron text, parsed once per thread (null if it does not parse): the
// checkers compute due fire times for every time trigger they tick, and schedules share few
// distinct texts (a storm's 100,000 schedules, one). The pointer is good until the next call.
const CronExpr* ParsedCron(const std::string& text) {
  constexpr size_t kMaxCached = 4096;
  thread_local std::unordered_map<std::string, std::optional<CronExpr>> cache;
  if (auto it = cache.find(text); it != cache.end()) return it->second ? &*it->second : nullptr;
  if (cache.size() >= kMaxCached) cache.clear();
  Result<CronExpr> parsed = CronExpr::Parse(text);
  auto& slot = cache[text];
  if (parsed.ok()) slot = std::move(parsed).value();
  return slot ? &*slot : nullptr;
}

// NextFireTime for a trigger whose cron expression (if any) is already parsed.
std::optional<TimePoint> NextFire(const TimeTrigger& trigger, const CronExpr* cron, TimePoint anchor, TimePoint after) {
  if (cron != nullptr) return cron->Next(after, trigger.timezone);
  if (!trigger.every || trigger.every->count() <= 0) return std::nullopt;
  const int64_t every = trigger.every->count();
  const int64_t since_anchor = (after - anchor).count();
  // Floor division so that `after` before the anchor still yields k = 1.
  int64_t k = since_anchor / every;
  if (since_anchor % every != 0 && since_anchor < 0) --k;
  k = std::max<int64_t>(k + 1, 1);
  return anchor + Millis(k * every);
}

}  // namespace

std::optional<TimePoint> NextFireTime(const TimeTrigger& trigger, TimePoint anchor, TimePoint after) {
  if (trigger.cron) {
    const CronExpr* cron = ParsedCron(*trigger.cron);
    if (cron == nullptr) return std::nullopt;
    return NextFire(trigger, cron, anchor, after);
  }
  return NextFire(trigger, nullptr, anchor, after);
}

DueFireTimes ComputeDueFireTimes(const TimeTrigger& trigger, TimePoint anchor, std::optional<TimePoint> last_fired,
                                 TimePoint now, Millis grace, size_t limit) {
  DueFireTimes result;
  const CronExpr* cron_ptr = nullptr;
  if (trigger.cron) {
    cron_ptr = ParsedCron(*trigger.cron);
    if (cron_ptr == nullptr) return result;
  }
  result.next = NextFire(trigger, cron_ptr, anchor, now);

  const TimePoint start = last_fired.value_or(anchor);
  TimePoint cursor = start;
  // The fire times skipped are always the oldest due ones: those before the window, then the
  // policy's (all but the newest, or all those missed). They all lie in (start, skipped_through].
  std::optional<TimePoint> skipped_through;
  // Fire times before the window are skipped whatever the policy, so they are only counted
  // (at most `limit` of them) and the scan jumps to the window: a schedule down for a year
  // does not walk every minute of it.
  const TimePoint window_start = now - trigger.catchup_window;
  if (cursor < window_start) {
    size_t looked_at = 0;
    std::optional<TimePoint> t = NextFire(trigger, cron_ptr, anchor, cursor);
    if (trigger.every && !cron_ptr && t && *t < window_start) {
      // Fixed rate: count exactly, the fire times are evenly spaced.
      const int64_t every = trigger.every->count();
      result.skipped += ((window_start - *t).count() - 1) / every + 1;
    } else {
      while (t && *t < window_start && looked_at < limit) {
        ++result.skipped;
        ++looked_at;
        t = NextFire(trigger, cron_ptr, anchor, *t);
      }
    }
    cursor = window_start - Millis(1);
    if (result.skipped > 0) skipped_through = cursor;
  }

  std::vector<TimePoint> due;
  for (std::optional<TimePoint> t = NextFire(trigger, cron_ptr, anchor, cursor); t && *t <= now && due.size() < limit;
       t = NextFire(trigger, cron_ptr, anchor, *t)) {
    due.push_back(*t);
  }

  // Due fire times past the `limit` looked at are not produced either (the caller's cursor
  // moves to now).
  std::optional<TimePoint> cut;
  if (!due.empty() && due.size() == limit && due.back() < now) cut = due.back();
  switch (trigger.catchup) {
    case CatchupPolicy::kAll: result.fire = std::move(due); break;
    case CatchupPolicy::kLatest:
      if (!due.empty()) {
        result.skipped += static_cast<int64_t>(due.size()) - 1;
        result.fire.push_back(due.back());
        if (due.size() > 1) skipped_through = due[due.size() - 2];
      }
      break;
    case CatchupPolicy::kNone:
      for (TimePoint t : due) {
        if (now - t > grace) {
          ++result.skipped;
          skipped_through = t;
        } else {
          result.fire.push_back(t);
        }
      }
      break;
  }
  if (skipped_through) result.not_fired.emplace_back(start, *skipped_through);
  if (cut) result.not_fired.emplace_back(*cut, now);
  return result;
}

std::optional<TimePoint> NextActiveFireTime(const TimeTrigger& trigger, const std::optional<ActivePeriod>& active,
                                            TimePoint anchor, TimePoint after) {
  if (active && active->from && after < *active->from - Millis(1)) after = *active->from - Millis(1);
  std::optional<TimePoint> next = NextFireTime(trigger, anchor, after);
  if (next && active && active->until && *next >= *active->until) return std::nullopt;
  return next;
}

DueFireTimes ComputeDueFireTimes(const TimeTrigger& trigger, const std::optional<ActivePeriod>& active,
                                 TimePoint anchor, std::optional<TimePoint> last_fired, TimePoint now) {
  if (!active) return ComputeDueFireTimes(trigger, anchor, last_fired, now);
  // Before `from` there are no fire times: the due range starts just before it, so none of them
  // is due, missed or counted as skipped.
  if (active->from && last_fired.value_or(anchor) < *active->from - Millis(1)) {
    last_fired = *active->from - Millis(1);
  }
  // After `until` there are none either, and the period's fire times not produced before its
  // end (trigd down or behind) are skipped: their ticks would come when the schedule ignores
  // events, as a suspended one does.
  DueFireTimes due;
  if (active->until && now >= *active->until) {
    TimeTrigger missed = trigger;
    missed.catchup = CatchupPolicy::kNone;
    due = ComputeDueFireTimes(missed, anchor, last_fired, *active->until - Millis(1), Millis(-1));
  } else {
    due = ComputeDueFireTimes(trigger, anchor, last_fired, now);
  }
  due.next = NextActiveFireTime(trigger, active, anchor, now);
  return due;
}

}  // namespace trigd
