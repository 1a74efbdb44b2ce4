// The ingest fast path (ScanEnvelope, ParseEnvelopeTimeFast) against the authority
// (ParseEnvelope, ParseEnvelopeTimeReference): whatever the fast path accepts, the authority
// accepts with the same figures; and ordinary events do take the fast path.
#include "core/envelope_scan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/envelope_agreement.h"
#include "core/envelope_time.h"
#include "source_paths.h"

namespace trigd {
namespace {

TimePoint At(const char* rfc3339) { return ParseTime(rfc3339).value(); }

std::string Envelope(const std::string& type, const std::string& payload,
                     const std::string& time = "2026-11-22T10:00:00Z") {
  return R"({"id": "e-1", "type": ")" + type + R"(", "time": ")" + time + R"(", "payload": )" + payload + "}";
}

// The scanner accepts `bytes`, agreeing with the parser.
void ExpectFast(const std::string& bytes) {
  bool scanned = false;
  EXPECT_EQ(ScanDisagreement(bytes, kMaxEventBytes, &scanned), "") << bytes;
  EXPECT_TRUE(scanned) << "not on the fast path: " << bytes;
}

// The scanner is not sure (the parser decides); `parser_accepts` says what the parser does.
void ExpectSlow(const std::string& bytes, bool parser_accepts) {
  EnvelopeScan scan;
  EXPECT_FALSE(ScanEnvelope(bytes, scan)) << bytes;
  EXPECT_EQ(ParseEnvelope(bytes).ok(), parser_accepts) << bytes;
}

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> out;
  const std::filesystem::path dir = std::filesystem::path(TRIGD_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "envelope";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    out.push_back(text.str());
  }
  return out;
}

// --- ScanEnvelope ----------------------------------------------------------------------------

TEST(EnvelopeScanTest, ReadsIdTypeTimeAndKeyOfEachType) {
  EnvelopeScan scan;
  const std::string partition =
      Envelope("partition", R"({"dataset": "sales.raw", "partitions": ["dt=2026-11-22/h=10"], "bytes": 7})",
               "2026-11-22T11:00:00.250+01:00");
  ASSERT_TRUE(ScanEnvelope(partition, scan));
  EXPECT_EQ(scan.id, "e-1");
  EXPECT_EQ(scan.type, EventType::kPartition);
  EXPECT_EQ(scan.time, At("2026-11-22T10:00:00.250Z"));
  EXPECT_EQ(scan.key_name, "sales.raw");
  EXPECT_EQ(scan.EventKey(), "partition:sales.raw");

  // The scan's fields are views into the bytes: keep each event alive while it is read.
  const std::string program =
      Envelope("program", R"({"program": "sales.ingest", "run_id": "r-7", "status": "failed"})");
  ASSERT_TRUE(ScanEnvelope(program, scan));
  EXPECT_EQ(scan.type, EventType::kProgram);
  EXPECT_EQ(scan.EventKey(), "program:sales.ingest");

  const std::string tick = Envelope("tick", R"({"schedule": "default/nightly", "fire_time": "2026-11-22T05:00:00Z"})");
  ASSERT_TRUE(ScanEnvelope(tick, scan));
  EXPECT_EQ(scan.type, EventType::kTick);
  EXPECT_EQ(scan.EventKey(), "time:default/nightly");

  std::string key = "left over from the last event";
  scan.EventKeyInto(key);
  EXPECT_EQ(key, "time:default/nightly");
}

TEST(EnvelopeScanTest, OrdinaryEventsTakeTheFastPath) {
  // The ingest benchmark's event, compact.
  ExpectFast(R"({"id":"ev-1","type":"partition","time":"2026-11-22T10:00:00Z","payload":)"
             R"({"dataset":"unlistened.1","partitions":["dt=2026-11-22/h=1"]}})");
  // Pretty-printed, members in any order, extra members of every JSON type, Unicode and
  // escapes where the scanner only needs to skip them.
  ExpectFast(
      "{\n  \"payload\": {\"partitions\": [\"a\", \"\\u00e9t\\u00e9\", \"\\ud83d\\ude00\",\n"
      "    \"tab\\there\"], \"bytes\": null, \"dataset\": \"verk\xC3\xA4ufe\",\n"
      "    \"meta\": {\"n\": [1, -2, 3.25, -0.5, 0, true, false, null, {}, []]}},\n"
      "  \"time\": \"2026-11-22t10:00:00.123456789z\", \"source\": \"\\\"airflow\\\"\",\n"
      "  \"type\": \"partition\", \"id\": \"\xF0\x9F\x98\x80-1\"\r\n}\t ");
  for (const char* status : {"started", "heartbeat", "succeeded", "failed", "killed"}) {
    ExpectFast(Envelope("program", std::string(R"({"program": "p", "run_id": "r\u0031", "status": ")") + status +
                                       R"(", "attempt": 3, "reason": "lost"})"));
  }
  ExpectFast(Envelope("program", R"({"program": "p", "run_id": "r", "status": "killed",
                                     "attempt": null, "reason": null})"));
  ExpectFast(Envelope("partition", R"({"dataset": "d", "partitions": ["p"],
                                       "bytes": 922337203685477580})"));
  ExpectFast(
      Envelope("tick", R"({"schedule": "a/b", "fire_time": "2026-11-22T05:00:00.5-01:30"})", "0000-01-01T00:00:00Z"));
  ExpectFast(Envelope("partition", R"({"dataset": "d", "partitions": ["p"]})", "9999-12-31T23:59:59.999Z"));
}

TEST(EnvelopeScanTest, LeavesWhatItCannotReadAsIsToTheParser) {
  // Escapes in a value the scanner would have to return.
  ExpectSlow(Envelope("partition", R"({"dataset": "d\u0031", "partitions": ["p"]})"), true);
  ExpectSlow(R"({"id": "e\n1", "type": "partition", "time": "2026-11-22T10:00:00Z",
                 "payload": {"dataset": "d", "partitions": ["p"]}})",
             true);
  ExpectSlow(Envelope("p\\u0061rtition", R"({"dataset": "d", "partitions": ["p"]})"), true);
  // U+0000, which the parser refuses (PostgreSQL cannot store it).
  ExpectSlow(Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "note": "a\u0000"})"), false);
  // An escaped member name could spell one the parser reads.
  ExpectSlow(Envelope("partition", R"({"d\u0061taset": "d", "partitions": ["p"]})"), true);
  // Duplicate members, which the parser refuses (nlohmann alone keeps the last): read or not,
  // in the envelope, the payload or deeper.
  ExpectSlow(Envelope("partition", R"({"dataset": "a", "dataset": "b", "partitions": ["p"]})"), false);
  ExpectSlow(R"({"id": "a", "id": "b", "type": "partition", "time": "2026-11-22T10:00:00Z",
                 "payload": {"dataset": "d", "partitions": ["p"]}})",
             false);
  ExpectSlow(Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "x": 1, "x": 1})"), false);
  ExpectSlow(Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "x": [{"k": 1, "k": 2}]})"), false);
  ExpectSlow(R"({"x": 1, "id": "a", "type": "partition", "time": "2026-11-22T10:00:00Z", "x": 2,
                 "payload": {"dataset": "d", "partitions": ["p"]}})",
             false);
  // The same key in two objects is no duplicate, on either scanner (the second is not ASCII).
  ExpectFast(
      Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "x": {"dataset": 1}, "y": {"dataset": 2}})"));
  ExpectFast(Envelope("partition",
                      "{\"dataset\": \"\xC3\xA4\", \"partitions\": [\"p\"], \"x\": {\"k\": 1}, \"y\": {\"k\": 2}}"));
  // Bytes after the envelope: a NUL (nlohmann's end of input) or any other.
  const std::string ok = Envelope("partition", R"({"dataset": "d", "partitions": ["p"]})");
  ExpectSlow(ok + std::string(1, '\0'), false);
  ExpectSlow(ok + " " + std::string(1, '\0') + "x", false);
  ExpectSlow(ok + "x", false);
  // Numbers it would have to convert, an exponent anywhere, a negative count.
  ExpectSlow(Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "bytes": 1e3})"), false);
  ExpectSlow(Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "x": 1e3})"), true);
  ExpectSlow(Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "x": 1e400})"), false);
  ExpectSlow(Envelope("partition", R"({"dataset": "d", "partitions": ["p"],
                                       "bytes": 9223372036854775807})"),
             true);
  ExpectSlow(Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "bytes": -0})"), true);
  // Nesting deeper than it goes, though within the parser's limit.
  ExpectSlow(Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "x": )" + std::string(40, '[') +
                                       std::string(40, ']') + "}"),
             true);
  // A byte-order mark, which nlohmann skips.
  ExpectSlow("\xEF\xBB\xBF" + Envelope("partition", R"({"dataset": "d", "partitions": ["p"]})"), true);
  // A leap second.
  ExpectSlow(
      Envelope("partition", R"({"dataset": "d", "partitions": ["p"]})", "2016-12-31T23:59:60Z"),
      ParseEnvelope(Envelope("partition", R"({"dataset": "d", "partitions": ["p"]})", "2016-12-31T23:59:60Z")).ok());
}

TEST(EnvelopeScanTest, NeverAcceptsWhatTheParserRefuses) {
  const std::vector<std::string> refused = {
      "",
      "{",
      "{}",
      "[]",
      "null",
      "{} {}",
      "{\"id\": \"x\",}",
      "{'id': 'x'}",
      std::string("{\"id\": \"x\0\"}", 12),
      Envelope("partition", "{\"dataset\": \"a\x80\", \"partitions\": [\"p\"]}"),
      Envelope("partition", "{\"dataset\": \"\xC0\xAF\", \"partitions\": [\"p\"]}"),
      Envelope("partition", "{\"dataset\": \"\xED\xA0\x80\", \"partitions\": [\"p\"]}"),
      Envelope("partition", "{\"dataset\": \"\xF4\x90\x80\x80\", \"partitions\": [\"p\"]}"),
      Envelope("partition", "{\"dataset\": \"d\", \"partitions\": [\"\\ud800\"]}"),
      Envelope("partition", "{\"dataset\": \"d\", \"partitions\": [\"\\udc00\"]}"),
      Envelope("partition", "{\"dataset\": \"d\", \"partitions\": [\"\\x\"]}"),
      Envelope("partition", "{\"dataset\": \"d\", \"partitions\": [\"a\tb\"]}"),
      Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "x": 01})"),
      Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "x": 1.})"),
      Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "x": -})"),
      Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "x": tru})"),
      Envelope("partition", R"({"dataset": "d", "partitions": []})"),
      Envelope("partition", R"({"dataset": "d", "partitions": ["a", ""]})"),
      Envelope("partition", R"({"dataset": "d", "partitions": ["a", 2]})"),
      Envelope("partition", R"({"dataset": "d", "partitions": "a"})"),
      Envelope("partition", R"({"dataset": "", "partitions": ["a"]})"),
      Envelope("partition", R"({"partitions": ["a"]})"),
      Envelope("partition", R"({"dataset": "d", "partitions": ["a"], "bytes": -1})"),
      Envelope("partition", R"({"dataset": "d", "partitions": ["a"], "bytes": 1.5})"),
      Envelope("partition", R"({"dataset": "d", "partitions": ["a"], "bytes": "1"})"),
      Envelope("program", R"({"program": "p", "run_id": "", "status": "failed"})"),
      Envelope("program", R"({"program": "p", "run_id": "r", "status": "done"})"),
      Envelope("program", R"({"program": "p", "run_id": "r", "status": "failed", "attempt": 0})"),
      Envelope("program", R"({"program": "p", "run_id": "r", "status": "failed", "reason": 3})"),
      Envelope("program", R"({"program": "p", "run_id": "r", "status": "failed", "lineage": 3})"),
      Envelope("program", R"({"program": "p", "run_id": "r", "status": "failed", "worker": ["h"]})"),
      Envelope("tick", R"({"schedule": "nightly", "fire_time": "2026-11-22T05:00:00Z"})"),
      Envelope("tick", R"({"schedule": "a/b/c", "fire_time": "2026-11-22T05:00:00Z"})"),
      Envelope("tick", R"({"schedule": "a/b", "fire_time": "2026-13-01T00:00:00Z"})"),
      Envelope("parquet", "{}"),
      Envelope("partition", R"({"dataset": "d", "partitions": ["p"]})", "2026-02-30T10:00:00Z"),
      Envelope("partition", R"({"dataset": "d", "partitions": ["p"]})", "9999-12-31T23:59:00-00:01"),
      R"({"id": "", "type": "tick", "time": "2026-11-22T10:00:00Z", "payload": {}})",
      R"({"id": "x", "type": "tick", "time": "2026-11-22T10:00:00Z", "payload": [1]})",
      std::string(100, '[') + std::string(100, ']'),
  };
  for (const std::string& bytes : refused) {
    ASSERT_FALSE(ParseEnvelope(bytes).ok()) << "test vector is accepted: " << bytes;
    EnvelopeScan scan;
    EXPECT_FALSE(ScanEnvelope(bytes, scan)) << bytes;
  }
  const std::string ok = Envelope("partition", R"({"dataset": "d", "partitions": ["p"]})");
  EnvelopeScan scan;
  EXPECT_FALSE(ScanEnvelope(ok, scan, ok.size() - 1));
  EXPECT_TRUE(ScanEnvelope(ok, scan, ok.size()));
}

// Without the payload (the replay's path) a scanned event is read by the scanner: the same
// typed fields as the parser's, no JSON document; a member it would have to unescape sends it
// to the parser, which keeps the payload (ExpectFast compares both reads with the parser's).
TEST(EnvelopeScanTest, ReadsTheTypedFieldsWithoutThePayload) {
  const std::vector<std::string> read_by_scanner = {
      Envelope("partition",
               "{\"dataset\": \"verk\xC3\xA4ufe\", \"partitions\": [ \"a\" ,\n\"dt=1/h=2\",\"\xC3\xA9\"],"
               " \"bytes\": 1024, \"meta\": {\"partitions\": [1]}}"),
      Envelope("partition", R"({"partitions": ["p"], "dataset": "d", "bytes": null})"),
      Envelope("program", R"({"program": "p", "run_id": "r-1", "status": "failed", "attempt": 3,
                              "reason": "", "lineage": "L1", "worker": "host:12"})"),
      Envelope("program", R"({"program": "p", "run_id": "r", "status": "started", "lineage": null})"),
      Envelope("tick", R"({"schedule": "a/b", "fire_time": "2026-11-22T05:00:00.5-01:30"})"),
  };
  for (const std::string& bytes : read_by_scanner) {
    ExpectFast(bytes);
    Event event;
    EXPECT_TRUE(ScanEnvelopeEvent(bytes, event)) << bytes;
    Result<Event> bare = ParseScannedEnvelope(bytes, /*payload=*/false);
    ASSERT_TRUE(bare.ok()) << bytes;
    EXPECT_TRUE(bare->payload.is_null()) << bytes;
  }
  Event event;
  ASSERT_TRUE(ScanEnvelopeEvent(read_by_scanner[0], event));
  EXPECT_EQ(event.partition.partitions, (std::vector<std::string>{"a", "dt=1/h=2", "\xC3\xA9"}));
  EXPECT_EQ(event.partition.bytes, 1024);
  const std::vector<std::string> escaped = {
      Envelope("partition", R"({"dataset": "d", "partitions": ["a", "b\"c"]})"),
      Envelope("program", R"({"program": "p", "run_id": "r\u0031", "status": "failed"})"),
      Envelope("program", R"({"program": "p", "run_id": "r", "status": "failed", "reason": "a\nb"})"),
      Envelope("program", R"({"program": "p", "run_id": "r", "status": "failed", "lineage": "L\/1"})"),
      Envelope("program", R"({"program": "p", "run_id": "r", "status": "failed", "worker": "h\t1"})"),
  };
  for (const std::string& bytes : escaped) {
    ExpectFast(bytes);
    Event unread;
    EXPECT_FALSE(ScanEnvelopeEvent(bytes, unread)) << bytes;
    Result<Event> bare = ParseScannedEnvelope(bytes, /*payload=*/false);
    ASSERT_TRUE(bare.ok()) << bytes;
    EXPECT_FALSE(bare->payload.is_null()) << bytes;
  }
}

TEST(EnvelopeScanTest, AgreesWithTheParserOnTheFuzzCorpus) {
  const std::vector<std::string> corpus = CorpusFiles();
  ASSERT_GE(corpus.size(), 10u);
  int fast = 0;
  for (const std::string& bytes : corpus) {
    bool scanned = false;
    EXPECT_EQ(ScanDisagreement(bytes, kMaxEventBytes, &scanned), "") << bytes;
    EXPECT_EQ(VariantDisagreement(bytes), "") << bytes;
    fast += scanned;
  }
  EXPECT_GT(fast, 3);
}

// The fuzzer's check on each accepted envelope: with a key twice (envelope, payload) or a byte
// after it, both refuse, and the parser names the key.
TEST(EnvelopeScanTest, BothRefuseAnAcceptedEnvelopeWithAKeyTwiceOrBytesAfterIt) {
  for (const std::string& bytes :
       {Envelope("partition", R"({"dataset": "d", "partitions": ["p"], "bytes": 7})"),
        Envelope("program", R"({"program": "p", "run_id": "r", "status": "killed", "attempt": 2})"),
        Envelope("tick", R"({"schedule": "a/b", "fire_time": "2026-11-22T05:00:00Z"})")}) {
    ASSERT_TRUE(ParseEnvelope(bytes).ok()) << bytes;
    EXPECT_EQ(VariantDisagreement(bytes), "") << bytes;
  }
}

// Deterministic mutations of valid envelopes and of the fuzz corpus: bytes flipped, dropped,
// inserted (JSON punctuation and escapes, UTF-8 lead and continuation bytes, digits), and
// members duplicated. Whatever the scanner accepts, the parser accepts alike.
TEST(EnvelopeScanTest, AgreesWithTheParserOnMutatedEnvelopes) {
  std::vector<std::string> seeds = {
      Envelope("partition", R"({"dataset": "d", "partitions": ["p", "q"], "bytes": 7})"),
      Envelope("program", R"({"program": "p", "run_id": "r", "status": "killed", "attempt": 2,
                              "reason": "x"})"),
      Envelope("tick", R"({"schedule": "a/b", "fire_time": "2026-11-22T05:00:00.123+05:30"})"),
      Envelope("partition",
               "{\"dataset\": \"\xC3\xA4\", \"partitions\": [\"\\u00e9\"], "
               "\"x\": [1.5, {\"y\": null}]}",
               "2024-02-29T23:59:59.9-00:01"),
  };
  for (const std::string& bytes : CorpusFiles()) seeds.push_back(bytes);
  constexpr std::string_view kInserts = "{}[]\",:\\0159.-+eEuZTt \x80\xBF\xC3\xE0\xED\xF0\xF4";
  std::mt19937 random(20261123);
  int accepted = 0;
  for (int round = 0; round < 100000; ++round) {
    std::string text = seeds[round % seeds.size()];
    const int edits = 1 + static_cast<int>(random() % 3);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = random() % text.size();
      switch (random() % 4) {
        case 0: text[at] = static_cast<char>(random() % 256); break;
        case 1: text.erase(at, 1); break;
        case 2: text.insert(at, 1, kInserts[random() % kInserts.size()]); break;
        default: {
          // Repeat a slice (a member, half a string...) somewhere else.
          const size_t length = 1 + random() % 12;
          const std::string slice = text.substr(at, length);
          text.insert(random() % text.size(), slice);
        }
      }
    }
    bool scanned = false;
    const std::string disagreement = ScanDisagreement(text, kMaxEventBytes, &scanned);
    ASSERT_EQ(disagreement, "") << text;
    accepted += scanned;
  }
  EXPECT_GT(accepted, 1000);
}

// --- ParseEnvelopeTimeFast -------------------------------------------------------------------

TEST(EnvelopeTimeTest, FastReadsOrdinaryTimesAsTheReferenceDoes) {
  for (const char* text :
       {"2026-11-22T10:00:00Z", "2026-11-22t10:00:00z", "2026-11-22T10:00:00.5Z", "2026-11-22T10:00:00.05Z",
        "2026-11-22T10:00:00.123456789Z", "2026-11-22T11:00:00+01:00", "2026-11-22T09:00:00.999-01:00",
        "2024-02-29T00:00:00Z", "1970-01-01T00:00:00Z", "1969-12-31T23:59:59.999Z", "0000-01-01T00:00:00Z",
        "0001-01-01T00:30:00+01:00", "9999-12-31T23:59:59.999Z", "9999-12-31T22:59:59-01:00",
        "2000-03-01T00:00:00+23:59", "1900-02-28T23:59:59-23:59"}) {
    std::optional<TimePoint> fast = ParseEnvelopeTimeFast(text);
    ASSERT_TRUE(fast.has_value()) << text;
    EXPECT_EQ(fast, ParseEnvelopeTimeReference(text)) << text;
    EXPECT_EQ(fast, ParseEnvelopeTime(text)) << text;
  }
  EXPECT_EQ(ParseEnvelopeTimeFast("2026-11-22T11:00:00.250+01:00"), At("2026-11-22T10:00:00.250Z"));
}

TEST(EnvelopeTimeTest, FastIsNeverWrongWhereTheReferenceRefuses) {
  for (const char* text : {"",
                           "2026-11-22T10:00:00",
                           "2026-11-22T10:00:00.Z",
                           "2026-11-22T10:00:00+0100",
                           "2026-11-22T10:00:00Zjunk",
                           "2026-02-30T10:00:00Z",
                           "2023-02-29T10:00:00Z",
                           "2026-11-22T25:00:00Z",
                           "2026-11-22T24:00:00Z",
                           "2026-11-22T10:60:00Z",
                           "2026-11-22 10:00:00Z",
                           "2026-13-01T00:00:00Z",
                           "2026-00-01T00:00:00Z",
                           "2026-01-00T00:00:00Z",
                           "9999-12-31T23:59:00-00:01",
                           "0000-01-01T00:30:00+01:00",
                           "2026-11-22T10:00:00+24:00",
                           "2026-11-22T10:00:00+01:60",
                           "2026-11-22T10:00:00.",
                           "2026-11-22T10:00:00.123",
                           "2026-11-22T10:00:00+01:00:00",
                           "+2026-11-22T10:00:00Z"}) {
    std::optional<TimePoint> reference = ParseEnvelopeTimeReference(text);
    std::optional<TimePoint> fast = ParseEnvelopeTimeFast(text);
    if (fast) {
      EXPECT_EQ(fast, reference) << text;
    }
    EXPECT_EQ(ParseEnvelopeTime(text), fast ? fast : reference) << text;
  }
}

// Times built from random parts, in and out of range: wherever the fast path has an answer it
// is the reference's, and it has one for every ordinary time the reference accepts.
TEST(EnvelopeTimeTest, FastAgreesWithTheReferenceOnRandomTimes) {
  std::mt19937 random(7);
  auto pick = [&](std::initializer_list<int> values) { return *(values.begin() + random() % values.size()); };
  auto two = [](int n) { return std::string(1, static_cast<char>('0' + n / 10)) + static_cast<char>('0' + n % 10); };
  int fast_count = 0;
  for (int round = 0; round < 20000; ++round) {
    const int year = pick({0, 1, 4, 100, 400, 1600, 1900, 1969, 1970, 2000, 2024, 2026, 2100, 9998, 9999});
    const int month = static_cast<int>(random() % 14);
    const int day = static_cast<int>(random() % 33);
    const int hour = pick({0, 1, 12, 23, 24, 99});
    const int minute = pick({0, 30, 59, 60});
    const int second = pick({0, 1, 59, 60, 61});
    std::string text = two(year / 100) + two(year % 100) + "-" + two(month) + "-" + two(day) +
                       (random() % 2 ? "T" : "t") + two(hour) + ":" + two(minute) + ":" + two(second);
    static const char* kFractions[] = {"", "", ".5", ".05", ".123", ".1239", ".000000001", "."};
    text += kFractions[random() % 8];
    const int zone_hours = pick({0, 1, 5, 23, 24}), zone_minutes = pick({0, 1, 30, 59, 60});
    switch (random() % 4) {
      case 0: text += "Z"; break;
      case 1: text += "z"; break;
      default: text += (random() % 2 ? "+" : "-") + two(zone_hours) + ":" + two(zone_minutes);
    }
    std::optional<TimePoint> fast = ParseEnvelopeTimeFast(text);
    std::optional<TimePoint> reference = ParseEnvelopeTimeReference(text);
    if (fast) {
      ++fast_count;
      ASSERT_EQ(fast, reference) << text;
    } else if (reference && second < 60 && zone_hours < 24 && zone_minutes < 60 && hour < 24 && minute < 60) {
      ADD_FAILURE() << "the fast path left an ordinary time to the reference: " << text;
    }
  }
  EXPECT_GT(fast_count, 1000);
}

}  // namespace
}  // namespace trigd
