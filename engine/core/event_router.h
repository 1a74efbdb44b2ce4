// How ingestion routes a message (SPEC §5): the envelope checked, its event key derived and
// looked up in the reverse index. The one place this decision is made; the ingest loop
// (app/engine.cc) and the index benchmark call it.
//
// Most events match no schedule. For those the scanner (envelope_scan.h) is enough: its word
// that the envelope is valid, and its key. Anything else (a match, a program's run report,
// which always matters, an envelope the scanner is not sure of) gets the full parser.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "core/envelope_scan.h"
#include "core/schedule_index.h"
#include "model/event.h"

namespace trigd {

struct RoutedEvent {
  enum class Kind {
    kOwnTick,  // trigd's own tick (IsOwnTick): applied by the transaction that published it
    kNoMatch,  // valid, and no schedule listens on its key
    kMatch,    // schedules listen on it, or a program's run report
    kInvalid,  // refused by ParseEnvelope: `error` says why
  };
  Kind kind = Kind::kNoMatch;
  EventType type = EventType::kPartition;  // kOwnTick, kNoMatch, kMatch
  std::optional<Event> event;              // kMatch
  std::span<const int64_t> schedules;      // kMatch: valid until the index changes
  // A custom event's schedules (ScheduleIndex::LookupCustom), which `schedules` then views: it
  // stays valid when the RoutedEvent is moved, not when it is copied.
  std::vector<int64_t> custom_schedules;
  Status error;                                          // kInvalid
  DeadLetterReason reason = DeadLetterReason::kBadJson;  // kInvalid: the metric label
};

// One message. `key` is scratch space, reused across calls so that routing allocates nothing
// for an event that matches no schedule.
RoutedEvent RouteEvent(std::string_view bytes, const ScheduleIndex& index, std::string& key);

namespace router_internal {

// A message between its scan and its lookup.
struct Scanned {
  EnvelopeScan scan;
  bool scanned = false;   // the scanner was sure
  bool own_tick = false;  // scanned, and trigd's own tick
  bool look_up = false;   // scanned, not an own tick, not a program event: `key` and `hash` set
  std::string key;
  uint64_t hash = 0;
};

void Scan(std::string_view bytes, const ScheduleIndex& index, Scanned& s);
RoutedEvent Finish(std::string_view bytes, const ScheduleIndex& index, const Scanned& s);
// Finish with the lookup made by the caller: `looked_up` is index.Lookup(s.key, s.hash) when
// s.look_up (ignored otherwise). For a caller that decided the message before its turn (the
// replay, at its event-time sort) and keeps that instead of the key. Without `payload`, a
// scanned event's payload may be left null (ParseScannedEnvelope).
RoutedEvent Finish(std::string_view bytes, const ScheduleIndex& index, const Scanned& s,
                   std::span<const int64_t> looked_up, bool payload = true);

}  // namespace router_internal

// Routes messages 0..count-1 (`bytes_of(i)`: message i's value) and calls `each(i, RoutedEvent&&)`
// for each, in order, with the decisions RouteEvent makes. The scan runs kRouteAhead messages
// ahead of the lookup, with the index's memory prefetched (ScheduleIndex::Prefetch): in an
// index of a million schedules a lookup's first read is a cache miss (about 130 ns here, as long
// as the scan of an event), and this way it arrives while the next events are scanned.
inline constexpr size_t kRouteAhead = 8;

template <typename BytesOf, typename Each>
void RouteEvents(size_t count, const ScheduleIndex& index, BytesOf&& bytes_of, Each&& each) {
  std::array<router_internal::Scanned, kRouteAhead> ring;
  for (size_t i = 0; i < count + kRouteAhead; ++i) {
    // Message i - kRouteAhead is finished before message i takes its place in the ring.
    if (i >= kRouteAhead) {
      const size_t done = i - kRouteAhead;
      each(done, router_internal::Finish(bytes_of(done), index, ring[done % kRouteAhead]));
    }
    if (i >= kRouteAhead / 2 && i - kRouteAhead / 2 < count) {
      const router_internal::Scanned& s = ring[(i - kRouteAhead / 2) % kRouteAhead];
      if (s.look_up) index.PrefetchRecord(s.hash);
    }
    if (i < count) router_internal::Scan(bytes_of(i), index, ring[i % kRouteAhead]);
  }
}

}  // namespace trigd
