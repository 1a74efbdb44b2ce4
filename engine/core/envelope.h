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
// longer id fails every ingest transaction it is part of. 1 KiB leaves room for any id a
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
//   unknown_type   e.g. "unknown_type: \"parquet\" (expected partition, program, tick or custom)"
// Unknown extra fields are allowed (producers may add their own). A refusal sets *reason (when
// given) to the reason its message starts with: the metric label, never read back from text.
Result<Event> ParseEnvelope(std::string_view bytes, size_t max_bytes = kMaxEventBytes,
                            DeadLetterReason* reason = nullptr);

// The kInvalid status of a refused event: "<reason>: <detail>", as ParseEnvelope makes them.
Status DeadLetterStatus(DeadLetterReason reason, const std::string& detail);

// The largest message trigd publishes (dead letters, launch requests): under librdkafka's
// default message.max.bytes (1,000,000) and Kafka's (1,048,588). A larger one would be refused by
// the producer on every try and stay in the outbox for good (docs/adr/0022-message-size-limits.md).
inline constexpr size_t kMaxPublishedBytes = 900000;
// How much of a message too large to publish whole a dead letter keeps (at most 6 bytes of JSON
// each, escaped, plus its base64 copy: well under kMaxPublishedBytes).
inline constexpr size_t kDeadLetterOriginalKeep = 64 * 1024;

// The dead letter of a message trigd cannot process (SPEC §3): a JSON object with `reason`
// (the status message), `topic`, `partition`, `offset` and `original`, the message's bytes as a
// string. Bytes that are not UTF-8 are replaced by U+FFFD in `original`, and then
// `original_base64` holds them exactly. A dead letter that would be larger than
// kMaxPublishedBytes keeps the first kDeadLetterOriginalKeep bytes (cut at a character
// boundary) and says so: `original_truncated` true and `original_bytes`, the whole size (the
// whole message stays on its topic, at that partition and offset, for the topic's retention).
std::string DeadLetterJson(const Status& error, std::string_view topic, int partition, int64_t offset,
                           std::string_view original);

// A job's triggering events (the JSON array of {id, type, payload} trigd stores) made to fit a
// launch request of at most `max_bytes`: first each payload keeps only the fields of its type
// (partition: dataset, partitions, bytes; program: program, run_id, status, attempt, reason;
// tick: schedule, fire_time; custom: name, key), then, if that is still too large, the payloads go and each entry
// keeps its id and type. Returns the array unchanged if it fits; `cut` says whether it was cut.
std::string TriggeredByWithin(std::string_view triggered_by, size_t max_bytes, bool& cut);

// The envelope of an event trigd produces itself (ticks, lost runs, upstream failures).
nlohmann::json EnvelopeToJson(const Event& event);

// The text of EnvelopeToJson(e).dump() for a tick trigd produces (payload: schedule and fire
// time), written directly: a storm writes one copy of each tick for observers, and building the
// tree to dump it was most of the tick's own CPU in trigd. `time` and `fire_time` as FormatTime
// prints them.
std::string TickEnvelopeText(std::string_view id, std::string_view time, std::string_view schedule,
                             std::string_view fire_time);

}  // namespace trigd
