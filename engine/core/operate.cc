#include "core/operate.h"

// date's tz.h trips the same g++ 12 false positive inside <chrono> at -O2 as date::parse.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <date/date.h>
#include <date/tz.h>

#include <algorithm>
#include <cmath>

#include "core/cron.h"

namespace trigd {

const TimeTrigger* ScheduleTimeTrigger(const Schedule& s) {
  for (const Trigger* leaf : TriggerLeaves(s.trigger)) {
    if (leaf->kind == TriggerKind::kTime) return &leaf->time;
  }
  return nullptr;
}

size_t CountFireTimesBetween(const Schedule& s, TimePoint anchor, TimePoint from, TimePoint to, size_t limit) {
  const TimeTrigger* t = ScheduleTimeTrigger(s);
  if (t == nullptr) return 0;
  if (s.active && s.active->from && from < *s.active->from) from = *s.active->from;
  if (s.active && s.active->until && to > *s.active->until) to = *s.active->until;
  size_t count = 0;
  for (std::optional<TimePoint> next = NextFireTime(*t, anchor, from - Millis(1)); next && *next < to && count <= limit;
       next = NextFireTime(*t, anchor, *next)) {
    ++count;
  }
  return count;
}

FireTimes FireTimesBetween(const Schedule& s, TimePoint anchor, TimePoint from, TimePoint to, size_t max) {
  FireTimes out;
  const TimeTrigger* t = ScheduleTimeTrigger(s);
  if (t == nullptr) return out;
  if (s.active && s.active->from && from < *s.active->from) from = *s.active->from;
  if (s.active && s.active->until && to > *s.active->until) to = *s.active->until;
  // Counted first (up to max + 1), so the vector is sized once and never past max.
  const size_t count = CountFireTimesBetween(s, anchor, from, to, max);
  out.more = count > max;
  out.times.reserve(std::min(count, max));
  // The first fire time at or after `from`: Next is strictly after its argument.
  for (std::optional<TimePoint> next = NextFireTime(*t, anchor, from - Millis(1));
       next && *next < to && out.times.size() < max; next = NextFireTime(*t, anchor, *next)) {
    out.times.push_back(*next);
  }
  return out;
}

std::string FormatLocalTime(TimePoint t, const std::string& timezone) {
  const date::zoned_time<std::chrono::seconds> z(date::locate_zone(timezone),
                                                 std::chrono::floor<std::chrono::seconds>(t));
  return date::format("%FT%T%Ez", z);
}

nlohmann::json MergeArgs(const nlohmann::json& args, const nlohmann::json& override) {
  nlohmann::json out = args.is_object() ? args : nlohmann::json::object();
  if (override.is_object()) {
    for (auto it = override.begin(); it != override.end(); ++it) out[it.key()] = it.value();
  }
  return out;
}

std::optional<nlohmann::json> ManualArgs(std::string_view triggered_by_json) {
  if (triggered_by_json.find("\"manual\"") == std::string_view::npos) return std::nullopt;
  const nlohmann::json list = nlohmann::json::parse(triggered_by_json, nullptr, false);
  if (!list.is_array()) return std::nullopt;
  for (const nlohmann::json& e : list) {
    if (!e.is_object() || e.value("type", "") != "manual") continue;
    auto p = e.find("payload");
    if (p == e.end() || !p->is_object()) continue;
    auto args = p->find("args");
    if (args != p->end() && args->is_object()) return *args;
  }
  return std::nullopt;
}

namespace {
void Diff(const std::string& path, const nlohmann::json& a, const nlohmann::json& b, std::vector<FieldChange>& out) {
  if (a == b) return;
  auto join = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  if (a.is_object() && b.is_object()) {
    // nlohmann::json keeps keys sorted: one pass over both.
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key())) {
        out.push_back({join(it.key()), it.value(), nullptr});
      } else {
        Diff(join(it.key()), it.value(), b.at(it.key()), out);
      }
    }
    for (auto it = b.begin(); it != b.end(); ++it) {
      if (!a.contains(it.key())) out.push_back({join(it.key()), nullptr, it.value()});
    }
    return;
  }
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i) Diff(path + "[" + std::to_string(i) + "]", a[i], b[i], out);
    return;
  }
  out.push_back({path, a, b});
}
}  // namespace

std::vector<FieldChange> DiffDocuments(const nlohmann::json& before, const nlohmann::json& after) {
  std::vector<FieldChange> out;
  Diff("", before, after, out);
  return out;
}

Millis JitteredBackoff(Millis backoff, int64_t jitter_percent, double u) {
  const double share = std::clamp<int64_t>(jitter_percent, 0, 100) / 100.0;
  const double factor = 1.0 + share * (2.0 * std::clamp(u, 0.0, 1.0) - 1.0);
  const double ms =
      std::clamp(static_cast<double>(backoff.count()) * factor, 0.0, static_cast<double>(kMaxDuration.count()));
  return Millis(static_cast<int64_t>(std::llround(ms)));
}

}  // namespace trigd
