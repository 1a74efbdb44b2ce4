// Checks that ScanEnvelope (the ingest fast path) agrees with ParseEnvelope (the authority):
// whatever the scanner accepts, the parser accepts, with the same id, type, time and key, and
// ParseScannedEnvelope reads the same event; and both refuse an accepted envelope made
// ambiguous (a key twice) or followed by other bytes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/envelope.h"
#include "core/envelope_scan.h"

namespace trigd {

// "" when they agree on `bytes`, else what differs. `scanned` (optional) is set to whether
// the scanner accepted.
inline std::string ScanDisagreement(std::string_view bytes, size_t max_bytes = kMaxEventBytes,
                                    bool* scanned = nullptr) {
  EnvelopeScan scan;
  const bool accepted = ScanEnvelope(bytes, scan, max_bytes);
  if (scanned) *scanned = accepted;
  if (!accepted) return "";
  Result<Event> event = ParseEnvelope(bytes, max_bytes);
  if (!event.ok()) return "scanner accepted what the parser refuses: " + event.status().message();
  if (event->id != scan.id) return "id: parser " + event->id + ", scanner " + std::string(scan.id);
  if (event->type != scan.type) return "type differs";
  if (event->time != scan.time) {
    return "time: parser " + FormatTime(event->time) + ", scanner " + FormatTime(scan.time);
  }
  if (event->EventKey() != scan.EventKey()) {
    return "key: parser " + event->EventKey() + ", scanner " + scan.EventKey();
  }
  // The parse of what the scanner accepted (ingest's path) reads the same event, and without
  // the payload (the replay's path) the same typed fields.
  const Event& a = *event;
  auto same_fields = [&a](const Event& b) {
    return a.id == b.id && a.type == b.type && a.time == b.time && a.partition.dataset == b.partition.dataset &&
           a.partition.partitions == b.partition.partitions && a.partition.bytes == b.partition.bytes &&
           a.program.program == b.program.program && a.program.run_id == b.program.run_id &&
           a.program.status == b.program.status && a.program.attempt == b.program.attempt &&
           a.program.reason == b.program.reason && a.program.lineage == b.program.lineage &&
           a.program.worker == b.program.worker && a.tick.schedule == b.tick.schedule &&
           a.tick.fire_time == b.tick.fire_time;
  };
  Result<Event> fast = ParseScannedEnvelope(bytes);
  if (!fast.ok()) return "ParseScannedEnvelope refused: " + fast.status().message();
  if (!same_fields(*fast) || a.payload != fast->payload) {
    return "ParseScannedEnvelope reads another event: " + fast->payload.dump() + " for " + a.payload.dump();
  }
  Result<Event> bare = ParseScannedEnvelope(bytes, /*payload=*/false);
  if (!bare.ok()) return "ParseScannedEnvelope without payload refused: " + bare.status().message();
  if (!same_fields(*bare)) return "ParseScannedEnvelope without payload reads other fields for " + a.payload.dump();
  if (!bare->payload.is_null() && bare->payload != a.payload) {
    return "ParseScannedEnvelope without payload kept another payload: " + bare->payload.dump();
  }
  return "";
}

// For `bytes` that ParseEnvelope accepts: "" when the parser refuses, and the scanner does not
// accept, each of its variants with a key twice (in the envelope, in the payload) or with a byte
// after the value (a NUL, which nlohmann takes for the end of its input, or another); else what
// differs. The parser's refusal of a duplicate names the key.
inline std::string VariantDisagreement(std::string_view bytes) {
  Result<Event> event = ParseEnvelope(bytes);
  if (!event.ok()) return "";
  struct Variant {
    std::string text;
    std::string reason;  // the start of the parser's message
  };
  std::vector<Variant> variants;
  for (std::string_view tail : {std::string_view("\0", 1), std::string_view("x"), std::string_view(" \0", 2)}) {
    variants.push_back({std::string(bytes) + std::string(tail), "bad_json: "});
  }
  // Built from the canonical dump, whose first byte opens the envelope and whose payload
  // object is written `"payload":{`.
  const std::string dumped = EnvelopeToJson(*event).dump();
  variants.push_back({"{\"id\":\"dup\"," + dumped.substr(1), "bad_json: id: duplicate key \"id\" "});
  const nlohmann::json& payload = event->payload;
  if (!payload.empty()) {
    const std::string key = payload.begin().key();
    const std::string marker = "\"payload\":{";
    const size_t at = dumped.find(marker);
    if (at != std::string::npos) {
      std::string text = dumped;
      text.insert(at + marker.size(), nlohmann::json(key).dump() + ":null,");
      // The key itself is quoted after this, cut when long.
      variants.push_back({text, "bad_json: payload." + key + ": duplicate key \""});
    }
  }
  for (const Variant& v : variants) {
    Result<Event> parsed = ParseEnvelope(v.text);
    if (parsed.ok()) return "parser accepted " + v.text;
    if (parsed.status().message().rfind(v.reason, 0) != 0) {
      return "parser refused " + v.text + " with " + parsed.status().message() + ", expected " + v.reason + "...";
    }
    EnvelopeScan scan;
    if (ScanEnvelope(v.text, scan)) return "scanner accepted " + v.text;
  }
  return "";
}

}  // namespace trigd
