// Checks that ScanEnvelope (the ingest fast path) agrees with ParseEnvelope (the authority):
// whatever the scanner accepts, the parser accepts, with the same id, type, time and key.
#pragma once

#include <string>
#include <string_view>

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
  return "";
}

}  // namespace trigd
