// Fuzzes ParseEnvelope (SPEC §3) with arbitrary bytes. Beyond "no crash, leak or sanitizer
// report": a refused envelope names one of the documented dead-letter reasons, and an accepted
// one survives EnvelopeToJson -> dump -> ParseEnvelope with the same id, type, time, payload
// and event key (trigd re-publishes envelopes it builds this way).
// The ingest fast path is checked against the parser as an oracle: whatever ScanEnvelope
// accepts, ParseEnvelope accepts with the same id, type, time and key; and wherever
// ParseEnvelopeTimeFast reads a time (the input taken as one), the reference reads the same; and
// an accepted envelope with a key twice or a byte after it is refused by both
// (VariantDisagreement).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "../core/envelope_agreement.h"
#include "core/envelope.h"
#include "core/envelope_scan.h"
#include "core/envelope_time.h"
#include "fuzz_check.h"

namespace trigd {
namespace {

std::string KeyPrefix(EventType type) {
  switch (type) {
    case EventType::kPartition: return "partition:";
    case EventType::kProgram: return "program:";
    case EventType::kTick: return "time:";
    case EventType::kCustom: return "custom:";
  }
  return "?";
}

void CheckTime(std::string_view text) {
  std::optional<TimePoint> fast = ParseEnvelopeTimeFast(text);
  if (!fast) return;
  std::optional<TimePoint> reference = ParseEnvelopeTimeReference(text);
  FUZZ_CHECK(reference.has_value(), "fast path read a time the reference refuses: " + std::string(text));
  FUZZ_CHECK(*reference == *fast, "fast path read " + FormatTime(*fast) + ", the reference " + FormatTime(*reference) +
                                      ": " + std::string(text));
}

void CheckEnvelope(std::string_view bytes) {
  if (bytes.size() <= 64) CheckTime(bytes);
  DeadLetterReason reason = DeadLetterReason::kUnknownType;
  Result<Event> event = ParseEnvelope(bytes, kMaxEventBytes, &reason);
  EnvelopeScan scan;
  if (ScanEnvelope(bytes, scan)) {
    FUZZ_CHECK(event.ok(), "scanner accepted what the parser refuses: " + event.status().message());
    FUZZ_CHECK(scan.id == event->id, event->id);
    FUZZ_CHECK(scan.type == event->type, event->id);
    FUZZ_CHECK(scan.time == event->time, FormatTime(scan.time) + " vs " + FormatTime(event->time));
    FUZZ_CHECK(scan.EventKey() == event->EventKey(), scan.EventKey() + " vs " + event->EventKey());
  }
  if (!event.ok()) {
    FUZZ_CHECK(event.status().code() == StatusCode::kInvalid, event.status().message());
    // The label the metric gets is the reason the message starts with.
    FUZZ_CHECK(event.status().message().rfind(std::string(DeadLetterReasonName(reason)) + ": ", 0) == 0,
               event.status().message());
    return;
  }
  const Event& e = *event;
  FUZZ_CHECK(!e.id.empty(), "accepted an empty id");
  const std::string variant = VariantDisagreement(bytes);
  FUZZ_CHECK(variant.empty(), variant);
  FUZZ_CHECK(e.payload.is_object(), "payload is not an object");
  const std::string key = e.EventKey();
  const std::string prefix = KeyPrefix(e.type);
  FUZZ_CHECK(key.size() > prefix.size() && key.compare(0, prefix.size(), prefix) == 0, key);

  // Strict dump: the parser accepted only valid UTF-8, so this must not throw.
  const std::string dumped = EnvelopeToJson(e).dump();
  Result<Event> again = ParseEnvelope(dumped);
  FUZZ_CHECK(again.ok(), again.status().message() + " for " + dumped);
  FUZZ_CHECK(again->id == e.id, dumped);
  FUZZ_CHECK(again->type == e.type, dumped);
  FUZZ_CHECK(again->time == e.time, dumped);
  FUZZ_CHECK(again->payload == e.payload, dumped);
  FUZZ_CHECK(again->EventKey() == key, dumped);
  if (e.type == EventType::kTick) FUZZ_CHECK(again->tick.fire_time == e.tick.fire_time, dumped);
  if (e.type == EventType::kCustom) {
    FUZZ_CHECK(again->custom.name == e.custom.name && again->custom.key == e.custom.key, dumped);
    FUZZ_CHECK(!e.custom.key.empty(), "custom event without a key: " + dumped);
  }
}

}  // namespace
}  // namespace trigd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  trigd::CheckEnvelope(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
