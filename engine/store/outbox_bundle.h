// Outbox bundles: many messages for one topic in a single outbox row (outbox.bundle = true).
// A storm's ticks (one copy of each on trigd.events.time, for observers) as one outbox row
// each, written, claimed and deleted like a launch request, would cost a sixth of a 100k-schedule
// storm's time. A tick transaction writes them as bundles of at most kBundleMessages, and the relay
// publishes each message and deletes the row only once all of them are confirmed (a partial
// failure re-sends the whole bundle; ingestion skips trigd's own ticks by their id anyway).
//
// Format: the messages' keys and payloads in turn, each as a netstring ("<length>:<bytes>,",
// length in decimal bytes), so any text goes through unchanged. Only engine/store uses it.
#pragma once

#include <charconv>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace trigd::pg_internal {

constexpr size_t kBundleMessages = 1000;

inline void AppendNetstring(std::string& out, std::string_view s) {
  char buf[24];
  auto end = std::to_chars(buf, buf + sizeof buf, s.size()).ptr;
  out.append(buf, end);
  out += ':';
  out.append(s);
  out += ',';
}

inline void AppendToBundle(std::string& bundle, std::string_view key, std::string_view payload) {
  AppendNetstring(bundle, key);
  AppendNetstring(bundle, payload);
}

// The (key, payload) pairs of a bundle, or an error naming the offset where it is malformed.
inline Result<std::vector<std::pair<std::string, std::string>>> ParseBundle(std::string_view bundle) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t pos = 0;
  auto next = [&](std::string& into) -> bool {
    size_t length = 0;
    auto [end, ec] = std::from_chars(bundle.data() + pos, bundle.data() + bundle.size(), length);
    if (ec != std::errc() || end == bundle.data() + pos) return false;
    size_t start = static_cast<size_t>(end - bundle.data());
    if (start >= bundle.size() || bundle[start] != ':') return false;
    ++start;
    if (length > bundle.size() - start || start + length >= bundle.size() || bundle[start + length] != ',')
      return false;
    into.assign(bundle.substr(start, length));
    pos = start + length + 1;
    return true;
  };
  while (pos < bundle.size()) {
    std::pair<std::string, std::string> message;
    const size_t at = pos;
    if (!next(message.first) || pos >= bundle.size() || !next(message.second)) {
      return Internal("outbox bundle malformed at byte " + std::to_string(at) + " of " + std::to_string(bundle.size()));
    }
    out.push_back(std::move(message));
  }
  return out;
}

}  // namespace trigd::pg_internal
