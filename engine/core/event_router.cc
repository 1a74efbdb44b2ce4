#include "core/event_router.h"

#include <utility>

#include "core/envelope.h"

namespace trigd {
namespace router_internal {

void Scan(std::string_view bytes, const ScheduleIndex& index, Scanned& s) {
  s.scan = EnvelopeScan();
  s.scanned = ScanEnvelope(bytes, s.scan);
  // Every valid program event carries a run id: a report that always matters, looked up only
  // after the full parse.
  s.own_tick = s.scanned && IsOwnTick(s.scan.type, s.scan.id, s.scan.key_name);
  s.look_up = s.scanned && !s.own_tick && s.scan.type != EventType::kProgram;
  if (s.look_up) {
    s.scan.EventKeyInto(s.key);
    s.hash = index.Prefetch(s.key);
  }
}

RoutedEvent Finish(std::string_view bytes, const ScheduleIndex& index, const Scanned& s) {
  return Finish(bytes, index, s, s.look_up ? index.Lookup(s.key, s.hash) : std::span<const int64_t>());
}

RoutedEvent Finish(std::string_view bytes, const ScheduleIndex& index, const Scanned& s,
                   std::span<const int64_t> looked_up, bool payload) {
  RoutedEvent out;
  if (s.scanned) {
    out.type = s.scan.type;
    if (s.own_tick) {
      out.kind = RoutedEvent::Kind::kOwnTick;
      return out;
    }
    if (s.look_up) {
      out.schedules = looked_up;
      if (out.schedules.empty()) return out;
    }
  }
  Result<Event> e =
      s.scanned ? ParseScannedEnvelope(bytes, payload) : ParseEnvelope(bytes, kMaxEventBytes, &out.reason);
  if (!e.ok()) {
    out.kind = RoutedEvent::Kind::kInvalid;
    out.error = e.status();
    return out;
  }
  out.type = e->type;
  // A scanned envelope parses to the same id, type and key (envelope_scan.h): its own-tick
  // check and lookup above stand.
  if (!s.look_up) {
    if (IsOwnTick(e->type, e->id, e->tick.schedule)) {
      out.kind = RoutedEvent::Kind::kOwnTick;
      return out;
    }
    if (e->type == EventType::kCustom) {
      out.custom_schedules = index.LookupCustom(e->custom.name, e->payload);
      out.schedules = out.custom_schedules;
    } else {
      out.schedules = index.Lookup(e->EventKey());
    }
  }
  const bool report = e->type == EventType::kProgram && !e->program.run_id.empty();
  if (out.schedules.empty() && !report) return out;
  out.kind = RoutedEvent::Kind::kMatch;
  out.event = std::move(*e);
  return out;
}

}  // namespace router_internal

RoutedEvent RouteEvent(std::string_view bytes, const ScheduleIndex& index, std::string& key) {
  router_internal::Scanned s;
  s.key = std::move(key);
  router_internal::Scan(bytes, index, s);
  RoutedEvent out = router_internal::Finish(bytes, index, s);
  key = std::move(s.key);
  return out;
}

}  // namespace trigd
