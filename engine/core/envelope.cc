#include "core/envelope.h"

#include "common/json_reader.h"
#include "common/json_text.h"
#include "core/envelope_scan.h"
#include "core/envelope_time.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace trigd {
namespace {

// nlohmann's parser is iterative, but copying, comparing and dumping a value recurse; an
// event nested deeper than any real payload could overflow the stack later, in code that
// cannot refuse it. Refusing it here keeps every later step safe.
constexpr size_t kMaxNesting = 64;

// A refusal: `why` takes its reason, for the caller's metric label; the message starts with it.
Status Reject(DeadLetterReason& why, DeadLetterReason reason, const std::string& detail) {
  why = reason;
  return DeadLetterStatus(reason, detail);
}

// A quoted, escaped echo of producer text for a message, cut short so that a dead-letter
// reason stays readable; a cut inside a UTF-8 sequence is replaced, never thrown on.
std::string Quote(std::string_view s) {
  constexpr size_t kMaxEcho = 100;
  std::string text(s.substr(0, kMaxEcho));
  std::string quoted = nlohmann::json(std::move(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > kMaxEcho) quoted += "...";
  return quoted;
}

// What a message says a value was: numbers and booleans as written, anything else by type.
std::string Describe(const nlohmann::json& value) {
  if (value.is_number() || value.is_boolean()) return value.dump();
  return value.type_name();
}

// Follows nlohmann's parse events to know where the parser is, as a path ("payload.dataset",
// "payload.partitions[2]"): the first key that an object holds twice is kept, and the path of
// the value being read names a number too large for a double. nlohmann keeps the last of
// repeated keys without a word, so `"dataset":"a","dataset":"b"` read as dataset "b".
class PathTracker {
 public:
  bool Handle(nlohmann::json::parse_event_t event, const nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start:
      case Event::array_start: {
        EnterElement();
        // Containers are reused level by level: their key lists keep their capacity.
        if (depth_ == stack_.size()) stack_.emplace_back();
        Container& c = stack_[depth_++];
        c.is_array = event == Event::array_start;
        c.next_index = 0;
        c.keys.clear();
        break;
      }
      case Event::object_end:
      case Event::array_end: --depth_; break;
      case Event::key: {
        Container& top = stack_[depth_ - 1];
        top.key = parsed.get<std::string>();
        if (duplicate_.empty() && std::find(top.keys.begin(), top.keys.end(), top.key) != top.keys.end()) {
          duplicate_ = Path(depth_);
          duplicate_key_ = top.key;
        }
        top.keys.push_back(top.key);
        break;
      }
      case Event::value: EnterElement(); break;
    }
    return true;
  }

  // The path of the value being read (after its key or array separator), "" at the top.
  std::string PendingPath() const { return Path(depth_); }
  const std::string& duplicate() const { return duplicate_; }
  const std::string& duplicate_key() const { return duplicate_key_; }

 private:
  struct Container {
    bool is_array = false;
    size_t next_index = 0;  // arrays: the index of the next element
    std::string key;        // objects: the key being read
    std::vector<std::string> keys;
  };

  void EnterElement() {
    if (depth_ > 0 && stack_[depth_ - 1].is_array) ++stack_[depth_ - 1].next_index;
  }

  // Path of the innermost `depth` containers' current member or element. An array's element is
  // the one before next_index once its value event came, the pending one before that; a key
  // names the pending member either way.
  std::string Path(size_t depth) const {
    std::string path;
    for (size_t i = 0; i < depth; ++i) {
      const Container& c = stack_[i];
      if (c.is_array) {
        // Containers below the top are inside an element already entered.
        const size_t index = i + 1 < depth ? c.next_index - 1 : c.next_index;
        path += "[" + std::to_string(index) + "]";
      } else {
        path += (path.empty() ? "" : ".") + c.key;
      }
    }
    return path;
  }

  std::vector<Container> stack_;  // [0, depth_): the containers being read
  size_t depth_ = 0;
  std::string duplicate_;
  std::string duplicate_key_;
};

// A required, non-empty string member of `object`; `path` names it in messages.
Result<std::string> RequiredString(DeadLetterReason& why, const nlohmann::json& object, const char* key,
                                   const std::string& path) {
  auto it = object.find(key);
  if (it == object.end()) return Reject(why, DeadLetterReason::kMissingField, path + " is required");
  if (!it->is_string()) {
    return Reject(why, DeadLetterReason::kBadField, path + ": expected a string, got " + it->type_name());
  }
  const std::string& value = it->get_ref<const std::string&>();
  if (value.empty()) return Reject(why, DeadLetterReason::kBadField, path + ": must not be empty");
  return value;
}

// An optional integer member no smaller than `min`; null counts as absent.
Result<std::optional<int64_t>> OptionalInteger(DeadLetterReason& why, const nlohmann::json& object, const char* key,
                                               const std::string& path, int64_t min, const char* expected) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<int64_t>();
  const std::string message = path + ": expected " + expected + ", got " + Describe(*it);
  if (it->is_number_unsigned()) {
    uint64_t value = it->get<uint64_t>();
    if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Reject(why, DeadLetterReason::kBadField, message);
    }
    if (static_cast<int64_t>(value) < min) return Reject(why, DeadLetterReason::kBadField, message);
    return std::optional<int64_t>(static_cast<int64_t>(value));
  }
  if (it->is_number_integer()) {
    int64_t value = it->get<int64_t>();
    if (value < min) return Reject(why, DeadLetterReason::kBadField, message);
    return std::optional<int64_t>(value);
  }
  return Reject(why, DeadLetterReason::kBadField, message);
}

Result<TimePoint> RequiredTime(DeadLetterReason& why, const nlohmann::json& object, const char* key,
                               const std::string& path) {
  Result<std::string> text = RequiredString(why, object, key, path);
  if (!text.ok()) return text.status();
  std::optional<TimePoint> time = ParseEnvelopeTime(*text);
  if (!time) {
    return Reject(why, DeadLetterReason::kBadField,
                  path + ": invalid time " + Quote(*text) + ": expected RFC 3339, e.g. 2026-11-22T10:00:00Z");
  }
  return *time;
}

Status ParsePartition(DeadLetterReason& why, const nlohmann::json& payload, PartitionPayload& out) {
  Result<std::string> dataset = RequiredString(why, payload, "dataset", "payload.dataset");
  if (!dataset.ok()) return dataset.status();
  out.dataset = std::move(dataset).value();

  auto partitions = payload.find("partitions");
  if (partitions == payload.end()) {
    return Reject(why, DeadLetterReason::kMissingField, "payload.partitions is required");
  }
  if (!partitions->is_array()) {
    return Reject(why, DeadLetterReason::kBadField,
                  std::string("payload.partitions: expected an array, got ") + partitions->type_name());
  }
  // An event that names no partition announces nothing a trigger could count.
  if (partitions->empty()) return Reject(why, DeadLetterReason::kBadField, "payload.partitions: must not be empty");
  for (size_t i = 0; i < partitions->size(); ++i) {
    const nlohmann::json& p = (*partitions)[i];
    const std::string path = "payload.partitions[" + std::to_string(i) + "]";
    if (!p.is_string()) {
      return Reject(why, DeadLetterReason::kBadField, path + ": expected a string, got " + p.type_name());
    }
    if (p.get_ref<const std::string&>().empty()) {
      return Reject(why, DeadLetterReason::kBadField, path + ": must not be empty");
    }
    out.partitions.push_back(p.get<std::string>());
  }

  Result<std::optional<int64_t>> bytes =
      OptionalInteger(why, payload, "bytes", "payload.bytes", 0, "a non-negative integer");
  if (!bytes.ok()) return bytes.status();
  out.bytes = *bytes;
  return Status::Ok();
}

// A custom event's key is optional: without one, each event is its own key (its id), so a leaf
// counts events. `attrs`, when given, is an object (where's paths read into it).
Status ParseCustom(DeadLetterReason& why, const nlohmann::json& payload, const std::string& id, CustomPayload& out) {
  Result<std::string> name = RequiredString(why, payload, "name", "payload.name");
  if (!name.ok()) return name.status();
  out.name = std::move(name).value();
  auto key = payload.find("key");
  if (key == payload.end() || key->is_null()) {
    out.key = id;
  } else {
    Result<std::string> text = RequiredString(why, payload, "key", "payload.key");
    if (!text.ok()) return text.status();
    out.key = std::move(text).value();
  }
  auto attrs = payload.find("attrs");
  if (attrs != payload.end() && !attrs->is_null() && !attrs->is_object()) {
    return Reject(why, DeadLetterReason::kBadField,
                  std::string("payload.attrs: expected an object, got ") + attrs->type_name());
  }
  return Status::Ok();
}

Status ParseProgram(DeadLetterReason& why, const nlohmann::json& payload, ProgramPayload& out) {
  Result<std::string> program = RequiredString(why, payload, "program", "payload.program");
  if (!program.ok()) return program.status();
  out.program = std::move(program).value();

  Result<std::string> run_id = RequiredString(why, payload, "run_id", "payload.run_id");
  if (!run_id.ok()) return run_id.status();
  out.run_id = std::move(run_id).value();

  auto status = payload.find("status");
  if (status == payload.end()) return Reject(why, DeadLetterReason::kMissingField, "payload.status is required");
  if (!status->is_string()) {
    return Reject(why, DeadLetterReason::kBadField,
                  std::string("payload.status: expected a string, got ") + status->type_name());
  }
  std::optional<ProgramStatus> parsed = ProgramStatusFromName(status->get_ref<const std::string&>());
  if (!parsed) {
    return Reject(why, DeadLetterReason::kBadField,
                  "payload.status: unknown status " + Quote(status->get_ref<const std::string&>()) +
                      " (expected started, heartbeat, succeeded, failed or killed)");
  }
  out.status = *parsed;

  Result<std::optional<int64_t>> attempt =
      OptionalInteger(why, payload, "attempt", "payload.attempt", 1, "a positive integer");
  if (!attempt.ok()) return attempt.status();
  out.attempt = attempt->value_or(1);

  auto reason = payload.find("reason");
  if (reason != payload.end() && !reason->is_null()) {
    if (!reason->is_string()) {
      return Reject(why, DeadLetterReason::kBadField,
                    std::string("payload.reason: expected a string, got ") + reason->type_name());
    }
    out.reason = reason->get<std::string>();
  }
  for (auto [name, field] : {std::pair{"lineage", &out.lineage}, std::pair{"worker", &out.worker}}) {
    auto v = payload.find(name);
    if (v == payload.end() || v->is_null()) continue;
    if (!v->is_string()) {
      return Reject(why, DeadLetterReason::kBadField,
                    std::string("payload.") + name + ": expected a string, got " + v->type_name());
    }
    *field = v->get<std::string>();
  }
  return Status::Ok();
}

Status ParseTick(DeadLetterReason& why, const nlohmann::json& payload, TickPayload& out) {
  Result<std::string> schedule = RequiredString(why, payload, "schedule", "payload.schedule");
  if (!schedule.ok()) return schedule.status();
  const size_t slash = schedule->find('/');
  if (slash == 0 || slash == std::string::npos || slash + 1 == schedule->size() ||
      schedule->find('/', slash + 1) != std::string::npos) {
    return Reject(why, DeadLetterReason::kBadField,
                  "payload.schedule: expected \"namespace/name\", got " + Quote(*schedule));
  }
  out.schedule = std::move(schedule).value();

  Result<TimePoint> fire_time = RequiredTime(why, payload, "fire_time", "payload.fire_time");
  if (!fire_time.ok()) return fire_time.status();
  out.fire_time = *fire_time;
  return Status::Ok();
}

}  // namespace

namespace {

Result<Event> ReadEvent(DeadLetterReason& why, nlohmann::json& document);

Result<Event> Parse(DeadLetterReason& why, std::string_view bytes, size_t max_bytes) {
  if (bytes.size() > max_bytes) {
    return Reject(why, DeadLetterReason::kOversized,
                  std::to_string(bytes.size()) + " bytes, more than the limit of " + std::to_string(max_bytes));
  }
  // A tombstone (null value) or an empty produce: said as such, not as a JSON syntax error.
  if (bytes.empty()) return Reject(why, DeadLetterReason::kBadJson, "empty message (no value)");
  if (CheckJsonLimits(bytes, JsonLimits{.max_bytes = max_bytes, .max_depth = kMaxNesting})) {
    return Reject(why, DeadLetterReason::kBadJson, "nested deeper than " + std::to_string(kMaxNesting) + " levels");
  }
  // nlohmann takes a NUL byte for the end of its input: `{...}\0garbage` parsed as `{...}`. JSON
  // text has no place for a raw NUL (not between tokens, not inside a string), so any is refused.
  if (const size_t nul = bytes.find('\0'); nul != std::string_view::npos) {
    return Reject(why, DeadLetterReason::kBadJson,
                  "a NUL byte at byte " + std::to_string(nul) + " (JSON text cannot contain one)");
  }
  PathTracker tracker;
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(bytes.begin(), bytes.end(),
                                     [&tracker](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
                                       return tracker.Handle(event, parsed);
                                     });
  } catch (const nlohmann::json::parse_error&) {
    // A syntax error or ill-formed UTF-8.
    return Reject(why, DeadLetterReason::kBadJson, "not valid JSON (or not valid UTF-8)");
  } catch (const nlohmann::json::out_of_range& e) {
    // Valid JSON, but a number beyond a double ("bytes": 1e400): said where it is. nlohmann's
    // message ends "number overflow parsing '<token>'".
    const std::string what = e.what();
    const size_t open = what.find('\''), close = what.rfind('\'');
    const std::string token = open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : "";
    const std::string path = tracker.PendingPath();
    return Reject(why, DeadLetterReason::kBadField,
                  (path.empty() ? std::string("value") : path) + ": number " + Quote(token) +
                      " is out of range (beyond a double)");
  }
  if (!tracker.duplicate().empty()) {
    return Reject(why, DeadLetterReason::kBadJson,
                  tracker.duplicate() + ": duplicate key " + Quote(tracker.duplicate_key()) +
                      " (a key appears at most once in an object)");
  }
  if (!document.is_object()) {
    return Reject(why, DeadLetterReason::kNotObject,
                  std::string("expected a JSON object, got ") + document.type_name());
  }

  // A string holding U+0000 is valid JSON, but PostgreSQL's text and jsonb cannot store it:
  // accepted, the event would fail every transaction it is part of, and ingestion would retry
  // that batch forever. Escaped is the only way JSON spells it (a raw control byte in a string
  // is not valid JSON), and in valid JSON every backslash starts an escape.
  for (size_t i = bytes.find('\\'); i != std::string_view::npos; i = bytes.find('\\', i + 2)) {
    if (bytes.substr(i + 1, 5) == "u0000") {
      return Reject(why, DeadLetterReason::kBadJson,
                    "a string holds \\u0000 (NUL) at byte " + std::to_string(i) + ", which trigd cannot store");
    }
  }

  return ReadEvent(why, document);
}

// The event of a parsed envelope that is a JSON object: its fields read and checked.
Result<Event> ReadEvent(DeadLetterReason& why, nlohmann::json& document) {
  Event event;
  Result<std::string> id = RequiredString(why, document, "id", "id");
  if (!id.ok()) return id.status();
  if (id->size() > kMaxEventIdBytes) {
    return Reject(
        why, DeadLetterReason::kBadField,
        "id: " + std::to_string(id->size()) + " bytes, more than the limit of " + std::to_string(kMaxEventIdBytes));
  }
  event.id = std::move(id).value();

  auto type = document.find("type");
  if (type == document.end()) return Reject(why, DeadLetterReason::kMissingField, "type is required");
  if (!type->is_string()) {
    return Reject(why, DeadLetterReason::kBadField, std::string("type: expected a string, got ") + type->type_name());
  }
  const std::string& type_name = type->get_ref<const std::string&>();
  if (type_name == "partition") {
    event.type = EventType::kPartition;
  } else if (type_name == "program") {
    event.type = EventType::kProgram;
  } else if (type_name == "tick") {
    event.type = EventType::kTick;
  } else if (type_name == "custom") {
    event.type = EventType::kCustom;
  } else {
    return Reject(why, DeadLetterReason::kUnknownType,
                  Quote(type_name) + " (expected partition, program, tick or custom)");
  }

  Result<TimePoint> time = RequiredTime(why, document, "time", "time");
  if (!time.ok()) return time.status();
  event.time = *time;

  auto payload = document.find("payload");
  if (payload == document.end()) return Reject(why, DeadLetterReason::kMissingField, "payload is required");
  if (!payload->is_object()) {
    return Reject(why, DeadLetterReason::kBadField,
                  std::string("payload: expected an object, got ") + payload->type_name());
  }
  Status status;
  switch (event.type) {
    case EventType::kPartition: status = ParsePartition(why, *payload, event.partition); break;
    case EventType::kProgram: status = ParseProgram(why, *payload, event.program); break;
    case EventType::kTick: status = ParseTick(why, *payload, event.tick); break;
    case EventType::kCustom: status = ParseCustom(why, *payload, event.id, event.custom); break;
  }
  if (!status.ok()) return status;
  event.payload = std::move(*payload);
  return event;
}

}  // namespace

Result<Event> ParseEnvelope(std::string_view bytes, size_t max_bytes, DeadLetterReason* reason) {
  DeadLetterReason why = DeadLetterReason::kBadJson;
  Result<Event> event = Parse(why, bytes, max_bytes);
  if (!event.ok() && reason) *reason = why;
  return event;
}

Result<Event> ParseScannedEnvelope(std::string_view bytes, bool payload) {
  if (!payload) {
    Event event;
    if (ScanEnvelopeEvent(bytes, event)) return event;
  }
  // The scan ruled out every refusal that Parse checks before reading the fields (size,
  // nesting, NUL, \u0000, duplicate keys, numbers beyond a double, ill-formed UTF-8), so the
  // plain parser reads the document: no path tracking, no extra passes over the bytes.
  nlohmann::json document = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  DeadLetterReason why = DeadLetterReason::kBadJson;
  if (document.is_object()) {
    if (Result<Event> event = ReadEvent(why, document); event.ok()) return event;
  }
  // Not reached for bytes the scanner accepted; the authority says why, should it be.
  return ParseEnvelope(bytes);
}

Status DeadLetterStatus(DeadLetterReason reason, const std::string& detail) {
  return Invalid(std::string(DeadLetterReasonName(reason)) + ": " + detail);
}

namespace {

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                       static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(v >> shift) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// The bytes as JSON text if they are well-formed UTF-8, else nothing.
std::optional<std::string> StrictJsonString(std::string_view bytes) {
  try {
    return nlohmann::json(std::string(bytes)).dump();
  } catch (const nlohmann::json::type_error&) {
    return std::nullopt;
  }
}

std::string DeadLetterWith(const Status& error, std::string_view topic, int partition, int64_t offset,
                           std::string_view original, size_t whole_size) {
  nlohmann::json letter = {{"reason", error.message()}, {"topic", topic}, {"partition", partition}, {"offset", offset}};
  std::string text = letter.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text.pop_back();  // the closing brace: the original goes in as text already escaped
  text += ",\"original\":";
  if (std::optional<std::string> exact = StrictJsonString(original)) {
    text += *exact;
  } else {
    text += nlohmann::json(std::string(original)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    text += ",\"original_base64\":\"" + Base64(original) + "\"";
  }
  if (original.size() < whole_size) {
    text += ",\"original_truncated\":true,\"original_bytes\":" + std::to_string(whole_size);
  }
  text += '}';
  return text;
}

}  // namespace

std::string DeadLetterJson(const Status& error, std::string_view topic, int partition, int64_t offset,
                           std::string_view original) {
  std::string whole = DeadLetterWith(error, topic, partition, offset, original, original.size());
  if (whole.size() <= kMaxPublishedBytes) return whole;
  size_t keep = std::min(original.size(), kDeadLetterOriginalKeep);
  // Not inside a UTF-8 sequence: back up over continuation bytes (at most 3).
  for (size_t back = 0;
       back < 3 && keep > 0 && keep < original.size() && (static_cast<unsigned char>(original[keep]) & 0xC0) == 0x80;
       ++back) {
    --keep;
  }
  return DeadLetterWith(error, topic, partition, offset, original.substr(0, keep), original.size());
}

std::string TriggeredByWithin(std::string_view triggered_by, size_t max_bytes, bool& cut) {
  cut = false;
  if (triggered_by.size() <= max_bytes) return std::string(triggered_by);
  nlohmann::json events = nlohmann::json::parse(triggered_by, nullptr, false);
  if (!events.is_array()) return "[]";
  cut = true;
  static const std::map<std::string, std::vector<std::string>> kFields = {
      {"partition", {"dataset", "partitions", "bytes"}},
      {"program", {"program", "run_id", "status", "attempt", "reason", "lineage"}},
      {"tick", {"schedule", "fire_time"}},
      {"custom", {"name", "key"}},
  };
  for (nlohmann::json& e : events) {
    if (!e.is_object()) continue;
    auto payload = e.find("payload");
    if (payload == e.end() || !payload->is_object()) continue;
    nlohmann::json kept = nlohmann::json::object();
    auto fields = kFields.find(e.value("type", ""));
    if (fields != kFields.end()) {
      for (const std::string& f : fields->second) {
        if (auto v = payload->find(f); v != payload->end()) kept[f] = *v;
      }
    }
    *payload = std::move(kept);
  }
  std::string text = events.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() <= max_bytes) return text;
  for (nlohmann::json& e : events) {
    if (e.is_object()) e.erase("payload");
  }
  text = events.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // Ids and types alone still too long (up to 1,000 ids of up to 1 KiB): the newest that fit.
  size_t drop = 0;
  for (size_t over = text.size() > max_bytes ? text.size() - max_bytes : 0; over > 0 && drop < events.size(); ++drop) {
    const size_t size = events[drop].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size() + 1;
    over = size >= over ? 0 : over - size;
  }
  if (drop == 0) return text;
  events.erase(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(drop));
  return events.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string TickEnvelopeText(std::string_view id, std::string_view time, std::string_view schedule,
                             std::string_view fire_time) {
  // nlohmann's objects keep their keys sorted: id, payload (fire_time, schedule), time, type.
  std::string out = "{\"id\":";
  out.reserve(96 + id.size() + schedule.size());
  AppendJsonString(out, id);
  out += ",\"payload\":{\"fire_time\":";
  AppendJsonString(out, fire_time);
  out += ",\"schedule\":";
  AppendJsonString(out, schedule);
  out += "},\"time\":";
  AppendJsonString(out, time);
  out += ",\"type\":\"tick\"}";
  return out;
}

nlohmann::json EnvelopeToJson(const Event& event) {
  nlohmann::json payload;
  if (!event.payload.is_null()) {
    payload = event.payload;
  } else {
    payload = nlohmann::json::object();
    switch (event.type) {
      case EventType::kPartition:
        payload["dataset"] = event.partition.dataset;
        payload["partitions"] = event.partition.partitions;
        if (event.partition.bytes) payload["bytes"] = *event.partition.bytes;
        break;
      case EventType::kProgram:
        payload["program"] = event.program.program;
        payload["run_id"] = event.program.run_id;
        payload["status"] = ProgramStatusName(event.program.status);
        payload["attempt"] = event.program.attempt;
        if (!event.program.reason.empty()) payload["reason"] = event.program.reason;
        if (!event.program.lineage.empty()) payload["lineage"] = event.program.lineage;
        break;
      case EventType::kTick:
        payload["schedule"] = event.tick.schedule;
        payload["fire_time"] = FormatTime(event.tick.fire_time);
        break;
      case EventType::kCustom:
        payload["name"] = event.custom.name;
        payload["key"] = event.custom.key;
        break;
    }
  }
  return {{"id", event.id},
          {"type", EventTypeName(event.type)},
          {"time", FormatTime(event.time)},
          {"payload", std::move(payload)}};
}

}  // namespace trigd
