// The event envelope of SPEC §3: bytes from an event topic -> Event, or the reason it goes to
// the dead-letter topic. Pure: no I/O; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "model/event.h"

namespace trigd {

inline constexpr size_t kMaxEventBytes = 1 << 20;
// An event id is stored in a B-tree (de-duplication), whose entries hold at most 2,704 bytes: a
// longer id failed every ingest transaction it was part of. 1 KiB leaves room for any id a
// producer makes (a UUID is 36 bytes, trigd's own tick ids about 300 at most).
inline constexpr size_t kMaxEventIdBytes = 1024;

// kInvalid for anything trigd cannot process; the message is "<reason>: <detail>", where
// <reason> is one of the dead-letter reasons (a low-cardinality metric label):
//   oversized      more than max_bytes
//   bad_json       not valid UTF-8 JSON
//   not_object     valid JSON that is not an object
//   missing_field  e.g. "missing_field: payload.dataset is required"
//   bad_field      a field of the wrong type or value, e.g. "bad_field: payload.status: unknown
//                  status \"done\"", "bad_field: time: invalid time ...", an empty id, an
//                  id longer than kMaxEventIdBytes
//   unknown_type   e.g. "unknown_type: \"parquet\" (expected partition, program or tick)"
// Unknown extra fields are allowed (producers may add their own).
Result<Event> ParseEnvelope(std::string_view bytes, size_t max_bytes = kMaxEventBytes);

// The dead-letter reason of a ParseEnvelope status: the text before the first ':'.
std::string DeadLetterReason(const Status& status);

// The envelope of an event trigd produces itself (ticks, lost runs, upstream failures).
nlohmann::json EnvelopeToJson(const Event& event);

}  // namespace trigd
