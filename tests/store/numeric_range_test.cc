// Every numeric field of a schedule document, at the top and at the bottom of its one range
// (model/schedule.h, kMaxDuration), goes through the real store: applied, an event ingested
// (ApplyBatch), the job checked and launched (CheckDueJobs), the run's report applied (a
// retry scheduled), ticks and the run sweep. A value the parser passed but a column could not
// hold failed every ingest transaction that reached its schedule, and stalled all others.
#include <filesystem>
#include <limits>
#include <string>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "core/schedule_parser.h"
#include "source_paths.h"
#include "store/admin.h"
#include "store/migrator.h"
#include "store/pg_store.h"
#include "store/test_pg.h"

namespace trigd {
namespace {

using nlohmann::json;

Event Partition(const std::string& id, const std::string& dataset, int64_t bytes) {
  Event e;
  e.id = id;
  e.type = EventType::kPartition;
  e.partition.dataset = dataset;
  e.partition.partitions = {id};
  e.partition.bytes = bytes;
  e.payload = {{"dataset", dataset}, {"partitions", {id}}, {"bytes", bytes}};
  return e;
}

Event Report(const std::string& id, const std::string& program, const std::string& run_id, ProgramStatus status) {
  Event e;
  e.id = id;
  e.type = EventType::kProgram;
  e.program.program = program;
  e.program.run_id = run_id;
  e.program.status = status;
  e.payload = {{"program", program}, {"run_id", run_id}, {"status", ProgramStatusName(status)}};
  return e;
}

// Every integer field at `top` or bottom of its range, and every duration at kMaxDuration or at
// its least (1ms, 1s where the parser asks for at least that, 0s for a delay). `dataset`: the
// partition leaf that one event completes (the others wait for more than will ever come), so
// that the job launches.
json Document(const std::string& name, bool top) {
  auto pick = [top](IntegerRange r) { return top ? r.max : r.min; };
  const std::string longest = FormatDuration(kMaxDuration);
  auto duration = [&](const char* least) { return top ? longest : std::string(least); };
  const std::string ds = "ds." + name;
  return {
      {"name", name},
      {"program", {{"name", "prog." + name}}},
      {"priority", pick(kPriorityRange)},
      {"trigger",
       {{"any",
         {{{"partition", {{"dataset", ds}, {"count", 1}}}},
          {{"partition",
            {{"dataset", ds + ".wait"}, {"count", pick(kTriggerCountRange)}, {"min_bytes", pick(kMinBytesRange)}}}},
          {{"program", {{"name", "up." + name}, {"count", pick(kTriggerCountRange)}}}},
          {{"time", {{"every", duration("1s")}, {"catchup_window", duration("1ms")}}}}}}}},
      {"constraints",
       {{"max_concurrent_runs", pick(kConcurrencyRange)},
        {"concurrency_group", {{"name", "g." + name}, {"max", pick(kConcurrencyRange)}}},
        {"delay", "0s"},
        {"min_since_last_run", {{"duration", duration("1ms")}}},
        {"max_runs_per", {{"count", pick(kMaxRunsPerCountRange)}, {"period", duration("1ms")}}}}},
      {"timeout", {{"after", duration("1ms")}, {"action", "run"}}},
      {"retry",
       {{"max_attempts", pick(kMaxAttemptsRange)}, {"backoff", duration("1ms")}, {"max_backoff", duration("1ms")}}},
      {"heartbeat_timeout", duration("1s")},
  };
}

class NumericRangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    conn_ = test::FreshDatabase("trigd_numeric_range_test");
    ASSERT_TRUE(ApplyMigrations(conn_, TRIGD_SOURCE_DIR "/schema", nullptr).ok());
    auto store = PgStore::Connect(conn_, "t.");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    store_->SetFastPath(false);  // the checker step on its own, as the checker loop runs it
  }

  void Apply(const json& doc) {
    // As trigctl applies it: from text.
    std::vector<ParsedSchedule> parsed = ParseScheduleFile(doc.dump());
    ASSERT_EQ(parsed.size(), 1u);
    ASSERT_TRUE(parsed[0].ok()) << parsed[0].errors[0].ToString();
    auto r = ApplySchedules(conn_, {parsed[0].schedule}, Actor{"test"});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  // One batch of `events`, each routed to the schedules listening on its key; every event must
  // come out applied.
  void Ingest(const std::vector<Event>& events) {
    auto changes = store_->LoadScheduleChanges(0);
    ASSERT_TRUE(changes.ok()) << changes.status().ToString();
    IngestBatch b;
    b.group = "g";
    for (const Event& e : events) {
      b.events.push_back(e);
      std::vector<int64_t> ids;
      for (const auto& s : changes->schedules) {
        for (const auto& k : s.event_keys) {
          if (k == e.EventKey()) ids.push_back(s.id);
        }
      }
      b.schedule_ids.push_back(ids);
    }
    b.positions = {{"t.events.data", 0, offset_, offset_ + static_cast<int64_t>(events.size())}};
    offset_ += static_cast<int64_t>(events.size());
    auto r = store_->ApplyBatch(b);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->outcome, std::vector<EventOutcome>(events.size(), EventOutcome::kApplied));
  }

  std::string Text(const std::string& sql) {
    pqxx::connection c(conn_);
    pqxx::work tx(c);
    auto r = tx.exec1(sql);
    return r[0].is_null() ? "null" : r[0].as<std::string>();
  }

  std::string conn_;
  std::unique_ptr<PgStore> store_;
  int64_t offset_ = 0;
};

TEST_F(NumericRangeTest, EveryFieldAtTheTopAndBottomOfItsRangeGoesThroughIngestCheckLaunchAndRetry) {
  Apply(Document("top", true));
  Apply(Document("bottom", false));

  // Events that count towards the leaves that wait (bytes at the top of theirs) and events that
  // complete each schedule's trigger, in one batch.
  const int64_t most_bytes = std::numeric_limits<int64_t>::max();
  // (The bottom schedule's wait leaf would complete at once: its events come later, when a
  // second job of its may be forced past max_concurrent_runs by its 1ms timeout, action run.)
  Ingest({Partition("w1", "ds.top.wait", most_bytes), Partition("w2", "ds.top.wait", most_bytes),
          Partition("t1", "ds.top", 0), Partition("b1", "ds.bottom", 1)});
  auto checked = store_->CheckDueJobs(100);
  ASSERT_TRUE(checked.ok()) << checked.status().ToString();
  EXPECT_EQ(checked->launched, 2);
  EXPECT_EQ(Text("SELECT string_agg(schedule_name || ':' || max_attempts || ':' || heartbeat_timeout_ms, ',' "
                 "ORDER BY schedule_name) FROM runs"),
            "default/bottom:1:1000,default/top:2147483647:" + std::to_string(kMaxDuration.count()));
  EXPECT_EQ(Text("SELECT string_agg(schedule_name || ':' || priority, ',' ORDER BY schedule_name) FROM jobs "
                 "WHERE state = 'launched'"),
            "default/bottom:-1000,default/top:1000");

  // The top run fails: a retry after a backoff of kMaxDuration (2^0 times), capped by max_backoff.
  const std::string top_run = Text("SELECT run_id FROM runs WHERE schedule_name = 'default/top'");
  const std::string bottom_run = Text("SELECT run_id FROM runs WHERE schedule_name = 'default/bottom'");
  Ingest({Report("r1", "prog.top", top_run, ProgramStatus::kFailed),
          Report("r2", "prog.bottom", bottom_run, ProgramStatus::kFailed)});
  EXPECT_EQ(Text("SELECT string_agg(schedule_name || ':' || state, ',' ORDER BY schedule_name) FROM runs"),
            "default/bottom:failed,default/top:retry_wait");

  // More events after: nothing stalls. Ticks and the run sweep read the stored durations too.
  Ingest({Partition("t2", "ds.top", 0), Partition("b2", "ds.bottom", 1), Partition("w3", "ds.top.wait", most_bytes),
          Partition("w4", "ds.bottom.wait", most_bytes)});
  checked = store_->CheckDueJobs(100);
  ASSERT_TRUE(checked.ok()) << checked.status().ToString();
  auto ticks = store_->TickTimeTriggers(100);
  ASSERT_TRUE(ticks.ok()) << ticks.status().ToString();
  auto swept = store_->SweepRuns();
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
}

// The columns the ranges are stored in hold them: read from the migrated schema itself.
TEST_F(NumericRangeTest, TheColumnsHoldTheWholeRangeOfWhatTheyStore) {
  auto max_of = [&](const std::string& table, const std::string& column) -> int64_t {
    const std::string type = Text("SELECT data_type FROM information_schema.columns WHERE table_name = '" + table +
                                  "' AND column_name = '" + column + "'");
    if (type == "integer") return std::numeric_limits<int32_t>::max();
    if (type == "bigint") return std::numeric_limits<int64_t>::max();
    ADD_FAILURE() << table << "." << column << " is " << type;
    return 0;
  };
  EXPECT_GE(max_of("jobs", "priority"), kPriorityRange.max);
  EXPECT_GE(max_of("runs", "max_attempts"), kMaxAttemptsRange.max);
  EXPECT_GE(max_of("runs", "attempt"), kMaxAttemptsRange.max);
  EXPECT_GE(max_of("schedule_runtime", "active_runs"), kConcurrencyRange.max);
  EXPECT_GE(max_of("group_runtime", "active_runs"), kConcurrencyRange.max);
  EXPECT_GE(max_of("runs", "heartbeat_timeout_ms"), kMaxDuration.count());
}

// A document stored before the ranges, with counts past int4 (accepted then), is brought into
// them by migration 015, so that it still parses when read back; program.args is not touched.
TEST(NumericRangeMigrationTest, StoredCountsBeyondTheirRangeAreBroughtIntoIt) {
  const std::string conn = test::FreshDatabase("trigd_numeric_range_migration_test");
  namespace fs = std::filesystem;
  const fs::path before = fs::temp_directory_path() / "trigd_numeric_range_schema";
  fs::remove_all(before);
  fs::create_directories(before);
  for (const auto& entry : fs::directory_iterator(TRIGD_SOURCE_DIR "/schema")) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".sql" && name < "015") fs::copy_file(entry.path(), before / name);
  }
  ASSERT_TRUE(ApplyMigrations(conn, before.string(), nullptr).ok());
  const std::string huge = "5000000000";
  const json stored = json::parse(R"({"name": "old", "program": {"name": "p", "args": {"max": )" + huge +
                                  R"(, "count": )" + huge + R"(}},
          "trigger": {"any": [{"partition": {"dataset": "d", "count": )" +
                                  huge + R"(, "min_bytes": )" + huge + R"(}},
                              {"all": [{"program": {"name": "up", "count": )" +
                                  huge + R"(}}]}]},
          "constraints": {"max_concurrent_runs": )" +
                                  huge + R"(, "concurrency_group": {"name": "g", "max": )" + huge + R"(},
                          "max_runs_per": {"count": )" +
                                  huge + R"(, "period": "1h"}},
          "retry": {"max_attempts": )" +
                                  huge + R"(}})");
  {
    pqxx::connection c(conn);
    pqxx::work tx(c);
    tx.exec_params(
        "INSERT INTO schedules (name, version, doc_hash, document) VALUES ('default/old', 1, 'h', $1::jsonb)",
        stored.dump());
    tx.commit();
  }
  EXPECT_FALSE(ParseSchedule(stored).ok());
  ASSERT_TRUE(ApplyMigrations(conn, TRIGD_SOURCE_DIR "/schema", nullptr).ok());
  pqxx::connection c(conn);
  const json migrated = json::parse(pqxx::work(c).exec1("SELECT document::text FROM schedules")[0].as<std::string>());
  ParsedSchedule parsed = ParseSchedule(migrated);
  ASSERT_TRUE(parsed.ok()) << parsed.errors[0].ToString();
  const Schedule& s = parsed.schedule;
  EXPECT_EQ(s.retry.max_attempts, kPgIntegerMax);
  EXPECT_EQ(s.constraints.max_concurrent_runs, kPgIntegerMax);
  EXPECT_EQ(s.constraints.concurrency_group->max, kPgIntegerMax);
  EXPECT_EQ(s.constraints.max_runs_per->count, kPgIntegerMax);
  EXPECT_EQ(s.trigger.children[0].partition.count, kPgIntegerMax);
  EXPECT_EQ(s.trigger.children[0].partition.min_bytes, 5000000000);  // bigint: kept
  EXPECT_EQ(s.trigger.children[1].children[0].program.count, kPgIntegerMax);
  EXPECT_EQ(s.program.args, stored["program"]["args"]);
  fs::remove_all(before);
}

}  // namespace
}  // namespace trigd
