#include "core/envelope.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "core/envelope_agreement.h"

namespace trigd {
namespace {

// Every envelope of these tests is also given to the ingest fast path (ScanEnvelope), which
// must agree with the parser on whatever it accepts.
Result<Event> Parse(std::string_view bytes, size_t max_bytes = kMaxEventBytes) {
  EXPECT_EQ(ScanDisagreement(bytes, max_bytes), "") << bytes.substr(0, 300);
  return ParseEnvelope(bytes, max_bytes);
}

TimePoint At(const char* rfc3339) { return ParseTime(rfc3339).value(); }

// An envelope with `payload` spliced in as raw JSON text.
std::string Envelope(const std::string& type, const std::string& payload) {
  return R"({"id": "e-1", "type": ")" + type + R"(", "time": "2026-11-22T10:00:00Z", "payload": )" + payload + "}";
}

std::string Rejection(std::string_view bytes, size_t max_bytes = kMaxEventBytes) {
  Result<Event> event = Parse(bytes, max_bytes);
  EXPECT_FALSE(event.ok()) << bytes;
  if (event.ok()) return "";
  EXPECT_EQ(event.status().code(), StatusCode::kInvalid);
  return event.status().message();
}

// The reason ParseEnvelope gives a refusal (the metric label), checked against the start of
// its message (the dead letter's reason text): the two never disagree.
std::string Reason(std::string_view bytes) {
  DeadLetterReason reason = DeadLetterReason::kUnknownType;
  Result<Event> event = ParseEnvelope(bytes, kMaxEventBytes, &reason);
  if (event.ok()) return "ok";
  const std::string name = DeadLetterReasonName(reason);
  EXPECT_EQ(event.status().message().substr(0, name.size() + 2), name + ": ") << bytes;
  return name;
}

// --- Accepted envelopes ----------------------------------------------------------------------

TEST(EnvelopeTest, ParsesPartitionEvent) {
  Result<Event> event =
      Parse(Envelope("partition", R"({"dataset": "sales.raw", "partitions": ["dt=2026-11-22/h=10", "x"],
                       "bytes": 1048576})"));
  ASSERT_TRUE(event.ok()) << event.status().message();
  EXPECT_EQ(event->id, "e-1");
  EXPECT_EQ(event->type, EventType::kPartition);
  EXPECT_EQ(event->time, At("2026-11-22T10:00:00Z"));
  EXPECT_EQ(event->partition.dataset, "sales.raw");
  EXPECT_EQ(event->partition.partitions, (std::vector<std::string>{"dt=2026-11-22/h=10", "x"}));
  EXPECT_EQ(event->partition.bytes, 1048576);
  EXPECT_EQ(event->EventKey(), "partition:sales.raw");
  EXPECT_EQ(event->payload["dataset"], "sales.raw");
  EXPECT_EQ(event->payload["bytes"], 1048576);
}

TEST(EnvelopeTest, PartitionBytesAreOptional) {
  Result<Event> event = Parse(Envelope("partition", R"({"dataset": "d", "partitions": ["p"]})"));
  ASSERT_TRUE(event.ok()) << event.status().message();
  EXPECT_FALSE(event->partition.bytes.has_value());
  event = Parse(Envelope("partition", R"({"dataset": "d", "partitions": ["p"],
                                                  "bytes": null})"));
  ASSERT_TRUE(event.ok()) << event.status().message();
  EXPECT_FALSE(event->partition.bytes.has_value());
  event = Parse(Envelope("partition", R"({"dataset": "d", "partitions": ["p"],
                                                  "bytes": 0})"));
  ASSERT_TRUE(event.ok()) << event.status().message();
  EXPECT_EQ(event->partition.bytes, 0);
}

TEST(EnvelopeTest, ParsesProgramEventWithDefaults) {
  Result<Event> event =
      Parse(Envelope("program", R"({"program": "sales.ingest", "run_id": "r-7", "status": "failed"})"));
  ASSERT_TRUE(event.ok()) << event.status().message();
  EXPECT_EQ(event->type, EventType::kProgram);
  EXPECT_EQ(event->program.program, "sales.ingest");
  EXPECT_EQ(event->program.run_id, "r-7");
  EXPECT_EQ(event->program.status, ProgramStatus::kFailed);
  EXPECT_EQ(event->program.attempt, 1);
  EXPECT_EQ(event->program.reason, "");
  EXPECT_EQ(event->EventKey(), "program:sales.ingest");
}

TEST(EnvelopeTest, ParsesEveryProgramStatusAttemptAndReason) {
  for (const char* status : {"started", "heartbeat", "succeeded", "failed", "killed"}) {
    Result<Event> event = Parse(Envelope("program", std::string(R"({"program": "p", "run_id": "r", "status": ")") +
                                                        status + R"(", "attempt": 3, "reason": "lost"})"));
    ASSERT_TRUE(event.ok()) << status << ": " << event.status().message();
    EXPECT_STREQ(ProgramStatusName(event->program.status), status);
    EXPECT_EQ(event->program.attempt, 3);
    EXPECT_EQ(event->program.reason, "lost");
  }
}

TEST(EnvelopeTest, ParsesTickEvent) {
  Result<Event> event =
      Parse(Envelope("tick", R"({"schedule": "default/nightly", "fire_time": "2026-11-22T05:00:00Z"})"));
  ASSERT_TRUE(event.ok()) << event.status().message();
  EXPECT_EQ(event->type, EventType::kTick);
  EXPECT_EQ(event->tick.schedule, "default/nightly");
  EXPECT_EQ(event->tick.fire_time, At("2026-11-22T05:00:00Z"));
  EXPECT_EQ(event->EventKey(), "time:default/nightly");
}

TEST(EnvelopeTest, AcceptsTimeWithOffsetAndFraction) {
  Result<Event> event = Parse(
      R"({"id": "x", "type": "partition", "time": "2026-11-22T11:00:00.250+01:00",
          "payload": {"dataset": "d", "partitions": ["p"]}})");
  ASSERT_TRUE(event.ok()) << event.status().message();
  EXPECT_EQ(event->time, At("2026-11-22T10:00:00.250Z"));
}

TEST(EnvelopeTest, AcceptsMicroAndNanosecondsCutToMilliseconds) {
  const std::string payload = R"(, "payload": {"dataset": "d", "partitions": ["p"]}})";
  Result<Event> micros = Parse(R"({"id": "x", "type": "partition", "time": "2026-11-22T10:00:00.123456Z")" + payload);
  ASSERT_TRUE(micros.ok()) << micros.status().message();
  EXPECT_EQ(micros->time, At("2026-11-22T10:00:00.123Z"));
  Result<Event> nanos =
      Parse(R"({"id": "x", "type": "partition", "time": "2026-11-22t11:00:00.999999999-01:00")" + payload);
  ASSERT_TRUE(nanos.ok()) << nanos.status().message();
  EXPECT_EQ(nanos->time, At("2026-11-22T12:00:00.999Z"));
}

TEST(EnvelopeTest, RejectsTimesThatAreNotRfc3339) {
  for (const char* time :
       {"2026-1-2T10:00:00Z", "+2026-11-22T10:00:00Z", "2026-11-22T10:00:00", "2026-11-22T10:00:00-",
        "2026-11-22T10:00:00-1", "2026-11-22T10:00Z", "2026-11-22T10:00:00.Z", "2026-11-22T10:00:00+0100",
        "2026-11-22T10:00:00Zjunk", "2026-02-30T10:00:00Z", "2026-11-22T25:00:00Z", "2026-11-22 10:00:00Z", ""}) {
    const std::string text = std::string(R"({"id": "x", "type": "partition", "time": ")") + time +
                             R"(", "payload": {"dataset": "d", "partitions": ["p"]}})";
    EXPECT_EQ(Reason(text), "bad_field") << time;
  }
}

TEST(EnvelopeTest, AllowsUnknownExtraFieldsAndKeepsThemInPayload) {
  Result<Event> event = Parse(
      R"({"id": "x", "type": "partition", "time": "2026-11-22T10:00:00Z", "source": "airflow",
          "payload": {"dataset": "d", "partitions": ["p"], "format": "parquet",
                      "nested": {"a": [1, 2]}}, "trace": {"span": 7}})");
  ASSERT_TRUE(event.ok()) << event.status().message();
  EXPECT_EQ(event->payload["format"], "parquet");
  EXPECT_EQ(event->payload["nested"]["a"][1], 2);
}

TEST(EnvelopeTest, AcceptsUnicodeInStrings) {
  Result<Event> event =
      Parse(Envelope("partition", "{\"dataset\": \"verk\xC3\xA4ufe\", \"partitions\": [\"\\u00e9t\xC3\xA9\"]}"));
  ASSERT_TRUE(event.ok()) << event.status().message();
  EXPECT_EQ(event->partition.dataset, "verk\xC3\xA4ufe");
  EXPECT_EQ(event->partition.partitions[0], "\xC3\xA9t\xC3\xA9");
}

// --- Rejections, one reason at a time --------------------------------------------------------

TEST(EnvelopeTest, RejectsOversizedBeforeParsing) {
  const std::string event = Envelope("partition", R"({"dataset": "d", "partitions": ["p"]})");
  EXPECT_EQ(Rejection(event, event.size() - 1), "oversized: " + std::to_string(event.size()) +
                                                    " bytes, more than the limit of " +
                                                    std::to_string(event.size() - 1));
  EXPECT_TRUE(Parse(event, event.size()).ok());
  // The default limit is 1 MiB, whatever the content.
  EXPECT_EQ(Reason(std::string(kMaxEventBytes + 1, ' ')), "oversized");
}

TEST(EnvelopeTest, RejectsBadJson) {
  // An empty value (a tombstone, an empty produce) says so, not as a JSON parse error.
  EXPECT_EQ(Rejection(""), "bad_json: empty message (no value)");
  EXPECT_EQ(Rejection("{\"id\""), "bad_json: not valid JSON (or not valid UTF-8)");
  EXPECT_EQ(Reason("{"), "bad_json");
  EXPECT_EQ(Reason("{\"id\": \"x\",}"), "bad_json");
  EXPECT_EQ(Reason("{'id': 'x'}"), "bad_json");
  EXPECT_EQ(Reason("{} {}"), "bad_json");
  EXPECT_EQ(Reason("{\"a\": 1e400}"), "bad_field");  // valid JSON, out of range: see below
  EXPECT_EQ(Reason(std::string("{\"id\": \"x\0\"}", 12)), "bad_json");
}

// U+0000 is valid JSON but cannot be stored by PostgreSQL (text, jsonb): accepted, the event
// would fail every ingest transaction it was in, and ingestion retry that batch forever. Refused
// anywhere in the envelope; an escaped backslash followed by "u0000" is six ordinary characters.
TEST(EnvelopeTest, RejectsNulCharacterAsBadJson) {
  const std::string in_id = R"({"id": "e\u0000", "type": "partition", "time": "2026-11-22T10:00:00Z",
                               "payload": {"dataset": "d", "partitions": ["p"]}})";
  EXPECT_EQ(Rejection(in_id), "bad_json: a string holds \\u0000 (NUL) at byte 9, which trigd cannot store");
  EXPECT_EQ(Reason(Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "note": "a\u0000"})")), "bad_json");
  EXPECT_EQ(Reason(Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "n\u0000": 1})")), "bad_json");
  Result<Event> literal =
      Parse(Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "note": "a\\u0000\u0041"})"));
  ASSERT_TRUE(literal.ok()) << literal.status().ToString();
  EXPECT_EQ(literal->payload["note"], "a\\u0000A");
}

// nlohmann keeps the last of repeated keys: `"dataset":"p2.ds","dataset":"other"` would read as
// dataset "other" and launch another schedule. A key twice, at any depth, is refused, naming
// where (docs/adr/0052-events-refuse-duplicate-keys-and-trailing-bytes.md).
TEST(EnvelopeTest, RejectsAKeyTwiceInAnyObjectNamingIt) {
  EXPECT_EQ(Rejection(Envelope("partition", R"({"dataset": "p2.ds", "dataset": "other", "partitions": ["p"]})")),
            "bad_json: payload.dataset: duplicate key \"dataset\" (a key appears at most once in an object)");
  EXPECT_EQ(Rejection(R"({"id": "a", "type": "tick", "id": "b", "time": "2026-11-22T10:00:00Z",
                          "payload": {"schedule": "a/b", "fire_time": "2026-11-22T05:00:00Z"}})"),
            "bad_json: id: duplicate key \"id\" (a key appears at most once in an object)");
  EXPECT_EQ(Rejection(Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "note": 1, "note": 1})")),
            "bad_json: payload.note: duplicate key \"note\" (a key appears at most once in an object)");
  EXPECT_EQ(Rejection(Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "m": [0, {"k": 1, "k": 2}]})")),
            "bad_json: payload.m[1].k: duplicate key \"k\" (a key appears at most once in an object)");
  // The same key in different objects is fine.
  EXPECT_TRUE(Parse(Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "a": {"dataset": 1}})")).ok());
}

// nlohmann reads a NUL byte as the end of its input: `{...}\0` would be accepted while `{...}x`
// is refused.
TEST(EnvelopeTest, RejectsANulByteAfterTheValueAsAnyOtherTrailingByte) {
  const std::string ok = Envelope("partition", R"({"dataset": "d", "partitions": ["p"]})");
  ASSERT_TRUE(Parse(ok).ok());
  EXPECT_EQ(Rejection(ok + std::string(1, '\0')),
            "bad_json: a NUL byte at byte " + std::to_string(ok.size()) + " (JSON text cannot contain one)");
  EXPECT_EQ(Reason(ok + std::string(1, '\0') + "garbage"), "bad_json");
  EXPECT_EQ(Reason(ok + "x"), "bad_json");
  EXPECT_TRUE(Parse(ok + " \n").ok());
}

// A number beyond a double is valid JSON: refused as out of range where it is, not as "not
// valid JSON".
TEST(EnvelopeTest, RejectsANumberBeyondADoubleAsOutOfRangeNamingTheField) {
  EXPECT_EQ(Rejection(Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "bytes": 1e400})")),
            "bad_field: payload.bytes: number \"1e400\" is out of range (beyond a double)");
  EXPECT_EQ(Rejection(Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "x": [1, -1e999]})")),
            "bad_field: payload.x[1]: number \"-1e999\" is out of range (beyond a double)");
}

TEST(EnvelopeTest, RejectsInvalidUtf8AsBadJson) {
  // A lone continuation byte, an overlong encoding, a truncated sequence, a surrogate.
  EXPECT_EQ(Reason(Envelope("partition", "{\"dataset\": \"a\x80\", \"partitions\": [\"p\"]}")), "bad_json");
  EXPECT_EQ(Reason(Envelope("partition", "{\"dataset\": \"\xC0\xAF\", \"partitions\": [\"p\"]}")), "bad_json");
  EXPECT_EQ(Reason(Envelope("partition", "{\"dataset\": \"\xE2\x82\", \"partitions\": [\"p\"]}")), "bad_json");
  EXPECT_EQ(Reason(Envelope("partition", "{\"dataset\": \"\xED\xA0\x80\", \"partitions\": []}")), "bad_json");
  EXPECT_EQ(Reason("\xFF\xFE{}"), "bad_json");
}

TEST(EnvelopeTest, RejectsDeepNestingAsBadJson) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(Rejection(deep), "bad_json: nested deeper than 64 levels");
  std::string deep_payload = std::string(70, '[') + std::string(70, ']');
  EXPECT_EQ(Reason(Envelope("partition", "{\"dataset\": \"d\", \"partitions\": [\"p\"], \"x\": " + deep_payload + "}")),
            "bad_json");
  // Brackets inside strings do not count.
  EXPECT_EQ(
      Reason(Envelope("partition", "{\"dataset\": \"" + std::string(200, '[') + "\\\"\", \"partitions\": [\"p\"]}")),
      "ok");
}

TEST(EnvelopeTest, RejectsJsonThatIsNotAnObject) {
  EXPECT_EQ(Rejection("[1, 2]"), "not_object: expected a JSON object, got array");
  EXPECT_EQ(Rejection("\"partition\""), "not_object: expected a JSON object, got string");
  EXPECT_EQ(Rejection("42"), "not_object: expected a JSON object, got number");
  EXPECT_EQ(Rejection("null"), "not_object: expected a JSON object, got null");
  EXPECT_EQ(Rejection("true"), "not_object: expected a JSON object, got boolean");
}

TEST(EnvelopeTest, RejectsMissingEnvelopeFields) {
  EXPECT_EQ(Rejection(R"({"type": "tick", "time": "2026-11-22T10:00:00Z", "payload": {}})"),
            "missing_field: id is required");
  EXPECT_EQ(Rejection(R"({"id": "x", "time": "2026-11-22T10:00:00Z", "payload": {}})"),
            "missing_field: type is required");
  EXPECT_EQ(Rejection(R"({"id": "x", "type": "tick", "payload": {}})"), "missing_field: time is required");
  EXPECT_EQ(Rejection(R"({"id": "x", "type": "tick", "time": "2026-11-22T10:00:00Z"})"),
            "missing_field: payload is required");
  EXPECT_EQ(Rejection("{}"), "missing_field: id is required");
}

TEST(EnvelopeTest, RejectsWrongEnvelopeFieldTypes) {
  EXPECT_EQ(Rejection(R"({"id": 7, "type": "tick", "time": "t", "payload": {}})"),
            "bad_field: id: expected a string, got number");
  EXPECT_EQ(Rejection(R"({"id": "", "type": "tick", "time": "t", "payload": {}})"), "bad_field: id: must not be empty");
  EXPECT_EQ(Rejection(R"({"id": null, "type": "tick", "time": "t", "payload": {}})"),
            "bad_field: id: expected a string, got null");
  EXPECT_EQ(Rejection(R"({"id": "x", "type": ["tick"], "time": "t", "payload": {}})"),
            "bad_field: type: expected a string, got array");
  EXPECT_EQ(Rejection(R"({"id": "x", "type": "tick", "time": 1700000000, "payload": {}})"),
            "bad_field: time: expected a string, got number");
  EXPECT_EQ(Rejection(R"({"id": "x", "type": "tick", "time": "yesterday", "payload": {}})"),
            "bad_field: time: invalid time \"yesterday\": expected RFC 3339, e.g. "
            "2026-11-22T10:00:00Z");
  EXPECT_EQ(Rejection(R"({"id": "x", "type": "tick", "time": "2026-11-22T10:00:00Z",
                          "payload": [1]})"),
            "bad_field: payload: expected an object, got array");
  EXPECT_EQ(Rejection(R"({"id": "x", "type": "tick", "time": "2026-11-22T10:00:00Z",
                          "payload": null})"),
            "bad_field: payload: expected an object, got null");
}

// An id is kept in a B-tree for de-duplication; one too long for it would fail every ingest
// transaction it was in, and ingestion would stop. The limit is 1 KiB
// (docs/adr/0023-event-limits.md).
TEST(EnvelopeTest, RejectsAnIdLongerThanTheLimit) {
  auto with_id = [](const std::string& id) {
    return R"({"id": ")" + id +
           R"(", "type": "program", "time": "2026-11-22T10:00:00Z", )"
           R"("payload": {"program": "p", "run_id": "r", "status": "succeeded"}})";
  };
  EXPECT_TRUE(Parse(with_id(std::string(kMaxEventIdBytes, 'a'))).ok());
  EXPECT_EQ(Rejection(with_id(std::string(kMaxEventIdBytes + 1, 'a'))),
            "bad_field: id: 1025 bytes, more than the limit of 1024");
  EXPECT_EQ(Reason(with_id(std::string(4000, 'a'))), "bad_field");
  // Counted in bytes of the decoded id: an escape spells one character.
  std::string escaped;
  for (size_t i = 0; i < kMaxEventIdBytes; ++i) escaped += "\\u0061";
  EXPECT_TRUE(Parse(with_id(escaped)).ok());
  EXPECT_EQ(Reason(with_id(escaped + "a")), "bad_field");
}

TEST(EnvelopeTest, RejectsUnknownType) {
  EXPECT_EQ(Rejection(Envelope("parquet", "{}")),
            "unknown_type: \"parquet\" (expected partition, program, tick or custom)");
  EXPECT_EQ(Rejection(Envelope("Partition", "{}")),
            "unknown_type: \"Partition\" (expected partition, program, tick or custom)");
  EXPECT_EQ(Rejection(Envelope("", "{}")), "unknown_type: \"\" (expected partition, program, tick or custom)");
}

TEST(EnvelopeTest, LongProducerTextIsCutShortInMessages) {
  const std::string type(5000, 'x');
  const std::string message = Rejection(Envelope(type, "{}"));
  EXPECT_LT(message.size(), 200u);
  EXPECT_EQ(Reason(Envelope(type, "{}")), "unknown_type");
  // A cut in the middle of a multi-byte character is replaced, not thrown on.
  std::string wide = "x";
  for (int i = 0; i < 100; ++i) wide += "\xC3\xA9";
  EXPECT_EQ(Reason(Envelope(wide, "{}")), "unknown_type");
}

TEST(EnvelopeTest, RejectsBadPartitionPayloads) {
  EXPECT_EQ(Rejection(Envelope("partition", R"({"partitions": ["p"]})")), "missing_field: payload.dataset is required");
  EXPECT_EQ(Rejection(Envelope("partition", R"({"dataset": 1, "partitions": ["p"]})")),
            "bad_field: payload.dataset: expected a string, got number");
  EXPECT_EQ(Rejection(Envelope("partition", R"({"dataset": "", "partitions": ["p"]})")),
            "bad_field: payload.dataset: must not be empty");
  EXPECT_EQ(Rejection(Envelope("partition", R"({"dataset": "d"})")), "missing_field: payload.partitions is required");
  EXPECT_EQ(Rejection(Envelope("partition", R"({"dataset": "d", "partitions": "p"})")),
            "bad_field: payload.partitions: expected an array, got string");
  EXPECT_EQ(Rejection(Envelope("partition", R"({"dataset": "d", "partitions": []})")),
            "bad_field: payload.partitions: must not be empty");
  EXPECT_EQ(Rejection(Envelope("partition", R"({"dataset": "d", "partitions": ["a", 2]})")),
            "bad_field: payload.partitions[1]: expected a string, got number");
  EXPECT_EQ(Rejection(Envelope("partition", R"({"dataset": "d", "partitions": ["a", ""]})")),
            "bad_field: payload.partitions[1]: must not be empty");
  EXPECT_EQ(Rejection(Envelope("partition", R"({"dataset": "d", "partitions": ["a"],
                                                "bytes": -1})")),
            "bad_field: payload.bytes: expected a non-negative integer, got -1");
  EXPECT_EQ(Rejection(Envelope("partition", R"({"dataset": "d", "partitions": ["a"],
                                                "bytes": 1.5})")),
            "bad_field: payload.bytes: expected a non-negative integer, got 1.5");
  EXPECT_EQ(Rejection(Envelope("partition", R"({"dataset": "d", "partitions": ["a"],
                                                "bytes": "100"})")),
            "bad_field: payload.bytes: expected a non-negative integer, got string");
  EXPECT_EQ(Rejection(Envelope("partition", R"({"dataset": "d", "partitions": ["a"],
                                                "bytes": 18446744073709551615})")),
            "bad_field: payload.bytes: expected a non-negative integer, got "
            "18446744073709551615");
  EXPECT_EQ(Reason(Envelope("partition", R"({"dataset": "d", "partitions": ["a"],
                                             "bytes": 9223372036854775807})")),
            "ok");
}

TEST(EnvelopeTest, RejectsBadProgramPayloads) {
  EXPECT_EQ(Rejection(Envelope("program", R"({"run_id": "r", "status": "failed"})")),
            "missing_field: payload.program is required");
  EXPECT_EQ(Rejection(Envelope("program", R"({"program": "p", "status": "failed"})")),
            "missing_field: payload.run_id is required");
  EXPECT_EQ(Rejection(Envelope("program", R"({"program": "p", "run_id": 5, "status": "x"})")),
            "bad_field: payload.run_id: expected a string, got number");
  EXPECT_EQ(Rejection(Envelope("program", R"({"program": "p", "run_id": "r"})")),
            "missing_field: payload.status is required");
  EXPECT_EQ(Rejection(Envelope("program", R"({"program": "p", "run_id": "r", "status": "done"})")),
            "bad_field: payload.status: unknown status \"done\" (expected started, heartbeat, "
            "succeeded, failed or killed)");
  EXPECT_EQ(Rejection(Envelope("program", R"({"program": "p", "run_id": "r", "status": true})")),
            "bad_field: payload.status: expected a string, got boolean");
  EXPECT_EQ(Rejection(Envelope("program", R"({"program": "p", "run_id": "r",
                                              "status": "failed", "attempt": 0})")),
            "bad_field: payload.attempt: expected a positive integer, got 0");
  EXPECT_EQ(Rejection(Envelope("program", R"({"program": "p", "run_id": "r",
                                              "status": "failed", "attempt": "2"})")),
            "bad_field: payload.attempt: expected a positive integer, got string");
  EXPECT_EQ(Rejection(Envelope("program", R"({"program": "p", "run_id": "r",
                                              "status": "failed", "reason": 3})")),
            "bad_field: payload.reason: expected a string, got number");
}

TEST(EnvelopeTest, RejectsBadTickPayloads) {
  EXPECT_EQ(Rejection(Envelope("tick", R"({"fire_time": "2026-11-22T05:00:00Z"})")),
            "missing_field: payload.schedule is required");
  for (const char* schedule : {"nightly", "/nightly", "default/", "a/b/c"}) {
    EXPECT_EQ(Rejection(Envelope(
                  "tick", std::string(R"({"schedule": ")") + schedule + R"(", "fire_time": "2026-11-22T05:00:00Z"})")),
              std::string("bad_field: payload.schedule: expected \"namespace/name\", got \"") + schedule + "\"");
  }
  EXPECT_EQ(Rejection(Envelope("tick", R"({"schedule": "default/nightly"})")),
            "missing_field: payload.fire_time is required");
  EXPECT_EQ(Rejection(Envelope("tick", R"({"schedule": "default/nightly", "fire_time": 5})")),
            "bad_field: payload.fire_time: expected a string, got number");
  EXPECT_EQ(Rejection(Envelope("tick", R"({"schedule": "default/nightly",
                                           "fire_time": "2026-13-01T00:00:00Z"})")),
            "bad_field: payload.fire_time: invalid time \"2026-13-01T00:00:00Z\": expected "
            "RFC 3339, e.g. 2026-11-22T10:00:00Z");
}

// The reason is given as a value beside the message, which starts with its name.
TEST(EnvelopeTest, DeadLetterReasonIsGivenAndStartsTheMessage) {
  EXPECT_EQ(Reason("nope"), "bad_json");
  EXPECT_EQ(Reason("[]"), "not_object");
  EXPECT_EQ(Reason("{}"), "missing_field");
  EXPECT_EQ(Reason(R"({"id": 1})"), "bad_field");
  EXPECT_EQ(Reason(Envelope("csv", "{}")), "unknown_type");
  EXPECT_EQ(Reason(std::string(kMaxEventBytes + 1, ' ')), "oversized");
  EXPECT_EQ(DeadLetterStatus(DeadLetterReason::kBadField, "x: y").message(), "bad_field: x: y");
  for (DeadLetterReason r : kDeadLetterReasons) EXPECT_STRNE(DeadLetterReasonName(r), "?");
}

// --- EnvelopeToJson --------------------------------------------------------------------------

TEST(EnvelopeTest, EnvelopeToJsonRoundTripsAReceivedEvent) {
  const std::string text = Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "bytes": 5, "extra": true})");
  Result<Event> event = Parse(text);
  ASSERT_TRUE(event.ok());
  nlohmann::json json = EnvelopeToJson(*event);
  EXPECT_EQ(json, nlohmann::json::parse(text));
  Result<Event> again = Parse(json.dump());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->payload, event->payload);
}

TEST(EnvelopeTest, TickEnvelopeTextIsTheEnvelopeDumped) {
  // As pg_ticks builds its ticks: payload set, time now.
  for (const std::string& schedule : {std::string("default/nightly"), std::string("bench/c99_x.y-z")}) {
    Event tick;
    tick.type = EventType::kTick;
    tick.time = At("2026-11-22T05:00:01.250Z");
    tick.tick = {schedule, At("2026-11-22T05:00:00Z")};
    const std::string fire_time = FormatTime(tick.tick.fire_time);
    tick.id = OwnTickId(schedule, fire_time);
    tick.payload = {{"schedule", schedule}, {"fire_time", fire_time}};
    const std::string text = TickEnvelopeText(tick.id, FormatTime(tick.time), schedule, fire_time);
    EXPECT_EQ(text, EnvelopeToJson(tick).dump());
    Result<Event> parsed = Parse(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    EXPECT_EQ(parsed->tick.schedule, schedule);
    EXPECT_EQ(parsed->tick.fire_time, tick.tick.fire_time);
  }
}

TEST(EnvelopeTest, EnvelopeToJsonBuildsThePayloadOfEventsTrigdProduces) {
  Event lost;
  lost.id = "lost-r-1";
  lost.type = EventType::kProgram;
  lost.time = At("2026-11-22T10:00:00.500Z");
  lost.program = {"sales.ingest", "r-1", ProgramStatus::kFailed, 2, "lost"};
  EXPECT_EQ(EnvelopeToJson(lost), nlohmann::json::parse(R"({
      "id": "lost-r-1", "type": "program", "time": "2026-11-22T10:00:00.500Z",
      "payload": {"program": "sales.ingest", "run_id": "r-1", "status": "failed",
                  "attempt": 2, "reason": "lost"}})"));

  Event tick;
  tick.id = "default/nightly@2026-11-22T05:00:00Z";
  tick.type = EventType::kTick;
  tick.time = At("2026-11-22T05:00:01Z");
  tick.tick = {"default/nightly", At("2026-11-22T05:00:00Z")};
  nlohmann::json json = EnvelopeToJson(tick);
  EXPECT_EQ(json["payload"], nlohmann::json::parse(
                                 R"({"schedule": "default/nightly",
                                     "fire_time": "2026-11-22T05:00:00Z"})"));
  Result<Event> parsed = Parse(json.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->tick.fire_time, tick.tick.fire_time);
  EXPECT_EQ(parsed->time, tick.time);

  Event partition;
  partition.id = "p";
  partition.type = EventType::kPartition;
  partition.partition = {"d", {"a", "b"}, std::nullopt};
  EXPECT_EQ(EnvelopeToJson(partition)["payload"],
            nlohmann::json::parse(R"({"dataset": "d", "partitions": ["a", "b"]})"));
}

// --- Robustness ------------------------------------------------------------------------------

TEST(EnvelopeTest, NeverThrowsOnMutatedInput) {
  // Deterministic mutations of valid envelopes: flipped, dropped and inserted bytes. Every
  // outcome must be an Event or a known dead-letter reason.
  const std::vector<std::string> seeds = {
      Envelope("partition", R"({"dataset": "d", "partitions": ["p", "q"], "bytes": 7})"),
      Envelope("program", R"({"program": "p", "run_id": "r", "status": "killed", "attempt": 2})"),
      Envelope("tick", R"({"schedule": "a/b", "fire_time": "2026-11-22T05:00:00Z"})"),
  };
  const std::vector<std::string> reasons = {"ok",        "oversized",   "bad_json", "not_object", "missing_field",
                                            "bad_field", "unknown_type"};
  constexpr std::string_view kInserts = "{}[]\",:\\0a\x80\xC3";
  std::mt19937 random(20261122);
  int accepted = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text = seeds[round % seeds.size()];
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = random() % text.size();
      switch (random() % 3) {
        case 0: text[at] = static_cast<char>(random() % 256); break;
        case 1: text.erase(at, 1); break;
        default: text.insert(at, 1, kInserts[random() % kInserts.size()]); break;
      }
    }
    std::string reason;
    EXPECT_NO_THROW(reason = Reason(text)) << text;
    EXPECT_NE(std::find(reasons.begin(), reasons.end(), reason), reasons.end()) << reason;
    if (reason == "ok") ++accepted;
  }
  EXPECT_GT(accepted, 0);
}

// --- Dead letters and launch requests within what Kafka takes --------------------------------

nlohmann::json Letter(std::string_view original) {
  std::string text = DeadLetterJson(Invalid("bad_json: not valid JSON"), "t.events.data", 3, 42, original);
  EXPECT_LE(text.size(), kMaxPublishedBytes);
  return nlohmann::json::parse(text);
}

TEST(DeadLetterTest, KeepsTheOriginalAsTextWithWhereItCameFrom) {
  nlohmann::json d = Letter("{\"id\": \"é\"");
  EXPECT_EQ(d["reason"], "bad_json: not valid JSON");
  EXPECT_EQ(d["topic"], "t.events.data");
  EXPECT_EQ(d["partition"], 3);
  EXPECT_EQ(d["offset"], 42);
  EXPECT_EQ(d["original"], "{\"id\": \"é\"");
  EXPECT_FALSE(d.contains("original_base64"));
  EXPECT_FALSE(d.contains("original_truncated"));
}

TEST(DeadLetterTest, BytesThatAreNotUtf8AreKeptExactlyInBase64) {
  nlohmann::json d = Letter("a\xffz");
  EXPECT_EQ(d["original"], "a\xEF\xBF\xBDz");  // U+FFFD for the bad byte
  EXPECT_EQ(d["original_base64"], "Yf96");
  EXPECT_EQ(Letter("\xff\xfe")["original_base64"], "//4=");
  EXPECT_EQ(Letter("\xff")["original_base64"], "/w==");
}

// 250 KB of control bytes escape to 1.5 MB of JSON, and an oversized event's whole bytes in its
// dead letter would be refused by the producer on every try, so the relay would never get past
// it (docs/adr/0022-message-size-limits.md).
TEST(DeadLetterTest, ALetterTooLargeToPublishKeepsTheFirst64KiBAndSaysSo) {
  nlohmann::json d = Letter(std::string(250000, '\x01'));
  EXPECT_EQ(d["original"].get<std::string>(), std::string(kDeadLetterOriginalKeep, '\x01'));
  EXPECT_EQ(d["original_truncated"], true);
  EXPECT_EQ(d["original_bytes"], 250000);
  d = Letter(std::string(2 << 20, 'a'));
  EXPECT_EQ(d["original"].get<std::string>().size(), kDeadLetterOriginalKeep);
  EXPECT_EQ(d["original_bytes"], 2 << 20);
  // An event just under the limit is kept whole.
  d = Letter(std::string(800000, 'a'));
  EXPECT_EQ(d["original"].get<std::string>().size(), 800000u);
  EXPECT_FALSE(d.contains("original_truncated"));
}

TEST(DeadLetterTest, ACutNeverSplitsACharacter) {
  std::string text = "a";
  while (text.size() < 2 * kMaxPublishedBytes) text += "\xE2\x82\xAC";  // €, 3 bytes
  nlohmann::json d = Letter(text);
  EXPECT_FALSE(d.contains("original_base64"));  // still well-formed UTF-8
  const std::string kept = d["original"].get<std::string>();
  EXPECT_LE(kept.size(), kDeadLetterOriginalKeep);
  EXPECT_GT(kept.size(), kDeadLetterOriginalKeep - 3);
  EXPECT_EQ(text.compare(0, kept.size(), kept), 0);
}

std::string PartitionEntry(int i, size_t note_bytes) {
  return nlohmann::json{
      {"id", "e" + std::to_string(i)},
      {"type", "partition"},
      {"payload",
       {{"dataset", "d"}, {"partitions", {"p" + std::to_string(i)}}, {"note", std::string(note_bytes, 'n')}}}}
      .dump();
}

std::string Entries(int n, size_t note_bytes) {
  std::string out = "[";
  for (int i = 0; i < n; ++i) out += (i ? "," : "") + PartitionEntry(i, note_bytes);
  return out + "]";
}

TEST(TriggeredByWithinTest, AListThatFitsIsLeftAsItIs) {
  const std::string list = Entries(3, 10);
  bool cut = true;
  EXPECT_EQ(TriggeredByWithin(list, 10000, cut), list);
  EXPECT_FALSE(cut);
}

// Six 200 KB partition events (a producer's extra field) would make a 1.2 MB launch request
// that the relay could never publish (docs/adr/0022-message-size-limits.md).
TEST(TriggeredByWithinTest, FirstDropsTheFieldsTrigdDoesNotKnowThenThePayloads) {
  bool cut = false;
  nlohmann::json kept = nlohmann::json::parse(TriggeredByWithin(Entries(6, 200000), 500000, cut));
  EXPECT_TRUE(cut);
  ASSERT_EQ(kept.size(), 6u);
  EXPECT_EQ(kept[5], nlohmann::json::parse(
                         R"({"id": "e5", "type": "partition", "payload": {"dataset": "d", "partitions": ["p5"]}})"));

  nlohmann::json program = nlohmann::json::parse(TriggeredByWithin(
      R"([{"id": "u", "type": "program", "payload": {"program": "p", "run_id": "r", "status": "failed", "attempt": 2, "reason": "lost", "x": "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"}}])",
      150, cut));
  EXPECT_EQ(
      program[0]["payload"],
      nlohmann::json::parse(R"({"program": "p", "run_id": "r", "status": "failed", "attempt": 2, "reason": "lost"})"));

  kept = nlohmann::json::parse(TriggeredByWithin(Entries(50, 0), 2000, cut));
  ASSERT_EQ(kept.size(), 50u);
  EXPECT_EQ(kept[7], nlohmann::json::parse(R"({"id": "e7", "type": "partition"})"));
}

TEST(TriggeredByWithinTest, IdsAloneTooLongKeepTheNewestThatFit) {
  bool cut = false;
  const std::string text = TriggeredByWithin(Entries(100, 0), 400, cut);
  EXPECT_TRUE(cut);
  EXPECT_LE(text.size(), 400u);
  nlohmann::json kept = nlohmann::json::parse(text);
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(kept.back()["id"], "e99");
}

}  // namespace
}  // namespace trigd
