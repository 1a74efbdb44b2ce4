// A fast look at an event envelope (SPEC §3) for the ingest hot path: one pass over the bytes,
// no allocation, no JSON document. Most events match no schedule, and for those trigd needs
// only to know that the envelope is valid and what its event key is.
//
// The scanner only ever answers "ParseEnvelope accepts these bytes, and these are the id, type,
// time and key it reads" or "not sure". Refusals, and every dead-letter reason and message,
// stay with ParseEnvelope, the authority: anything the scanner does not fully recognise (an
// escape in a field it reads, a duplicate key, a number it would have to convert, deep
// nesting, a byte-order mark...) is "not sure", and the caller parses it with ParseEnvelope.
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

#include "core/envelope.h"
#include "model/event.h"

namespace trigd {

struct EnvelopeScan {
  EventType type = EventType::kPartition;
  std::string_view id;  // views into the scanned bytes
  TimePoint time;
  std::string_view key_name;  // payload.dataset, payload.program or payload.schedule

  // The key of the reverse index, as Event::EventKey: "partition:<dataset>", ...
  std::string EventKey() const;
  // The same, written into `out` (reused across events, so no allocation once it is large
  // enough).
  void EventKeyInto(std::string& out) const;
};

// True: ParseEnvelope(bytes, max_bytes) accepts `bytes`, and its Event has this id, type, time
// and key (out's views point into `bytes`). False: not sure; ask ParseEnvelope.
bool ScanEnvelope(std::string_view bytes, EnvelopeScan& out, size_t max_bytes = kMaxEventBytes);

// ParseEnvelope(bytes), for bytes that ScanEnvelope accepted: the same Event, without the
// checks the scan already made (about half of ParseEnvelope's time for a small envelope).
// Without `payload`, Event::payload is left null for partition, program and tick events (their
// typed fields hold all that trigger evaluation reads; a custom event keeps its payload, which
// its `where` reads): the scanner's reading is taken when it can give every field, which
// builds no JSON document (the replay, whose launches carry no payloads).
Result<Event> ParseScannedEnvelope(std::string_view bytes, bool payload = true);

// For bytes that ScanEnvelope accepts: the Event ParseEnvelope reads, with a null payload, read
// by the scanner; false (and `event` unspecified) when a member it would have to unescape holds
// an escape. A payload field that ParseEnvelope learns to read must be read here too (and
// compared by tests/core/envelope_agreement.h), or the replay sees it empty.
bool ScanEnvelopeEvent(std::string_view bytes, Event& event);

}  // namespace trigd
