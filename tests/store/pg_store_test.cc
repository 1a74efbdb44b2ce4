// Integration tests of the PostgreSQL adapter on a real PostgreSQL: the transactional promises
// of SPEC §5 (batch atomicity, fencing, de-duplication), the checker's launches, concurrency
// limits under racing checkers, priority, schedule changes, ticks and lost runs.
#include "store/pg_store.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "api/why.h"
#include "core/envelope.h"
#include "core/envelope_time.h"
#include "core/launch_request.h"
#include "core/schedule_parser.h"
#include "source_paths.h"
#include "store/admin.h"
#include "store/migrator.h"
#include "store/test_pg.h"

namespace trigd {
namespace {

using nlohmann::json;

using test::Pg;

Schedule Parse(const json& doc) {
  ParsedSchedule p = ParseSchedule(doc);
  EXPECT_TRUE(p.ok()) << (p.errors.empty() ? "" : p.errors[0].ToString());
  return p.schedule;
}

json PartitionSchedule(const std::string& name, const std::string& dataset, json constraints = json::object()) {
  json doc = {
      {"name", name}, {"program", {{"name", "prog." + name}}}, {"trigger", {{"partition", {{"dataset", dataset}}}}}};
  if (!constraints.empty()) doc["constraints"] = constraints;
  return doc;
}

Event PartitionEvent(const std::string& id, const std::string& dataset, const std::string& part = "p") {
  Event e;
  e.id = id;
  e.type = EventType::kPartition;
  e.partition.dataset = dataset;
  e.partition.partitions = {part};
  e.payload = {{"dataset", dataset}, {"partitions", {part}}};
  return e;
}

Event ProgramEvent(const std::string& id, const std::string& program, const std::string& run_id, ProgramStatus status) {
  Event e;
  e.id = id;
  e.type = EventType::kProgram;
  e.program.program = program;
  e.program.run_id = run_id;
  e.program.status = status;
  e.payload = {{"program", program}, {"run_id", run_id}, {"status", ProgramStatusName(status)}};
  return e;
}

Event TickEvent(const std::string& id, const std::string& schedule, TimePoint fire_time) {
  Event e;
  e.id = id;
  e.type = EventType::kTick;
  e.tick = {schedule, fire_time};
  e.payload = {{"schedule", schedule}, {"fire_time", FormatTime(fire_time)}};
  return e;
}

// A fresh, migrated database per test; needs the real PostgreSQL (fails, never skips).
class PgStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    {
      pqxx::connection admin(Pg());
      pqxx::nontransaction tx(admin);
      tx.exec("DROP DATABASE IF EXISTS trigd_store_test WITH (FORCE)");
      tx.exec("CREATE DATABASE trigd_store_test");
    }
    conn_ = Pg() + " dbname=trigd_store_test";
    ASSERT_TRUE(ApplyMigrations(conn_, TRIGD_SOURCE_DIR "/schema", nullptr).ok());
    store_ = NewStore();
  }
  // Most tests drive the checker step on its own (fast path off); the FastPath tests and the
  // racing test's run ends use it as trigd does.
  std::unique_ptr<PgStore> NewStore(bool fast_path = false) {
    auto store = PgStore::Connect(conn_, "t.");
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    (*store)->SetFastPath(fast_path);
    return std::move(*store);
  }
  void Apply(const std::vector<json>& docs) {
    std::vector<Schedule> s;
    for (const auto& d : docs) s.push_back(Parse(d));
    auto r = ApplySchedules(conn_, s, Actor{"test"});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  // The messages of `topic` in the outbox as the relay publishes them (ClaimOutbox places each
  // launch request's attempt fields into its template), oldest first; none is removed.
  std::vector<std::string> Published(const std::string& topic = "t.launch.default") {
    std::vector<std::string> out;
    auto rows = store_->ClaimOutbox(100000);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    if (rows.ok()) {
      for (const OutboxRow& r : rows->messages) {
        if (r.topic == topic) out.push_back(r.payload);
      }
    }
    EXPECT_TRUE(store_->CompleteOutbox({}).ok());
    return out;
  }
  std::vector<json> PublishedJson(const std::string& topic = "t.launch.default") {
    std::vector<json> out;
    for (const std::string& p : Published(topic)) out.push_back(json::parse(p));
    return out;
  }
  // event key -> schedule ids, as the engine's reverse index would answer.
  std::map<std::string, std::vector<int64_t>> Index() {
    auto changes = store_->LoadScheduleChanges(0);
    EXPECT_TRUE(changes.ok());
    std::map<std::string, std::vector<int64_t>> index;
    for (const auto& s : changes->schedules)
      for (const auto& k : s.event_keys) index[k].push_back(s.id);
    return index;
  }
  IngestBatch Batch(const std::vector<Event>& events, int64_t first_offset, std::vector<DeadLetter> dead = {}) {
    IngestBatch b;
    b.group = "g";
    auto index = Index();
    for (const auto& e : events) {
      b.events.push_back(e);
      b.schedule_ids.push_back(index[e.EventKey()]);
    }
    b.dead = std::move(dead);
    int64_t n = static_cast<int64_t>(events.size() + b.dead.size());
    b.positions = {{"t.events.data", 0, first_offset, first_offset + n}};
    return b;
  }
  std::string Text(const std::string& sql) {
    pqxx::connection c(conn_);
    pqxx::work tx(c);
    return tx.exec1(sql)[0].as<std::string>();
  }
  int64_t Count(const std::string& sql) {
    pqxx::connection c(conn_);
    pqxx::work tx(c);
    return tx.exec1(sql)[0].as<int64_t>();
  }
  void Exec(const std::string& sql) {
    pqxx::connection c(conn_);
    pqxx::work tx(c);
    tx.exec(sql);
    tx.commit();
  }
  std::string conn_;
  std::unique_ptr<PgStore> store_;
};

// An event produced after `schedules apply` returned must meet the schedule: a batch routed with
// an index older than the change log is refused whole (nothing applied, the position unmoved),
// and the same events routed again with the index as of now go through.
TEST_F(PgStoreTest, ABatchRoutedBeforeAChangeIsRefusedAndGoesThroughOnceRoutedAgain) {
  Apply({PartitionSchedule("old", "d0")});
  auto before = store_->LoadScheduleChanges(0);
  ASSERT_TRUE(before.ok());
  IngestBatch stale = Batch({PartitionEvent("e1", "d1")}, 0);  // d1 reaches nothing yet
  stale.index_seq = before->last_seq;
  Apply({PartitionSchedule("new", "d1")});
  auto r = store_->ApplyBatch(stale);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->stale_index);
  EXPECT_EQ(Count("SELECT count(*) FROM consumer_offsets"), 0);

  auto after = store_->LoadScheduleChanges(before->last_seq);
  ASSERT_TRUE(after.ok());
  EXPECT_GT(after->last_seq, before->last_seq);
  IngestBatch fresh = Batch({PartitionEvent("e1", "d1")}, 0);
  fresh.index_seq = after->last_seq;
  r = store_->ApplyBatch(fresh);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->stale_index);
  EXPECT_EQ(r->outcome, std::vector<EventOutcome>{EventOutcome::kApplied});
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 1);
  EXPECT_EQ(Count("SELECT next_offset FROM consumer_offsets"), 1);
}

TEST_F(PgStoreTest, BatchWritesJobsOffsetsAndDeadLettersTogether) {
  Apply({PartitionSchedule("s", "d")});
  auto r = store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0, {{"k", "{\"reason\":\"bad_json\"}"}}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->fenced);
  EXPECT_EQ(r->outcome, std::vector<EventOutcome>{EventOutcome::kApplied});
  EXPECT_EQ(r->jobs_opened, 1);
  EXPECT_EQ(r->jobs_ready, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='pending_constraint'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE topic='t.dead'"), 1);
  EXPECT_EQ(Count("SELECT next_offset FROM consumer_offsets WHERE group_id='g'"), 2);
  auto offsets = store_->LoadOffsets("g", {{"t.events.data", 0}, {"t.events.data", 1}});
  ASSERT_TRUE(offsets.ok());
  EXPECT_EQ((*offsets)[0], std::optional<int64_t>(2));
  EXPECT_EQ((*offsets)[1], std::nullopt);
}

// A dead letter keeps the Kafka key it came with, whatever its bytes: a key that is not UTF-8,
// or holds a NUL (which PostgreSQL's text cannot), must not fail the batch (ingestion would
// retry it forever); the key goes on with each such byte replaced by U+FFFD.
TEST_F(PgStoreTest, DeadLetterWithABinaryKeyIsWrittenWithTheKeyMadeText) {
  const std::string key("k\xff\x00z\xc3", 5);
  auto r = store_->ApplyBatch(Batch({}, 0, {{key, "{\"reason\":\"bad_json\"}"}}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE topic='t.dead' AND key = 'k\uFFFD\uFFFDz\uFFFD'"), 1);
}

TEST_F(PgStoreTest, StalePositionIsFencedAndNothingOfTheBatchIsApplied) {
  Apply({PartitionSchedule("s", "d")});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e2", "d")}, 1)).ok());
  // A consumer that lost the partition replays offsets 0..1 with another event: refused whole.
  auto stale = store_->ApplyBatch(Batch({PartitionEvent("e3", "d")}, 0, {{"k", "x"}}));
  ASSERT_TRUE(stale.ok());
  EXPECT_TRUE(stale->fenced);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE topic='t.dead'"), 0);
  EXPECT_EQ(Count("SELECT next_offset FROM consumer_offsets"), 2);
}

TEST_F(PgStoreTest, OneStalePositionFencesTheWholeMultiPartitionBatch) {
  Apply({PartitionSchedule("s", "d")});
  IngestBatch first = Batch({PartitionEvent("e1", "d")}, 0);
  first.positions.push_back({"t.events.data", 1, 0, 4});
  first.positions.push_back({"t.events.time", 0, 0, 7});
  auto r = store_->ApplyBatch(first);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->fenced);
  EXPECT_EQ(Count("SELECT sum(next_offset) FROM consumer_offsets"), 1 + 4 + 7);
  // Partitions 0 and time/0 move on from where they are; partition 1 replays from 2 (< 4).
  IngestBatch mixed = Batch({PartitionEvent("e2", "d")}, 1);
  mixed.positions.push_back({"t.events.data", 1, 2, 9});
  mixed.positions.push_back({"t.events.time", 0, 7, 8});
  auto m = store_->ApplyBatch(mixed);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->fenced);
  EXPECT_EQ(Count("SELECT sum(next_offset) FROM consumer_offsets"), 1 + 4 + 7);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 1);
  // The same batch from the right position of partition 1 goes through, every position moved.
  mixed.positions[1].first_offset = 4;
  auto ok = store_->ApplyBatch(mixed);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_FALSE(ok->fenced);
  EXPECT_EQ(Count("SELECT sum(next_offset) FROM consumer_offsets"), 2 + 9 + 8);
}
TEST_F(PgStoreTest, ResentEventIdChangesNothing) {
  Apply({PartitionSchedule("s", "d")});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  auto again =
      store_->ApplyBatch(Batch({PartitionEvent("e1", "d"), PartitionEvent("e2", "d"), PartitionEvent("e2", "d")}, 1));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->outcome,
            (std::vector<EventOutcome>{EventOutcome::kDuplicate, EventOutcome::kApplied, EventOutcome::kDuplicate}));
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 2);
  // The batches after one that met a recorded id skip such ids without failing first.
  auto third = store_->ApplyBatch(Batch({PartitionEvent("e1", "d"), PartitionEvent("e3", "d")}, 4));
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_EQ(third->outcome, (std::vector<EventOutcome>{EventOutcome::kDuplicate, EventOutcome::kApplied}));
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 3);
  EXPECT_EQ(Count("SELECT count(*) FROM seen_events"), 3);
}

// A large batch records its ids by COPY instead of in its first statement: the first copy of
// an id in the batch is applied and later ones are duplicates, and an id recorded by an earlier
// batch fails the COPY, after which the batch runs again and skips it, as in a small batch.
TEST_F(PgStoreTest, ALargeBatchRecordsItsIdsOnceEachAndSkipsIdsRecordedBefore) {
  Apply({PartitionSchedule("s", "d")});
  std::vector<Event> first;
  for (int i = 0; i < 200; ++i) first.push_back(PartitionEvent("a" + std::to_string(i), "d", "p" + std::to_string(i)));
  first.push_back(PartitionEvent("a7", "d", "again"));  // a copy of an id within the batch
  auto r = store_->ApplyBatch(Batch(first, 0));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(std::count(r->outcome.begin(), r->outcome.end(), EventOutcome::kApplied), 200);
  EXPECT_EQ(r->outcome.back(), EventOutcome::kDuplicate);
  EXPECT_EQ(Count("SELECT count(*) FROM seen_events"), 200);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 200);

  // Run reports reach no schedule (no schedule read, nothing accumulated) and are recorded alike.
  std::vector<Event> reports;
  for (int i = 0; i < 100; ++i) {
    reports.push_back(
        ProgramEvent("r" + std::to_string(i), "up", "run-" + std::to_string(i), ProgramStatus::kSucceeded));
  }
  auto second = store_->ApplyBatch(Batch(reports, 201));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(Count("SELECT count(*) FROM seen_events"), 300);

  // Re-sent: a199 among 150 new ids.
  std::vector<Event> third = {PartitionEvent("a199", "d", "x")};
  for (int i = 0; i < 150; ++i) third.push_back(PartitionEvent("b" + std::to_string(i), "d", "q" + std::to_string(i)));
  auto again = store_->ApplyBatch(Batch(third, 301));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->outcome.front(), EventOutcome::kDuplicate);
  EXPECT_EQ(std::count(again->outcome.begin(), again->outcome.end(), EventOutcome::kApplied), 150);
  EXPECT_EQ(Count("SELECT count(*) FROM seen_events"), 450);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 350);
  EXPECT_EQ(Count("SELECT count(*) FROM consumer_offsets WHERE next_offset = 452"), 1);
}

// The same id recorded by another instance's transaction still in flight: the batch's insert
// waits for it, fails once it commits, and the batch runs again and counts the event a duplicate
// (it is neither lost if the other rolls back nor applied twice if it commits).
TEST_F(PgStoreTest, AnEventIdRacingInFromAnotherInstanceIsADuplicateOnceThatCommits) {
  Apply({PartitionSchedule("s", "d")});
  auto store = NewStore(/*fast_path=*/true);
  pqxx::connection other_conn(conn_);
  pqxx::work other(other_conn);
  other.exec("INSERT INTO seen_events (id) VALUES ('e1')");
  std::optional<Result<IngestResult>> r;
  std::atomic<bool> done{false};
  std::thread batch_thread([&] {
    r = store->ApplyBatch(Batch({PartitionEvent("e1", "d"), PartitionEvent("e2", "d")}, 0));
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(done) << "the batch did not wait for the id in flight";
  other.commit();
  batch_thread.join();
  ASSERT_TRUE(r->ok()) << r->status().ToString();
  EXPECT_EQ((*r)->outcome, (std::vector<EventOutcome>{EventOutcome::kDuplicate, EventOutcome::kApplied}));
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM consumer_offsets WHERE next_offset = 2"), 1);
}

TEST_F(PgStoreTest, EventsAccumulateInOneOpenJobUntilTheTriggerCompletes) {
  json doc = {
      {"name", "s"},
      {"program", {{"name", "p"}}},
      {"trigger", {{"all", {{{"partition", {{"dataset", "d"}, {"count", 2}}}}, {{"program", {{"name", "up"}}}}}}}}};
  Apply({doc});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d", "a"), PartitionEvent("e2", "d", "a")}, 0)).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='pending_trigger'"), 1);
  ASSERT_TRUE(store_
                  ->ApplyBatch(Batch(
                      {PartitionEvent("e3", "d", "b"), ProgramEvent("e4", "up", "r", ProgramStatus::kSucceeded)}, 2))
                  .ok());
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='pending_constraint'"), 1);
  // e2 repeated partition "a": no new partition, so it did not count.
  EXPECT_EQ(Count("SELECT jsonb_array_length(triggered_by) FROM jobs"), 3);
  // A completed job is never changed: the next event opens a new job.
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e5", "d", "c")}, 4)).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='pending_trigger'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 2);
}

// The new jobs of a batch are copied in while their rows are built, in pieces of about 64 KiB:
// 1,500 of them (about 0.4 MB) all arrive, each with its own event.
TEST_F(PgStoreTest, ManyNewJobsOfOneBatchAllArriveThroughTheCopyStream) {
  Apply({PartitionSchedule("s", "d")});
  std::vector<Event> events;
  for (int i = 0; i < 1500; ++i)
    events.push_back(PartitionEvent("e" + std::to_string(i), "d", "p" + std::to_string(i)));
  auto r = store_->ApplyBatch(Batch(events, 0));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->jobs_opened, 1500);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='pending_constraint'"), 1500);
  EXPECT_EQ(Count("SELECT count(DISTINCT triggered_by->0->>'id') FROM jobs"), 1500);
  EXPECT_GT(Count("SELECT sum(pg_column_size(j.*)) FROM jobs j"), 3 * 64 * 1024);
}

// A batch that completes the stored open job and opens the next one for the same schedule:
// the stored job leaves pending_trigger (update) before the new one is copied in (one open
// job per schedule, jobs_one_open).
TEST_F(PgStoreTest, ABatchCompletesTheStoredOpenJobAndOpensTheNext) {
  json doc = {
      {"name", "s"}, {"program", {{"name", "p"}}}, {"trigger", {{"partition", {{"dataset", "d"}, {"count", 2}}}}}};
  Apply({doc});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d", "a")}, 0)).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='pending_trigger'"), 1);
  auto r = store_->ApplyBatch(Batch({PartitionEvent("e2", "d", "b"), PartitionEvent("e3", "d", "c")}, 1));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='pending_constraint'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='pending_trigger'"), 1);
  EXPECT_EQ(Count("SELECT jsonb_array_length(history) FROM jobs WHERE state='pending_constraint'"), 4);
}

TEST_F(PgStoreTest, CheckerLaunchesReadyJobWithItsRunAndLaunchRequestTogether) {
  Apply({PartitionSchedule("s", "d")});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  auto c = store_->CheckDueJobs(100);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->launched, 1);
  // Launched when decided: the outbox row (same transaction) guarantees the publication.
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='launched' AND finished_at IS NOT NULL "
                  "AND next_check_at IS NULL"),
            1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state='launched'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE topic='t.launch.default' AND "
                  "payload::jsonb->>'run_id' = (SELECT run_id FROM runs)"),
            1);
  // Checked again, nothing more happens: the same job never gets two runs.
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM runs"), 1);
  auto rows = store_->ClaimOutbox(10);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->messages.size(), 1u);
  auto done = store_->CompleteOutbox({rows->messages[0].id});
  ASSERT_TRUE(done.ok());
  // One latency (trigger complete -> confirmed) per launch request, a small one here.
  ASSERT_EQ(done->size(), 1u);
  EXPECT_GE((*done)[0], 0.0);
  EXPECT_LT((*done)[0], 60.0);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='launched'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM outbox"), 0);
}

// A schedule's run counters exist from its apply on (docs/adr/0174): its first launch only moves
// them. A schedule whose row is missing (applied before schema/024) gets one at its first check.
TEST_F(PgStoreTest, RunCountersAreCreatedAtApplyAndMovedByTheFirstLaunch) {
  Apply({PartitionSchedule("s", "d"), PartitionSchedule("t", "e")});
  EXPECT_EQ(Count("SELECT count(*) FROM schedule_runtime WHERE active_runs = 0 AND last_launch_at IS NULL"), 2);
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_EQ(store_->CheckDueJobs(100)->launched, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM schedule_runtime WHERE active_runs = 1 AND last_launch_at IS NOT NULL"), 1);
  Exec("DELETE FROM schedule_runtime");
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e2", "e")}, 1)).ok());
  ASSERT_EQ(store_->CheckDueJobs(100)->launched, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM schedule_runtime WHERE active_runs = 1"), 1);
}

// A schedule's program is serialised once per version (PgStore::program_json_): a launch after
// an update carries the new version's program, on the same connection.
TEST_F(PgStoreTest, ALaunchAfterAnUpdateCarriesTheNewVersionsProgram) {
  json doc = PartitionSchedule("s", "d");
  doc["program"]["args"] = {{"n", 1}};
  Apply({doc});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_EQ(store_->CheckDueJobs(100)->launched, 1);
  doc["program"]["args"] = {{"n", 2}};
  Apply({doc});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e2", "d")}, 1)).ok());
  ASSERT_EQ(store_->CheckDueJobs(100)->launched, 1);
  std::vector<json> published = PublishedJson();
  ASSERT_EQ(published.size(), 2u);
  EXPECT_EQ(published[0]["program"]["args"]["n"], 1);
  EXPECT_EQ(published[1]["program"]["args"]["n"], 2);
  EXPECT_EQ(published[1]["schedule_version"], 2);
}

// trigd_event_to_launch_seconds ends at the broker's confirmation of the launch request (when
// the relay completes it), not at the relay's claim: the time the publication took is in it.
TEST_F(PgStoreTest, EventToLaunchAgeEndsAtTheConfirmation) {
  Apply({PartitionSchedule("s", "d")});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  auto rows = store_->ClaimOutbox(10);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->messages.size(), 1u);
  const double ready_to_claim =
      std::stod(Text("SELECT extract(epoch from clock_timestamp() - ready_at)::text FROM jobs"));
  // The publication and its confirmation, as long as a slow broker's.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto done = store_->CompleteOutbox({rows->messages[0].id});
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->size(), 1u);
  EXPECT_GE((*done)[0], 0.3);
  EXPECT_LT((*done)[0], ready_to_claim + 0.3 + 5.0);
}

// Six 200 KB partition events would make a 1.2 MB launch request that Kafka refuses for good.
// A request is cut to fit and says so; the partitions stay (docs/adr/0022-message-size-limits.md).
TEST_F(PgStoreTest, ALaunchRequestTooLargeForKafkaKeepsItsPartitionsAndSaysItWasCut) {
  json doc = PartitionSchedule("s", "d");
  doc["trigger"] = {{"partition", {{"dataset", "d"}, {"count", 3}}}};
  Apply({doc});
  std::vector<Event> events;
  for (int i = 0; i < 3; ++i) {
    Event e = PartitionEvent("big" + std::to_string(i), "d", "p" + std::to_string(i));
    e.payload["note"] = std::string(300000, 'n');
    events.push_back(e);
  }
  ASSERT_TRUE(store_->ApplyBatch(Batch(events, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  const std::vector<std::string> published = Published();
  ASSERT_EQ(published.size(), 1u);
  EXPECT_LE(published[0].size(), kMaxLaunchRequestBytes);
  json r = json::parse(published[0]);
  EXPECT_EQ(r["triggered_by_truncated"], true);
  ASSERT_EQ(r["triggered_by"].size(), 3u);
  EXPECT_EQ(r["triggered_by"][2]["payload"], json::parse(R"({"dataset": "d", "partitions": ["p2"]})"));
  // The outbox holds the run's template, the relay adds the attempt's fields.
  EXPECT_EQ(
      Count("SELECT count(*) FROM outbox o JOIN runs r ON o.payload = r.request WHERE o.topic = 't.launch.default'"),
      1);
}

// A concurrency wait of a schedule with a timeout is re-checked every 30 s, not only at the
// timeout, and `jobs why` says a run's end wakes it.
TEST_F(PgStoreTest, AConcurrencyWaitWithATimeoutIsRecheckedAndSaysARunsEndWakesIt) {
  json doc = PartitionSchedule("s", "d", {{"max_concurrent_runs", 1}});
  doc["timeout"] = {{"after", "10m"}, {"action", "run"}};
  Apply({doc});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d", "a"), PartitionEvent("e2", "d", "b")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state = 'pending_constraint' "
                  "AND next_check_at <= now() + interval '31 seconds'"),
            1);
  auto seen = InspectJob(conn_, Count("SELECT id FROM jobs WHERE state = 'pending_constraint'"));
  ASSERT_TRUE(seen.ok()) << seen.status().ToString();
  json why = ExplainJob(*seen);
  EXPECT_EQ(why.value("wakes_on", ""), "a run of this schedule or its concurrency group ending") << why.dump();
  EXPECT_NE(FormatExplanation(why).find("or sooner on: a run of this schedule"), std::string::npos);
}

// `jobs why` does not list the other branches of a complete `any` as unmet, and `jobs show`
// drops a launched job's last "waiting for" decision, which no longer holds.
TEST_F(PgStoreTest, WhyMarksBranchesACompleteTriggerDoesNotNeedAndShowDropsAStaleDecision) {
  json doc = PartitionSchedule("s", "d1", {{"max_concurrent_runs", 1}});
  doc["trigger"] = {{"any", {{{"partition", {{"dataset", "d1"}}}}, {{"partition", {{"dataset", "d2"}}}}}}};
  Apply({doc});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d1", "a"), PartitionEvent("e2", "d1", "b")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  const int64_t waiting = Count("SELECT id FROM jobs WHERE state = 'pending_constraint'");
  auto seen = InspectJob(conn_, waiting);
  ASSERT_TRUE(seen.ok()) << seen.status().ToString();
  const std::string text = FormatExplanation(ExplainJob(*seen));
  EXPECT_NE(text.find("[unmet] trigger.any[1]"), std::string::npos) << text;
  EXPECT_NE(text.find("(not needed: the trigger is complete)"), std::string::npos) << text;
  auto shown = QueryJob(conn_, waiting);
  ASSERT_TRUE(shown.ok());
  EXPECT_NE((*shown)[0].value("last_decision", "").find("max_concurrent_runs"), std::string::npos) << shown->dump();
  // The first run ends, the waiting job launches: its last decision is no longer shown.
  pqxx::connection c(conn_);
  const std::string run = pqxx::work(c).exec1("SELECT run_id FROM runs")[0].as<std::string>();
  ASSERT_TRUE(store_->ApplyBatch(Batch({ProgramEvent("r1", "prog.s", run, ProgramStatus::kSucceeded)}, 2)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  shown = QueryJob(conn_, waiting);
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ((*shown)[0].value("state", ""), "launched");
  EXPECT_TRUE((*shown)[0]["last_decision"].is_null()) << shown->dump();
}

// A time branch that has not fired shows when the tick comes and whether the timeout would
// discard the job first, not only "waiting for a tick (cron ...)".
TEST_F(PgStoreTest, WhyShowsATimeBranchsNextFireAndWhetherTheTimeoutComesFirst) {
  json cron = {{"name", "tc"},
               {"program", {{"name", "prog.tc"}}},
               {"trigger",
                {{"all",
                  {{{"time", {{"cron", "0 3 * * *"}, {"timezone", "America/New_York"}}}},
                   {{"partition", {{"dataset", "dc"}}}}}}}},
               {"timeout", {{"after", "2h"}, {"action", "discard"}}}};
  json every = {{"name", "te"},
                {"program", {{"name", "prog.te"}}},
                {"trigger", {{"all", {{{"partition", {{"dataset", "de"}}}}, {{"time", {{"every", "1h"}}}}}}}}};
  Apply({cron, every});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "dc"), PartitionEvent("e2", "de")}, 0)).ok());
  const int64_t job =
      Count("SELECT j.id FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE s.name = 'default/tc'");
  auto next_fire = [&](const std::string& name) {
    return TimePoint(
        Millis(Count("SELECT floor(extract(epoch from t.next_fire_at) * 1000)::bigint FROM time_triggers t "
                     "JOIN schedules s ON s.id = t.schedule_id WHERE s.name = '" +
                     name + "'")));
  };
  auto explain = [&](int64_t id) {
    auto seen = InspectJob(conn_, id);
    EXPECT_TRUE(seen.ok()) << seen.status().ToString();
    return seen.ok() ? ExplainJob(*seen) : json::object();
  };
  // The next fire after the timeout (2h after opening): the job will be discarded first.
  Exec(
      "UPDATE time_triggers SET next_fire_at = date_trunc('second', now()) + interval '1 day' "
      "WHERE schedule_id = (SELECT id FROM schedules WHERE name = 'default/tc')");
  TimePoint next = next_fire("default/tc");
  json why = explain(job);
  std::string text = FormatExplanation(why);
  EXPECT_NE(text.find("[unmet] trigger.all[0].time: waiting for a tick (cron \"0 3 * * *\" in America/New_York; "
                      "next fire " +
                      FormatTime(next) + ", local " + LocalClock("America/New_York", next) + ", after the timeout)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(why["trigger"][0].value("next_fire_at", ""), FormatTime(next)) << why.dump();
  EXPECT_EQ(why["trigger"][0].value("after_timeout", false), true) << why.dump();
  EXPECT_NE(text.find("; then the job is discarded (action discard)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("why: trigger incomplete; times out at "), std::string::npos) << text;
  EXPECT_NE(text.find(" (action discard)\n"), std::string::npos) << text;
  // Before the timeout.
  Exec(
      "UPDATE time_triggers SET next_fire_at = date_trunc('second', now()) + interval '1 hour' "
      "WHERE schedule_id = (SELECT id FROM schedules WHERE name = 'default/tc')");
  next = next_fire("default/tc");
  text = FormatExplanation(explain(job));
  EXPECT_NE(text.find("in America/New_York; next fire " + FormatTime(next) + ", local " +
                      LocalClock("America/New_York", next) + ")\n"),
            std::string::npos)
      << text;
  // An `every` branch (UTC: no local time), among other branches.
  const int64_t every_job =
      Count("SELECT j.id FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE s.name = 'default/te'");
  text = FormatExplanation(explain(every_job));
  EXPECT_NE(text.find("[unmet] trigger.all[1].time: waiting for a tick (every 1h; next fire " +
                      FormatTime(next_fire("default/te")) + ")\n"),
            std::string::npos)
      << text;
  // Suspended (a job the suspension has not discarded yet): no tick comes.
  Exec("UPDATE schedules SET state = 'suspended' WHERE name = 'default/tc'");
  Exec(
      "UPDATE time_triggers SET next_fire_at = 'infinity' "
      "WHERE schedule_id = (SELECT id FROM schedules WHERE name = 'default/tc')");
  why = explain(job);
  text = FormatExplanation(why);
  EXPECT_NE(text.find("(cron \"0 3 * * *\" in America/New_York; no tick will come while the schedule is suspended)"),
            std::string::npos)
      << text;
  EXPECT_TRUE(why["trigger"][0]["next_fire_at"].is_null()) << why.dump();
  // `schedules show` and `list` say the next fire time too (none while suspended): a cron
  // schedule has no job to ask about before its first tick.
  auto next_shown = [&](const std::string& name) {
    auto shown = QuerySchedule(conn_, name);
    EXPECT_TRUE(shown.ok() && shown->size() == 1);
    return shown.ok() && !shown->empty() ? (*shown)[0]["next_fire_at"] : json();
  };
  EXPECT_TRUE(next_shown("default/tc").is_null());
  ASSERT_TRUE(next_shown("default/te").is_string());
  EXPECT_EQ(ParseEnvelopeTime(next_shown("default/te").get<std::string>()), next_fire("default/te"));
}

// For a job a timeout launched (action run), `jobs why` prints what the launch ignored, not only
// "launched by timeout (action run)", in the text as in --json. And a window's wait shows the
// local time now live (the stored reason leaves it out, so it stays the same).
TEST_F(PgStoreTest, WhyListsWhatALaunchByTimeoutIgnored) {
  // A window closed now: it opens two hours from now, for an hour.
  const int64_t hour = (Count("SELECT extract(hour from now() AT TIME ZONE 'UTC')::bigint") + 2) % 24;
  auto hh = [](int64_t h) { return std::string(h < 10 ? "0" : "") + std::to_string(h) + ":00"; };
  json window = PartitionSchedule("w", "dw", {{"time_window", {{"start", hh(hour)}, {"end", hh((hour + 1) % 24)}}}});
  window["timeout"] = {{"after", "1h"}, {"action", "run"}};
  json incomplete = PartitionSchedule("i", "di");
  incomplete["trigger"] = {{"all", {{{"partition", {{"dataset", "di"}}}}, {{"partition", {{"dataset", "dj"}}}}}}};
  incomplete["timeout"] = {{"after", "1h"}, {"action", "run"}};
  Apply({window, incomplete});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "dw"), PartitionEvent("e2", "di")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  auto job_of = [&](const std::string& name) {
    return Count("SELECT j.id FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE s.name = 'default/" + name +
                 "'");
  };
  auto seen = InspectJob(conn_, job_of("w"));
  ASSERT_TRUE(seen.ok()) << seen.status().ToString();
  json why = ExplainJob(*seen);
  std::string text = FormatExplanation(why);
  EXPECT_EQ(why.value("state", ""), "pending_constraint") << text;
  EXPECT_NE(text.find("[wait]  time_window: outside window " + hh(hour) + "-" + hh((hour + 1) % 24) + " UTC; opens "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("; local time now " + LocalClock("UTC", seen->now) + "\n"), std::string::npos) << text;

  Exec("UPDATE jobs SET opened_at = now() - interval '2 hours', next_check_at = now() - interval '1 second'");
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  ASSERT_EQ(Count("SELECT count(*) FROM jobs WHERE state = 'launched' AND forced"), 2);
  for (const std::string name : {"w", "i"}) {
    seen = InspectJob(conn_, job_of(name));
    ASSERT_TRUE(seen.ok()) << seen.status().ToString();
    text = FormatExplanation(ExplainJob(*seen));
    const std::string launched =
        "launched by timeout (action run) run " + seen->job.value("run_id", "") + ", ignoring: ";
    EXPECT_NE(text.find(launched + (name == "w" ? "time_window (outside window " : "trigger (incomplete)\n")),
              std::string::npos)
        << text;
  }
}

TEST_F(PgStoreTest, ALaunchDecidedButNotYetPublishedIsShownAsSuch) {
  Apply({PartitionSchedule("s", "d")});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  const int64_t job = Count("SELECT id FROM jobs");
  auto counts = store_->CountJobs();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ((*counts)["pending_launch"], 1);
  auto seen = InspectJob(conn_, job);
  ASSERT_TRUE(seen.ok()) << seen.status().ToString();
  std::string summary = ExplainJob(*seen)["summary"];
  EXPECT_NE(summary.find("has not published its launch request yet"), std::string::npos) << summary;

  auto rows = store_->ClaimOutbox(10);
  ASSERT_TRUE(rows.ok());
  ASSERT_TRUE(store_->CompleteOutbox({rows->messages[0].id}).ok());
  EXPECT_EQ(store_->CountJobs()->at("pending_launch"), 0);
  seen = InspectJob(conn_, job);
  ASSERT_TRUE(seen.ok());
  summary = ExplainJob(*seen)["summary"];
  EXPECT_EQ(summary, "launched as run " + (*seen).job["run_id"].get<std::string>());
  // Published: a delete now leaves the launched job and its run alone.
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kDelete, Actor{"test"}).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='launched'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state='launched'"), 1);
}

TEST_F(PgStoreTest, UnconfirmedOutboxRowsStayForTheNextRelay) {
  Apply({PartitionSchedule("s", "d")});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d"), PartitionEvent("e2", "d", "q")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  auto rows = store_->ClaimOutbox(10);
  ASSERT_EQ(rows->messages.size(), 2u);
  ASSERT_TRUE(store_->CompleteOutbox({rows->messages[0].id}).ok());
  auto again = store_->ClaimOutbox(10);
  ASSERT_EQ(again->messages.size(), 1u);
  EXPECT_EQ(again->messages[0].payload, rows->messages[1].payload);  // same run id re-sent
}

// A claim says whether it took as many single messages as it may: the relay then claims again
// at once rather than waiting for a wake.
TEST_F(PgStoreTest, AClaimIsFullWhenItTookAsManyMessagesAsItMay) {
  Apply({PartitionSchedule("s", "d")});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d"), PartitionEvent("e2", "d", "q")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  auto one = store_->ClaimOutbox(1);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  ASSERT_EQ(one->messages.size(), 1u);
  EXPECT_TRUE(one->full);
  ASSERT_TRUE(store_->CompleteOutbox({one->messages[0].id}).ok());
  auto rest = store_->ClaimOutbox(2);
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  ASSERT_EQ(rest->messages.size(), 1u);
  EXPECT_FALSE(rest->full);
}

TEST_F(PgStoreTest, WorkerReportsMoveRunsAndFreeTheirSlot) {
  Apply({PartitionSchedule("s", "d", {{"max_concurrent_runs", 1}})});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d", "a"), PartitionEvent("e2", "d", "b")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM runs"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='pending_constraint'"), 1);
  pqxx::connection c(conn_);
  std::string run_id = pqxx::work(c).exec1("SELECT run_id FROM runs")[0].as<std::string>();
  auto r = store_->ApplyBatch(Batch({ProgramEvent("w1", "prog.s", run_id, ProgramStatus::kStarted),
                                     ProgramEvent("w2", "prog.s", run_id, ProgramStatus::kSucceeded),
                                     ProgramEvent("w3", "prog.s", run_id, ProgramStatus::kFailed)},
                                    2));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->run_outcomes["succeeded"], 1);
  EXPECT_EQ(r->run_outcomes.count("failed"), 0u);  // a late report changes nothing
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state='succeeded'"), 1);
  // The waiting job was woken by the run's end and now launches.
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM runs"), 2);
}

// A repeated `succeeded` for one run must not launch the downstream schedule again (nor, with
// count 2, complete it with two copies): a report that moves no run trigd knows is a duplicate
// for triggers too. A report for a run trigd did not launch counts as sent
// (docs/adr/0033-reports-that-move-no-run.md).
TEST_F(PgStoreTest, AReportThatMovesNoKnownRunCountsForNoTrigger) {
  json down = {{"name", "down"},
               {"program", {{"name", "prog.down"}}},
               {"trigger", {{"program", {{"name", "prog.s"}, {"count", 2}}}}}};
  Apply({PartitionSchedule("s", "d"), down});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d", "a")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  pqxx::connection c(conn_);
  std::string run_id = pqxx::work(c).exec1("SELECT run_id FROM runs")[0].as<std::string>();
  auto r = store_->ApplyBatch(Batch({ProgramEvent("w1", "prog.s", run_id, ProgramStatus::kSucceeded),
                                     ProgramEvent("w2", "prog.s", run_id, ProgramStatus::kSucceeded)},
                                    1));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcome, (std::vector<EventOutcome>{EventOutcome::kApplied, EventOutcome::kDuplicate}));
  r = store_->ApplyBatch(Batch({ProgramEvent("w3", "prog.s", run_id, ProgramStatus::kSucceeded)}, 3));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcome, std::vector<EventOutcome>{EventOutcome::kDuplicate});
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE schedule_name='default/down' AND state='pending_trigger'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE schedule_name='default/down' AND state<>'pending_trigger'"), 0);
  // A program trigd did not launch: its report counts, and completes the trigger.
  r = store_->ApplyBatch(Batch({ProgramEvent("x1", "prog.s", "external-run", ProgramStatus::kSucceeded)}, 4));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcome, std::vector<EventOutcome>{EventOutcome::kApplied});
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE schedule_name='default/down' AND state='pending_constraint'"), 1);
  // A report reaching no schedule and no run changes nothing.
  r = store_->ApplyBatch(Batch({ProgramEvent("x2", "prog.nobody", "r-9", ProgramStatus::kSucceeded)}, 5));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcome, std::vector<EventOutcome>{EventOutcome::kNoMatch});
}

TEST_F(PgStoreTest, HighestPriorityWaitingJobTakesTheFreedGroupSlotFirst) {
  auto doc = [](const std::string& name, int priority) {
    json d = PartitionSchedule(name, "d." + name, {{"concurrency_group", {{"name", "g1"}, {"max", 1}}}});
    d["priority"] = priority;
    return d;
  };
  Apply({doc("blocker", 0), doc("low", 1), doc("high", 9), doc("mid", 5)});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("b", "d.blocker")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  ASSERT_TRUE(store_
                  ->ApplyBatch(Batch(
                      {PartitionEvent("l", "d.low"), PartitionEvent("h", "d.high"), PartitionEvent("m", "d.mid")}, 1))
                  .ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM runs"), 1);
  std::vector<std::string> order;
  int64_t offset = 4;
  for (int i = 0; i < 3; ++i) {
    pqxx::connection c(conn_);
    auto row = pqxx::work(c).exec1("SELECT run_id, program FROM runs WHERE state='launched'");
    auto r = store_->ApplyBatch(Batch({ProgramEvent("done" + std::to_string(i), row[1].as<std::string>(),
                                                    row[0].as<std::string>(), ProgramStatus::kSucceeded)},
                                      offset++));
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(store_->CheckDueJobs(100).ok());
    order.push_back(pqxx::work(c).exec1("SELECT schedule_name FROM runs WHERE state='launched'")[0].as<std::string>());
  }
  EXPECT_EQ(order, (std::vector<std::string>{"default/high", "default/mid", "default/low"}));
}

// Three checkers (three trigd instances) race on the same schedules and group while runs end
// at random (each end's ingest transaction checks the jobs it woke, the fast path); an observer polls committed state
// and must never see a limit exceeded.
TEST_F(PgStoreTest, ShardedCheckersEachClaimOnlyTheirSchedulesJobs) {
  std::vector<json> docs;
  std::vector<Event> events;
  for (int i = 0; i < 6; ++i) {
    docs.push_back(PartitionSchedule("s" + std::to_string(i), "d" + std::to_string(i)));
    events.push_back(PartitionEvent("e" + std::to_string(i), "d" + std::to_string(i)));
  }
  Apply(docs);
  ASSERT_TRUE(store_->ApplyBatch(Batch(events, 0)).ok());
  const int64_t odd = Count("SELECT count(*) FROM jobs WHERE schedule_id % 2 = 1");
  ASSERT_GT(odd, 0);
  ASSERT_LT(odd, 6);
  auto second = NewStore();
  second->SetCheckerShard(1, 2);
  auto r = second->CheckDueJobs(100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->launched, odd);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='launched' AND schedule_id % 2 = 0"), 0);
  auto first = NewStore();
  first->SetCheckerShard(0, 2);
  r = first->CheckDueJobs(100);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->launched, 6 - odd);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='launched'"), 6);
}

TEST_F(PgStoreTest, ConcurrencyLimitsHoldWithThreeRacingCheckers) {
  std::vector<json> docs;
  for (int i = 0; i < 3; ++i) {
    docs.push_back(
        PartitionSchedule("c" + std::to_string(i), "d" + std::to_string(i),
                          {{"max_concurrent_runs", 2}, {"concurrency_group", {{"name", "shared"}, {"max", 3}}}}));
  }
  Apply(docs);
  const int kJobsPerSchedule = 40;
  std::vector<Event> events;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < kJobsPerSchedule; ++j)
      events.push_back(PartitionEvent("e" + std::to_string(i) + "." + std::to_string(j), "d" + std::to_string(i),
                                      std::to_string(j)));
  ASSERT_TRUE(store_->ApplyBatch(Batch(events, 0)).ok());
  ASSERT_EQ(Count("SELECT count(*) FROM jobs WHERE state='pending_constraint'"), 3 * kJobsPerSchedule);
  std::atomic<bool> done{false};
  std::atomic<int> violations{0}, max_group{0}, observations{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      auto s = NewStore();
      while (!done) {
        auto r = s->CheckDueJobs(5);
        if (!r.ok() && r.status().code() != StatusCode::kAborted) ADD_FAILURE() << r.status().ToString();
      }
    });
  }
  threads.emplace_back([&] {
    pqxx::connection c(conn_);
    while (!done) {
      pqxx::read_transaction tx(c);
      int64_t group =
          tx.exec1("SELECT count(*) FROM runs WHERE state IN ('launched','running','retry_wait')")[0].as<int64_t>();
      int64_t per = tx.exec1(
                          "SELECT coalesce(max(n), 0) FROM (SELECT count(*) n FROM runs WHERE state IN "
                          "('launched','running','retry_wait') GROUP BY schedule_id) q")[0]
                        .as<int64_t>();
      if (group > 3 || per > 2) ++violations;
      max_group = std::max<int>(max_group, static_cast<int>(group));
      ++observations;
    }
  });
  // Run ends go through the fast path, as in trigd: the woken jobs race the three checkers.
  auto finisher = NewStore(/*fast_path=*/true);
  std::mt19937 rng(7);
  int64_t offset = static_cast<int64_t>(events.size());
  int finished = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (finished < 3 * kJobsPerSchedule && std::chrono::steady_clock::now() < deadline) {
    pqxx::connection c(conn_);
    auto active = pqxx::work(c).exec("SELECT run_id, program FROM runs WHERE state='launched'");
    if (active.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    auto row = active[rng() % active.size()];
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 5));
    IngestBatch b = Batch({ProgramEvent("fin" + std::to_string(finished), row[1].as<std::string>(),
                                        row[0].as<std::string>(), ProgramStatus::kSucceeded)},
                          offset);
    auto r = finisher->ApplyBatch(b);
    if (r.ok() && !r->fenced) {
      ++offset;
      ++finished;
    }
  }
  done = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(finished, 3 * kJobsPerSchedule);
  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(max_group.load(), 3);  // the limit was reached, so the test exercised it
  EXPECT_GT(observations.load(), 50);
  EXPECT_EQ(Count("SELECT count(*) FROM runs"), 3 * kJobsPerSchedule);
  EXPECT_EQ(Count("SELECT count(DISTINCT job_id) FROM runs"), 3 * kJobsPerSchedule);
}

TEST_F(PgStoreTest, UpdateDiscardsTheOpenJobAndCountingStartsAfresh) {
  json doc = {
      {"name", "s"}, {"program", {{"name", "p"}}}, {"trigger", {{"partition", {{"dataset", "d"}, {"count", 2}}}}}};
  Apply({doc});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d", "a")}, 0)).ok());
  doc["priority"] = 3;
  Apply({doc});
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='discarded' AND discard_reason='schedule updated'"), 1);
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e2", "d", "b")}, 1)).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='pending_trigger'"), 1);  // 1 of 2, not 2 of 2
}

TEST_F(PgStoreTest, DeleteWithdrawsALaunchRequestNotYetPublished) {
  Apply({PartitionSchedule("s", "d")});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  ASSERT_EQ(Count("SELECT count(*) FROM outbox WHERE job_id IS NOT NULL"), 1);
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kDelete, Actor{"test"}).ok());
  // The request is withdrawn; its run, killed, is announced instead.
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE topic LIKE 't.launch.%'"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE topic = 't.events.program' "
                  "AND payload::jsonb->'payload'->>'reason' = 'schedule_deleted'"),
            1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='discarded'"), 1);
  EXPECT_EQ(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kDelete, Actor{"test"}).code(),
            StatusCode::kNotFound);
  // For trigd's counters, taken once.
  auto counts = store_->TakeChangeCounts();
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  EXPECT_EQ(counts->jobs_discarded, 1);
  EXPECT_EQ(counts->runs_killed, 1);
  EXPECT_EQ(store_->TakeChangeCounts()->jobs_discarded, 0);
}

// Jobs discarded by trigctl's suspend, update and delete reach
// trigd_jobs_total{transition="discarded"} once, although the change runs in trigctl's process.
TEST_F(PgStoreTest, JobsDiscardedBySuspendAndUpdateAreCountedOnceForTrigd) {
  json doc = PartitionSchedule("s", "d");
  doc["trigger"] = {{"partition", {{"dataset", "d"}, {"count", 2}}}};
  json other = PartitionSchedule("o", "d2");
  other["trigger"] = {{"partition", {{"dataset", "d2"}, {"count", 2}}}};
  Apply({doc, other});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d"), PartitionEvent("e2", "d2")}, 0)).ok());
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kSuspend, Actor{"test"}).ok());
  other["priority"] = 3;
  Apply({other});
  auto second = NewStore();
  auto counts = second->TakeChangeCounts();
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  EXPECT_EQ(counts->jobs_discarded, 2);
  EXPECT_EQ(counts->runs_killed, 0);
  EXPECT_EQ(store_->TakeChangeCounts()->jobs_discarded, 0);  // another instance took them
}

TEST_F(PgStoreTest, DueTickIsProducedOncePerFireTime) {
  Apply({{{"name", "t"}, {"program", {{"name", "p"}}}, {"trigger", {{"time", {{"every", "1m"}}}}}}});
  Exec("UPDATE time_triggers SET anchor = now() - interval '90 seconds', next_fire_at = now() - interval '30 seconds'");
  auto r = store_->TickTimeTriggers(100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->produced, 1);
  EXPECT_EQ(store_->TickTimeTriggers(100)->produced, 0);
  // Its copy for observers, in a bundle row (outbox_bundle.h) that the relay's claim expands.
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE topic='t.events.time' AND bundle"), 1);
  auto rows = store_->ClaimOutbox(10);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->messages.size(), 1u);
  EXPECT_EQ(rows->messages[0].topic, "t.events.time");
  EXPECT_EQ(rows->messages[0].key, "default/t");
  auto tick = ParseEnvelope(rows->messages[0].payload);
  ASSERT_TRUE(tick.ok()) << tick.status().ToString();
  EXPECT_EQ(tick->id.rfind("tick:default/t:", 0), 0u) << tick->id;
  ASSERT_TRUE(store_->CompleteOutbox({rows->messages[0].id}).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM outbox"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM time_triggers WHERE next_fire_at > now()"), 1);
  // Applied in the same transaction, once: the trigger's row lock decides it, not a
  // de-duplication id (ingestion skips the published copy, IsOwnTick).
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE triggered_by->0->>'id' LIKE 'tick:default/t:%'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM seen_events"), 0);
}

// SPEC §9 `active`: the tick producer makes no fire time outside the schedule's period. One
// that begins later waits for it (its first due time is the period's first fire time); one
// that ended stops, and its fire times not produced before the end are skipped, since the
// schedule ignores events by then.
TEST_F(PgStoreTest, NoTickOutsideTheActivePeriod) {
  const TimePoint now = TimePoint(Millis(Count("SELECT floor(extract(epoch from now()) * 1000)::bigint")));
  const TimePoint from = now + std::chrono::hours(1), until = now - std::chrono::seconds(60);
  auto every_minute = [](const std::string& name) {
    return json{{"name", name}, {"program", {{"name", "p"}}}, {"trigger", {{"time", {{"every", "1m"}}}}}};
  };
  json later = every_minute("later"), ended = every_minute("ended");
  later["active"] = {{"from", FormatTime(from)}};
  ended["active"] = {{"until", FormatTime(until)}};
  Apply({later, ended});
  const std::string ms = "floor(extract(epoch from next_fire_at) * 1000)::bigint";
  const std::string later_id = "(SELECT id FROM schedules WHERE name = 'default/later')";
  const std::string ended_id = "(SELECT id FROM schedules WHERE name = 'default/ended')";
  EXPECT_GE(Count("SELECT " + ms + " FROM time_triggers WHERE schedule_id = " + later_id),
            from.time_since_epoch().count());
  EXPECT_EQ(Count("SELECT count(*) FROM time_triggers WHERE next_fire_at = 'infinity' AND schedule_id = " + ended_id),
            1);
  // Both made due with fire times 90 s and 30 s ago: the later one's are before its period; the
  // ended one's first is inside its period but due after its end, its second after its end.
  Exec(
      "UPDATE time_triggers SET anchor = date_trunc('second', now()) - interval '150 seconds', "
      "next_fire_at = now() - interval '1 second'");
  auto r = store_->TickTimeTriggers(100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->produced, 0);
  EXPECT_EQ(r->skipped, 1) << "the ended schedule's fire time 90 s ago";
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM outbox"), 0);
  EXPECT_GE(Count("SELECT " + ms + " FROM time_triggers WHERE schedule_id = " + later_id),
            from.time_since_epoch().count());
  EXPECT_EQ(Count("SELECT count(*) FROM time_triggers WHERE next_fire_at = 'infinity' AND schedule_id = " + ended_id),
            1);
  EXPECT_EQ(store_->TickTimeTriggers(100)->produced, 0);
}

// SPEC §5: a fire time has one identity (schedule + fire time), whether trigd's checker or a
// producer's tick decides it: a producer's tick for a fire time trigd has fired does not launch
// it again (docs/adr/0006-fire-time-identity.md).
class FireTimeIdentityTest : public PgStoreTest {
 protected:
  // A `every: 1m` schedule "default/t" (catch-up `latest`) whose anchor lies `ago` in the past,
  // due now; returns the anchor.
  TimePoint Due(const std::string& ago) {
    Apply({{{"name", "t"},
            {"program", {{"name", "p"}}},
            {"trigger", {{"time", {{"every", "1m"}, {"catchup", "latest"}}}}}}});
    Exec("UPDATE time_triggers SET anchor = date_trunc('second', now()) - interval '" + ago +
         "', next_fire_at = now() - interval '1 second'");
    return TimePoint(Millis(Count("SELECT floor(extract(epoch from anchor) * 1000)::bigint FROM time_triggers")));
  }
  std::string Outcome(const Event& e, int64_t offset) {
    auto r = store_->ApplyBatch(Batch({e}, offset));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() && !r->outcome.empty() ? EventOutcomeName(r->outcome[0]) : "";
  }
  int64_t Jobs() { return Count("SELECT count(*) FROM jobs"); }
};

TEST_F(FireTimeIdentityTest, AProducersTickForAFireTimeTrigdProducedIsADuplicate) {
  const TimePoint anchor = Due("90 seconds");
  ASSERT_EQ(store_->TickTimeTriggers(100)->produced, 1);
  EXPECT_EQ(Jobs(), 1);
  EXPECT_EQ(Outcome(TickEvent("manual-1", "default/t", anchor + std::chrono::minutes(1)), 0), "duplicate");
  EXPECT_EQ(Jobs(), 1);
  // A time that is not one of its fire times is a run forced then: applied, once.
  const TimePoint forced = anchor + std::chrono::seconds(61);
  EXPECT_EQ(Outcome(TickEvent("force-1", "default/t", forced), 1), "applied");
  EXPECT_EQ(Outcome(TickEvent("force-2", "default/t", forced), 2), "duplicate");
  EXPECT_EQ(Jobs(), 2);
}

TEST_F(FireTimeIdentityTest, TwoTicksForOneFireTimeAreOneWhateverTheirIds) {
  const TimePoint anchor = Due("30 seconds");  // its first fire time is 30 s ahead
  const TimePoint fire = anchor + std::chrono::minutes(1);
  auto r = store_->ApplyBatch(Batch({TickEvent("a", "default/t", fire), TickEvent("b", "default/t", fire)}, 0));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcome, (std::vector<EventOutcome>{EventOutcome::kApplied, EventOutcome::kDuplicate}));
  EXPECT_EQ(Outcome(TickEvent("c", "default/t", fire), 2), "duplicate");
  EXPECT_EQ(Jobs(), 1);
}

// A producer's tick ahead of trigd's checker (a run brought forward, or one racing the checker
// at the fire time): the checker does not produce that fire time again.
TEST_F(FireTimeIdentityTest, AFireTimeAProducersTickAppliedIsNotProducedAgain) {
  const TimePoint anchor = Due("90 seconds");  // 60 s after it is due and not decided yet
  const TimePoint fire = anchor + std::chrono::minutes(1);
  EXPECT_EQ(Outcome(TickEvent("early", "default/t", fire), 0), "applied");
  EXPECT_EQ(Count("SELECT count(*) FROM time_triggers WHERE ticked_until IS NOT NULL"), 1);
  auto r = store_->TickTimeTriggers(100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->produced, 0);
  EXPECT_EQ(Jobs(), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE topic = 't.events.time'"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM time_triggers WHERE ticked_until IS NULL AND last_fire_time IS NOT NULL"), 1);
}

// Fire times the catch-up policy skipped were never produced: a tick for one is a backfill.
TEST_F(FireTimeIdentityTest, AProducersTickForASkippedFireTimeIsABackfill) {
  const TimePoint anchor = Due("330 seconds");  // 5 fire times due; `latest` produces the 5th
  auto r = store_->TickTimeTriggers(100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->produced, 1);
  EXPECT_EQ(r->skipped, 4);
  EXPECT_EQ(Outcome(TickEvent("fill-2", "default/t", anchor + std::chrono::minutes(2)), 0), "applied");
  EXPECT_EQ(Outcome(TickEvent("fill-2-again", "default/t", anchor + std::chrono::minutes(2)), 1), "duplicate");
  EXPECT_EQ(Outcome(TickEvent("fill-5", "default/t", anchor + std::chrono::minutes(5)), 2), "duplicate");
  EXPECT_EQ(Outcome(TickEvent("fill-4", "default/t", anchor + std::chrono::minutes(4)), 3), "applied");
  EXPECT_EQ(Jobs(), 3);
}

// A cron trigger keeps what it decided across a suspension: its fire times do not depend on
// when it was resumed. (An `every` trigger's are anchored at the resume: it starts afresh.)
TEST_F(FireTimeIdentityTest, ACronTriggerKeepsItsDecidedFireTimesAcrossASuspension) {
  Apply({{{"name", "c"}, {"program", {{"name", "p"}}}, {"trigger", {{"time", {{"cron", "* * * * *"}}}}}}});
  // Decided (and produced) up to three minutes ago.
  const int64_t minute_ms = Count("SELECT floor(extract(epoch from date_trunc('minute', now())) * 1000)::bigint");
  const TimePoint minute = TimePoint(Millis(minute_ms));
  Exec("UPDATE time_triggers SET anchor = to_timestamp(" + std::to_string(minute_ms) +
       " / 1000.0) - interval '10 minutes', "
       "last_fire_time = to_timestamp(" +
       std::to_string(minute_ms) + " / 1000.0) - interval '3 minutes'");
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/c", ScheduleAction::kSuspend, Actor{"test"}).ok());
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/c", ScheduleAction::kResume, Actor{"test"}).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM time_triggers WHERE last_fire_time > now() - interval '5 seconds' "
                  "AND next_fire_at > now()"),
            1);
  EXPECT_EQ(Outcome(TickEvent("before", "default/c", minute - std::chrono::minutes(3)), 0), "duplicate");
  EXPECT_EQ(Outcome(TickEvent("during", "default/c", minute - std::chrono::minutes(1)), 1), "applied");
  EXPECT_EQ(Jobs(), 1);
  EXPECT_EQ(store_->TickTimeTriggers(100)->produced, 0);  // nothing due before the next minute
}

// A suspended schedule's time trigger leaves the due range (next_fire_at 'infinity'), so the
// checkers' look finds nothing due; resuming counts fire times from then. A schedule applied
// suspended ("enabled": false) starts out of the range too.
TEST_F(PgStoreTest, SuspendedScheduleLeavesTheDueRangeAndResumeCountsFromThen) {
  Apply({{{"name", "t"}, {"program", {{"name", "p"}}}, {"trigger", {{"time", {{"every", "1m"}}}}}},
         {{"name", "off"},
          {"program", {{"name", "p"}}},
          {"enabled", false},
          {"trigger", {{"time", {{"every", "1m"}}}}}}});
  EXPECT_EQ(Count("SELECT count(*) FROM time_triggers t JOIN schedules s ON s.id = t.schedule_id "
                  "WHERE s.name = 'default/off' AND t.next_fire_at = 'infinity'"),
            1);
  Exec(
      "UPDATE time_triggers SET anchor = now() - interval '90 seconds', next_fire_at = now() - interval '30 seconds' "
      "WHERE schedule_id = (SELECT id FROM schedules WHERE name = 'default/t')");
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/t", ScheduleAction::kSuspend, Actor{"test"}).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM time_triggers WHERE next_fire_at <= now()"), 0);
  auto r = store_->TickTimeTriggers(100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->produced, 0);
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/t", ScheduleAction::kResume, Actor{"test"}).ok());
  EXPECT_EQ(
      Count("SELECT count(*) FROM time_triggers t JOIN schedules s ON s.id = t.schedule_id "
            "WHERE s.name = 'default/t' AND t.next_fire_at > now() AND t.next_fire_at <= now() + interval '1 minute'"),
      1);
  EXPECT_EQ(store_->TickTimeTriggers(100)->produced, 0);  // nothing due until a minute from the resume
}

// Resuming an active schedule keeps its open job and its time trigger's phase; an update of a
// schedule suspended by the command keeps it suspended (docs/adr/0018-update-keeps-suspension.md).
TEST_F(PgStoreTest, ResumeOfAnActiveScheduleAndSuspendOfASuspendedOneChangeNothing) {
  json doc = PartitionSchedule("s", "d");
  doc["trigger"] = {{"partition", {{"dataset", "d"}, {"count", 2}}}};
  Apply({doc});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d", "a")}, 0)).ok());
  bool changed = true;
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kResume, Actor{"test"}, &changed).ok());
  EXPECT_FALSE(changed);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='pending_trigger'"), 1);
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kSuspend, Actor{"test"}, &changed).ok());
  EXPECT_TRUE(changed);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='pending_trigger'"), 0);
  const int64_t changes = Count("SELECT count(*) FROM schedule_changes");
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kSuspend, Actor{"test"}, &changed).ok());
  EXPECT_FALSE(changed);
  EXPECT_EQ(Count("SELECT count(*) FROM schedule_changes"), changes);
}

TEST_F(PgStoreTest, AnUpdateKeepsASuspensionByCommandUntilTheDocumentChangesEnabled) {
  json doc = {{"name", "t"}, {"program", {{"name", "p"}}}, {"trigger", {{"time", {{"every", "1m"}}}}}};
  Apply({doc});
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/t", ScheduleAction::kSuspend, Actor{"test"}).ok());
  doc["trigger"]["time"]["every"] = "2m";
  Apply({doc});
  EXPECT_EQ(Count("SELECT count(*) FROM schedules WHERE state='suspended' AND version=2"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM time_triggers WHERE next_fire_at = 'infinity'"), 1);
  // A document that says enabled: false, then true, decides.
  doc["enabled"] = false;
  Apply({doc});
  EXPECT_EQ(Count("SELECT count(*) FROM schedules WHERE state='suspended'"), 1);
  doc["enabled"] = true;
  Apply({doc});
  EXPECT_EQ(Count("SELECT count(*) FROM schedules WHERE state='active' AND version=4"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM time_triggers WHERE next_fire_at <> 'infinity'"), 1);
  // And the other way round: applied with enabled: false, resumed by command, updated keeping
  // enabled: false: it stays active.
  doc["enabled"] = false;
  Apply({doc});
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/t", ScheduleAction::kResume, Actor{"test"}).ok());
  doc["trigger"]["time"]["every"] = "3m";
  Apply({doc});
  EXPECT_EQ(Count("SELECT count(*) FROM schedules WHERE state='active' AND version=6"), 1);
}

// A worker's `failed` report is retried as `retry` says, like a lost run: a failed attempt with
// attempts left waits for its retry, and no downstream trigger sees it; the last attempt's
// failure is the one they see (docs/adr/0011-worker-failures-are-retried.md).
TEST_F(PgStoreTest, AFailedAttemptIsRetriedAndOnlyTheLastFailureReachesDownstream) {
  json doc = PartitionSchedule("s", "d");
  doc["retry"] = {{"max_attempts", 2}, {"backoff", "1s"}};
  json down = {{"name", "down"},
               {"program", {{"name", "prog.down"}}},
               {"trigger", {{"program", {{"name", "prog.s"}, {"status", {"failed"}}}}}}};
  Apply({doc, down});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  pqxx::connection c(conn_);
  const std::string run = pqxx::work(c).exec1("SELECT run_id FROM runs")[0].as<std::string>();
  auto first = store_->ApplyBatch(Batch({ProgramEvent("f1", "prog.s", run, ProgramStatus::kFailed)}, 1));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->outcome, std::vector<EventOutcome>{EventOutcome::kApplied});
  EXPECT_TRUE(first->run_outcomes.empty());
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state = 'retry_wait' AND reason = 'failed' AND attempt = 1 "
                  "AND next_attempt_at > now()"),
            1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE schedule_name = 'default/down'"), 0);
  EXPECT_EQ(Count("SELECT active_runs FROM schedule_runtime WHERE schedule_id = "
                  "(SELECT id FROM schedules WHERE name = 'default/s')"),
            1);  // still holds its slot
  Exec("UPDATE runs SET next_attempt_at = now() - interval '1 second'");
  EXPECT_EQ(store_->SweepRuns()->retried, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state = 'launched' AND attempt = 2"), 1);
  // A late copy of attempt 1's report changes nothing.
  auto late = store_->ApplyBatch(Batch({ProgramEvent("f1-late", "prog.s", run, ProgramStatus::kFailed)}, 2));
  ASSERT_TRUE(late.ok());
  Event second = ProgramEvent("f2", "prog.s", run, ProgramStatus::kFailed);
  second.program.attempt = 2;
  auto last = store_->ApplyBatch(Batch({second}, 3));
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  EXPECT_EQ(last->run_outcomes["failed"], 1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state = 'failed' AND attempt = 2"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE schedule_name = 'default/down'"), 1);
  EXPECT_EQ(Count("SELECT active_runs FROM schedule_runtime WHERE schedule_id = "
                  "(SELECT id FROM schedules WHERE name = 'default/s')"),
            0);
}

// trigd restarted after a stop longer than heartbeat_timeout must not sweep before reading the
// heartbeats the worker sent meanwhile (it would declare the healthy run lost and launch it
// again: two copies running). Silence counts only up to the moment trigd has read every
// partition of the program topic to its end (docs/adr/0013-lost-runs-wait-for-the-program-topic.md).
TEST_F(PgStoreTest, ARunIsLostOnlyForSilenceUpToWhereTrigdHasReadTheProgramTopic) {
  json doc = PartitionSchedule("s", "d");
  doc["heartbeat_timeout"] = "1s";
  Apply({doc});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  Exec("UPDATE runs SET state = 'running', last_seen_at = now() - interval '10 seconds'");
  store_->SetConsumerGroup("g");
  // Reports committed up to offset 5 of partition 0; read to the end a minute ago, before trigd
  // stopped.
  Exec("INSERT INTO consumer_offsets (group_id, topic, partition, next_offset) VALUES ('g', 't.events.program', 0, 5)");
  const std::string p0 = "t.events.program";
  ASSERT_TRUE(store_->MarkCaughtUp("g", {{p0, 0, 0, 5}}, std::chrono::minutes(1)).ok());
  auto swept = store_->SweepRuns();
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  EXPECT_EQ(swept->lost, 0);
  // Back: the broker holds three reports trigd has not committed yet. Not read to the end: no mark.
  ASSERT_TRUE(store_->MarkCaughtUp("g", {{p0, 0, 0, 8}}, Millis(0)).ok());
  EXPECT_EQ(store_->SweepRuns()->lost, 0);
  EXPECT_EQ(Count("SELECT count(*) FROM consumer_offsets WHERE caught_up_at > now() - interval '30 seconds'"), 0);
  // An empty partition with no position gets one at its end, marked; one with messages and no
  // position is left alone (a position there would skip them).
  ASSERT_TRUE(store_->MarkCaughtUp("g", {{p0, 1, 4, 4}, {p0, 2, 0, 3}}, Millis(0)).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM consumer_offsets WHERE topic = 't.events.program' AND partition = 1 "
                  "AND next_offset = 4 AND caught_up_at IS NOT NULL"),
            1);
  EXPECT_EQ(Count("SELECT count(*) FROM consumer_offsets WHERE topic = 't.events.program' AND partition = 2"), 0);
  EXPECT_EQ(store_->SweepRuns()->lost, 0);  // partition 0 still holds it back
  // The reports read (no heartbeat among them, in this test): then the silence is real.
  Exec("UPDATE consumer_offsets SET next_offset = 8 WHERE topic = 't.events.program' AND partition = 0");
  ASSERT_TRUE(store_->MarkCaughtUp("g", {{p0, 0, 0, 8}}, Millis(0)).ok());
  // A mark never moves back.
  ASSERT_TRUE(store_->MarkCaughtUp("g", {{p0, 0, 0, 8}}, std::chrono::minutes(2)).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM consumer_offsets WHERE caught_up_at < now() - interval '30 seconds'"), 0);
  swept = store_->SweepRuns();
  EXPECT_EQ(swept->lost, 1);
  EXPECT_EQ(swept->failed, 1);
}

// A report with a run's id but another program's name, applied, would end that run, launch the
// other program's downstream schedule, and make the real report a duplicate, so the run's own
// downstream never runs. Such a report is a dead letter, naming both.
TEST_F(PgStoreTest, AReportNamingAnotherProgramThanItsRunsIsADeadLetter) {
  json upstream = PartitionSchedule("s", "d");
  upstream["retry"] = {{"max_attempts", 2}, {"backoff", "1s"}};
  json mine = {{"name", "mine"},
               {"program", {{"name", "prog.mine"}}},
               {"trigger", {{"program", {{"name", "prog.s"}, {"status", {"succeeded", "failed"}}}}}}};
  json other = {{"name", "other"},
                {"program", {{"name", "prog.other"}}},
                {"trigger", {{"program", {{"name", "prog.x"}, {"status", {"succeeded", "failed"}}}}}}};
  Apply({upstream, mine, other});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  const std::string run =
      pqxx::work(*std::make_unique<pqxx::connection>(conn_)).exec1("SELECT run_id FROM runs")[0].as<std::string>();
  // Succeeded and failed (the failed one would be retried first) under the wrong name.
  IngestBatch b = Batch({ProgramEvent("x1", "prog.x", run, ProgramStatus::kSucceeded),
                         ProgramEvent("x2", "prog.x", run, ProgramStatus::kFailed)},
                        1);
  b.sources = {{"t.events.program", 3, 41}, {"t.events.program", 3, 42}};
  auto r = store_->ApplyBatch(b);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcome, (std::vector<EventOutcome>{EventOutcome::kDead, EventOutcome::kDead}));
  EXPECT_EQ(r->dead_reasons, (std::vector<DeadLetterReason>{DeadLetterReason::kBadField, DeadLetterReason::kBadField}));
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state = 'launched' AND attempt = 1"), 1);
  EXPECT_EQ(
      Count("SELECT count(*) FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE s.name = 'default/other'"), 0);
  EXPECT_EQ(
      Count("SELECT count(*) FROM outbox WHERE topic = 't.dead' AND key = 'prog.x' "
            "AND payload::jsonb->>'reason' = 'bad_field: payload.program: run " +
            run +
            " is a run of prog.s, not of prog.x' AND payload::jsonb->>'topic' = 't.events.program' "
            "AND (payload::jsonb->>'offset')::int IN (41, 42) AND payload::jsonb->>'original' LIKE '%\"id\":\"x%'"),
      2);
  // The run's own report still moves it and reaches its own downstream schedule.
  r = store_->ApplyBatch(Batch({ProgramEvent("s1", "prog.s", run, ProgramStatus::kSucceeded)}, 3));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcome, (std::vector<EventOutcome>{EventOutcome::kApplied}));
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state = 'succeeded'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE s.name = 'default/mine'"),
            1);
}

// A run killed by `schedules delete` is announced by a `killed` event (reason schedule_deleted),
// which reaches downstream although the run ended, so a downstream schedule with
// on_upstream_failure: discard learns its upstream ended (docs/adr/0020-delete-kills-and-announces.md).
TEST_F(PgStoreTest, ARunKilledByADeleteIsAnnouncedForDownstreamSchedules) {
  json upstream = PartitionSchedule("s", "d");
  upstream["retry"] = {{"max_attempts", 2}, {"backoff", "1h"}};
  json down = {{"name", "down"},
               {"program", {{"name", "prog.down"}}},
               {"trigger", {{"program", {{"name", "prog.s"}, {"count", 2}, {"on_upstream_failure", "discard"}}}}}};
  Apply({upstream, down});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  pqxx::connection c(conn_);
  const std::string run = pqxx::work(c).exec1("SELECT run_id FROM runs")[0].as<std::string>();
  // Its first attempt fails (a retry waits an hour); another run of prog.s opens down's job.
  ASSERT_TRUE(store_
                  ->ApplyBatch(Batch({ProgramEvent("f1", "prog.s", run, ProgramStatus::kFailed),
                                      ProgramEvent("x1", "prog.s", "ext-1", ProgramStatus::kSucceeded)},
                                     1))
                  .ok());
  ASSERT_EQ(Count("SELECT count(*) FROM runs WHERE state = 'retry_wait'"), 1);
  ASSERT_EQ(Count("SELECT count(*) FROM jobs WHERE state = 'pending_trigger'"), 1);
  Exec("DELETE FROM outbox");
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kDelete, Actor{"test"}).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state = 'killed'"), 1);
  auto killed = pqxx::work(c).exec("SELECT key, payload FROM outbox WHERE topic = 't.events.program'");
  ASSERT_EQ(killed.size(), 1u);
  EXPECT_EQ(killed[0][0].as<std::string>(), "prog.s");
  Result<Event> e = ParseEnvelope(killed[0][1].as<std::string>());
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->id, "killed:" + run + ":1");
  EXPECT_EQ(e->program.status, ProgramStatus::kKilled);
  EXPECT_EQ(e->program.reason, "schedule_deleted");
  EXPECT_EQ(e->program.lineage, run);  // a partition-triggered run starts its own lineage
  // Read back, it reaches down (the run it names has ended, as a lost run's failed has).
  Exec("DELETE FROM outbox");
  auto r = store_->ApplyBatch(Batch({*e}, 3));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcome, std::vector<EventOutcome>{EventOutcome::kApplied});
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state = 'discarded' AND discard_reason LIKE '%upstream%'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE topic = 't.events.program' AND key = 'prog.down' "
                  "AND payload::jsonb->'payload'->>'reason' = 'upstream_failed'"),
            1);
}

TEST_F(PgStoreTest, LostRunIsRetriedWithTheSameRunIdThenFails) {
  json doc = PartitionSchedule("s", "d");
  doc["retry"] = {{"max_attempts", 2}, {"backoff", "1s"}};
  doc["heartbeat_timeout"] = "1s";
  Apply({doc});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  // Still queued (no worker started it): not lost after heartbeat_timeout, only after the
  // queued timeout.
  Exec("UPDATE runs SET last_seen_at = now() - interval '10 seconds'");
  EXPECT_EQ(store_->SweepRuns()->lost, 0);
  Exec("UPDATE runs SET last_seen_at = now() - interval '11 minutes'");
  EXPECT_EQ(store_->SweepRuns()->lost, 1);
  Exec(
      "UPDATE runs SET state = 'running', next_attempt_at = NULL, last_seen_at = now() - interval '10 seconds', "
      "attempt = 1");
  auto s1 = store_->SweepRuns();
  ASSERT_TRUE(s1.ok()) << s1.status().ToString();
  EXPECT_EQ(s1->lost, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state='retry_wait'"), 1);
  Exec(
      "UPDATE runs SET next_attempt_at = now() - interval '1 second', attempt_started_at = now() - interval '1 "
      "minute'");
  EXPECT_EQ(store_->SweepRuns()->retried, 1);
  // The new attempt has not started: attempt 1's start does not show as its own.
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE attempt = 2 AND attempt_started_at IS NULL"), 1);
  {
    // Attempts 1 and 2 as published: the same run, the retry's attempt 2; the same text after
    // start_by (the retry reads as the first attempt's).
    const std::vector<std::string> published = Published();
    ASSERT_EQ(published.size(), 2u);
    const json retry = json::parse(published[1]);
    EXPECT_EQ(retry["attempt"], 2);
    EXPECT_EQ(retry["run_id"], json::parse(published[0])["run_id"]);
    EXPECT_EQ(retry["run_id"], Text("SELECT run_id FROM runs"));
    EXPECT_EQ(published[1].rfind("{\"attempt\":2,\"heartbeat_timeout\":\"1s\",\"launched_at\":\"", 0), 0u)
        << published[1];
    auto tail = [](const std::string& p) { return p.substr(p.find(",\"program\":")); };
    EXPECT_EQ(tail(published[1]), tail(published[0]));
    // launched_at as trigd writes times, and parseable.
    EXPECT_TRUE(ParseTime(retry.value("launched_at", "")).ok()) << published[1];
  }
  Exec("UPDATE runs SET state = 'running', last_seen_at = now() - interval '10 seconds'");
  auto s3 = store_->SweepRuns();
  EXPECT_EQ(s3->failed, 1);
  EXPECT_EQ(
      Count(
          "SELECT count(*) FROM outbox WHERE topic='t.events.program' AND payload::jsonb->'payload'->>'reason'='lost'"),
      1);
  EXPECT_EQ(Count("SELECT active_runs FROM schedule_runtime"), 0);
  // trigd's own failed event, read back, reaches the downstream schedule, although its run
  // had already ended when it was published (a worker's report for an ended run counts for no
  // trigger).
  Apply({{{"name", "down"},
          {"program", {{"name", "prog.down"}}},
          {"trigger", {{"program", {{"name", "prog.s"}, {"status", {"failed"}}}}}}}});
  pqxx::connection c(conn_);
  Result<Event> lost = ParseEnvelope(pqxx::work(c)
                                         .exec1("SELECT payload FROM outbox WHERE topic='t.events.program' AND "
                                                "payload::jsonb->'payload'->>'reason'='lost'")[0]
                                         .as<std::string>());
  ASSERT_TRUE(lost.ok()) << lost.status().ToString();
  auto r = store_->ApplyBatch(Batch({*lost}, 1));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcome, std::vector<EventOutcome>{EventOutcome::kApplied});
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE schedule_name='default/down'"), 1);
}

// A launch request's launched_at as epoch milliseconds.
int64_t LaunchedAtMs(const json& request) {
  auto t = ParseTime(request.value("launched_at", ""));
  EXPECT_TRUE(t.ok()) << request.dump();
  return t.ok() ? std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count() : -1;
}

// Issue 31: a retry changes the run's attempt columns; its stored request (the template) is
// not rewritten, and the request the relay publishes for it has attempt 2, a new launched_at and
// start_by, and every other field as the first attempt's.
TEST_F(PgStoreTest, ARetryChangesTheAttemptColumnsNotTheStoredRequest) {
  json doc = PartitionSchedule("s", "d");
  doc["retry"] = {{"max_attempts", 3}, {"backoff", "1s"}};
  doc["heartbeat_timeout"] = "1s";
  Apply({doc});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  const std::vector<json> first = PublishedJson();
  ASSERT_EQ(first.size(), 1u);
  const std::string stored = Text("SELECT request FROM runs");
  // The stored text holds no attempt's fields; the columns do.
  const json t = json::parse(stored);
  for (const char* field : {"attempt", "heartbeat_timeout", "launched_at", "start_by"})
    EXPECT_FALSE(t.contains(field)) << stored;
  EXPECT_EQ(LaunchedAtMs(first[0]),
            Count("SELECT floor(extract(epoch from attempt_launched_at) * 1000)::bigint FROM runs"));
  Exec("DELETE FROM outbox");
  // Attempt 1's launch an hour back, so that the retry's launched_at differs for sure.
  Exec(
      "UPDATE runs SET attempt_launched_at = attempt_launched_at - interval '1 hour', state = 'running', "
      "last_seen_at = now() - interval '10 seconds'");
  ASSERT_EQ(store_->SweepRuns()->lost, 1);
  Exec("UPDATE runs SET next_attempt_at = now() - interval '1 second'");
  ASSERT_EQ(store_->SweepRuns()->retried, 1);
  EXPECT_EQ(Text("SELECT request FROM runs"), stored);
  EXPECT_EQ(Count("SELECT attempt FROM runs"), 2);
  const std::vector<json> second = PublishedJson();
  ASSERT_EQ(second.size(), 1u);
  json retry = second[0];
  EXPECT_EQ(retry["attempt"], 2);
  const auto launched = [](const json& r) { return *ParseTime(r.value("launched_at", "")); };
  const auto start_by = [](const json& r) { return *ParseTime(r.value("start_by", "")); };
  // Its own launch time (the column set an hour back is now()).
  EXPECT_GE(launched(retry), launched(first[0]));
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE attempt_launched_at > now() - interval '1 minute'"), 1);
  EXPECT_EQ(LaunchedAtMs(retry),
            Count("SELECT floor(extract(epoch from attempt_launched_at) * 1000)::bigint FROM runs"));
  EXPECT_EQ(start_by(retry) - launched(retry), std::chrono::minutes(10));
  EXPECT_EQ(start_by(first[0]) - launched(first[0]), std::chrono::minutes(10));
  // Every other field as the first attempt's.
  for (const char* field : {"attempt", "launched_at", "start_by"}) retry[field] = first[0][field];
  EXPECT_EQ(retry, first[0]);
  // Published again (a relay that crashed before its delete): the same run id and attempt.
  const std::vector<json> again = PublishedJson();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0], second[0]);
}

// schema/016 on a database with a run in flight: its request, stored whole by a trigd before
// 016, becomes a template and its launch time a column; the workers are told its lost attempt's
// start_by as the request said it, and its retry is attempt 2 with the other fields unchanged.
TEST_F(PgStoreTest, ARunInFlightAcrossMigration016IsRetriedWithItsFields) {
  const std::string db = Pg() + " dbname=trigd_store_upgrade_test";
  {
    pqxx::connection admin(Pg());
    pqxx::nontransaction tx(admin);
    tx.exec("DROP DATABASE IF EXISTS trigd_store_upgrade_test WITH (FORCE)");
    tx.exec("CREATE DATABASE trigd_store_upgrade_test");
  }
  const auto old_schema = std::filesystem::temp_directory_path() / "trigd_schema_015";
  std::filesystem::remove_all(old_schema);
  std::filesystem::create_directories(old_schema);
  for (const auto& f : std::filesystem::directory_iterator(TRIGD_SOURCE_DIR "/schema")) {
    const std::string name = f.path().filename().string();
    if (name.ends_with(".sql") && name < "016") std::filesystem::copy(f.path(), old_schema / name);
  }
  ASSERT_TRUE(ApplyMigrations(db, old_schema.string(), nullptr).ok());
  json doc = PartitionSchedule("s", "d");
  doc["retry"] = {{"max_attempts", 3}, {"backoff", "1s"}};
  doc["heartbeat_timeout"] = "1s";
  // The schedule as that schema stores it (ApplySchedules writes the columns of later migrations).
  {
    pqxx::connection c(db);
    pqxx::work tx(c);
    tx.exec_params("INSERT INTO schedules (name, version, doc_hash, document) VALUES ('default/s', 1, 'h', $1::jsonb)",
                   ScheduleToJson(Parse(doc)).dump());
    tx.commit();
  }
  const std::string old_request =
      R"({"attempt":1,"heartbeat_timeout":"1s","launched_at":"2026-11-25T10:00:00.5Z","start_by":"2026-11-25T10:10:00.5Z",)"
      R"("program":{"args":{},"name":"prog.s","target":"default"},"run_id":"r-old","schedule":"default/s",)"
      R"("schedule_version":1,"triggered_by":[{"id":"e1","payload":{"dataset":"d"},"type":"partition"}]})";
  {
    pqxx::connection c(db);
    pqxx::work tx(c);
    tx.exec_params(
        "INSERT INTO runs (run_id, job_id, schedule_id, schedule_name, program, target, state, attempt, "
        "max_attempts, heartbeat_timeout_ms, launched_at, last_seen_at, request) "
        "SELECT 'r-old', 1, id, name, 'prog.s', 'default', 'running', 1, 3, 1000, "
        "'2026-11-25T10:00:00.5Z', now() - interval '10 seconds', $1 FROM schedules",
        old_request);
    tx.commit();
  }
  ASSERT_TRUE(ApplyMigrations(db, TRIGD_SOURCE_DIR "/schema", nullptr).ok());
  {
    pqxx::connection c(db);
    pqxx::work tx(c);
    const json t = json::parse(tx.exec1("SELECT request FROM runs")[0].as<std::string>());
    EXPECT_FALSE(t.contains("attempt")) << t.dump();
    EXPECT_FALSE(t.contains("launched_at")) << t.dump();
    EXPECT_EQ(tx.exec1("SELECT attempt_launched_at = '2026-11-25T10:00:00.5Z' FROM runs")[0].as<bool>(), true);
  }
  auto store = PgStore::Connect(db, "t.");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_EQ((*store)->SweepRuns()->lost, 1);
  auto claimed = (*store)->ClaimOutbox(100);
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->messages.size(), 1u);
  EXPECT_EQ(json::parse(claimed->messages[0].payload)["start_by"], "2026-11-25T10:10:00.500Z");
  ASSERT_TRUE((*store)->CompleteOutbox({claimed->messages[0].id}).ok());
  {
    pqxx::connection c(db);
    pqxx::work tx(c);
    tx.exec("UPDATE runs SET next_attempt_at = now() - interval '1 second'");
    tx.commit();
  }
  ASSERT_EQ((*store)->SweepRuns()->retried, 1);
  claimed = (*store)->ClaimOutbox(100);
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->messages.size(), 1u);
  json retry = json::parse(claimed->messages[0].payload);
  EXPECT_EQ(retry["attempt"], 2);
  EXPECT_NE(retry["launched_at"], "2026-11-25T10:00:00.5Z");
  json old = json::parse(old_request);
  for (const char* field : {"attempt", "launched_at", "start_by"}) retry[field] = old[field];
  EXPECT_EQ(retry, old);
  ASSERT_TRUE((*store)->CompleteOutbox({}).ok());
  store->reset();
  std::filesystem::remove_all(old_schema);
}

// Nothing of a deleted schedule launches (its retry policy is gone with its document): delete
// kills a run waiting for its retry, a running run's failure is final, and the sweep kills a
// retry decided by a transaction that committed after the delete.
TEST_F(PgStoreTest, ADeletedSchedulesRunsAreNotRetried) {
  auto launch = [&](const std::string& name, int64_t offset) {
    json doc = PartitionSchedule(name, "d." + name);
    doc["retry"] = {{"max_attempts", 3}, {"backoff", "1s"}};
    doc["heartbeat_timeout"] = "1s";
    Apply({doc});
    EXPECT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e." + name, "d." + name)}, offset)).ok());
    EXPECT_TRUE(store_->CheckDueJobs(100).ok());
    Exec("DELETE FROM outbox");  // published (else a delete withdraws it)
    pqxx::connection c(conn_);
    return pqxx::work(c)
        .exec_params1("SELECT run_id FROM runs WHERE schedule_name = $1", "default/" + name)[0]
        .as<std::string>();
  };
  auto state = [&](const std::string& run) {
    pqxx::connection c(conn_);
    return pqxx::work(c)
        .exec_params1("SELECT state || '/' || coalesce(reason, '') FROM runs WHERE run_id = $1", run)[0]
        .as<std::string>();
  };
  // Waiting for its retry when the schedule is deleted: killed at once, its slot freed.
  const std::string waiting = launch("waiting", 0);
  ASSERT_TRUE(store_->ApplyBatch(Batch({ProgramEvent("f1", "prog.waiting", waiting, ProgramStatus::kFailed)}, 1)).ok());
  ASSERT_EQ(state(waiting), "retry_wait/failed");
  ASSERT_TRUE(store_->TakeChangeCounts().ok());  // drops the counts of the set-up
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/waiting", ScheduleAction::kDelete, Actor{"test"}).ok());
  EXPECT_EQ(state(waiting), "killed/schedule deleted");
  EXPECT_EQ(store_->TakeChangeCounts()->runs_killed, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE history->-1->>'status' = 'killed' AND next_attempt_at IS NULL"), 1);
  EXPECT_EQ(Count("SELECT active_runs FROM schedule_runtime WHERE schedule_id = "
                  "(SELECT schedule_id FROM runs WHERE run_id = '" +
                  waiting + "')"),
            0);
  // Running when it is deleted: its worker's failure is final, and so is a heartbeat timeout.
  const std::string failing = launch("failing", 2);
  const std::string silent = launch("silent", 3);
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/failing", ScheduleAction::kDelete, Actor{"test"}).ok());
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/silent", ScheduleAction::kDelete, Actor{"test"}).ok());
  auto f = store_->ApplyBatch(Batch({ProgramEvent("f2", "prog.failing", failing, ProgramStatus::kFailed)}, 4));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->run_outcomes["failed"], 1);
  EXPECT_EQ(state(failing), "failed/failed");
  Exec("UPDATE runs SET state = 'running', last_seen_at = now() - interval '10 seconds' WHERE run_id = '" + silent +
       "'");
  auto sw = store_->SweepRuns();
  ASSERT_TRUE(sw.ok()) << sw.status().ToString();
  EXPECT_EQ(sw->failed, 1);
  EXPECT_EQ(state(silent), "failed/lost");
  // A retry decided just after the delete (here: the schedule row removed under it) is killed
  // by the sweep when due, not launched.
  const std::string raced = launch("raced", 5);
  ASSERT_TRUE(store_->ApplyBatch(Batch({ProgramEvent("f3", "prog.raced", raced, ProgramStatus::kFailed)}, 6)).ok());
  Exec("DELETE FROM schedules WHERE name = 'default/raced'");
  Exec("UPDATE runs SET next_attempt_at = now() - interval '1 second' WHERE run_id = '" + raced + "'");
  Exec("DELETE FROM outbox");
  sw = store_->SweepRuns();
  ASSERT_TRUE(sw.ok()) << sw.status().ToString();
  EXPECT_EQ(sw->retried, 0);
  EXPECT_EQ(sw->killed, 1);
  EXPECT_EQ(state(raced), "killed/schedule deleted");
  // No further attempt; the kill is announced.
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE topic LIKE 't.launch.%'"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE topic = 't.events.program' AND payload::jsonb->>'id' = 'killed:" +
                  raced + ":1'"),
            1);
}

// The control messages in the outbox (topic t.control), oldest first, each checked to be keyed
// by the run id it names.
std::vector<json> ControlMessages(const std::string& conn) {
  pqxx::connection c(conn);
  std::vector<json> out;
  for (const auto& r : pqxx::work(c).exec("SELECT key, payload FROM outbox WHERE topic = 't.control' ORDER BY id")) {
    json m = json::parse(r[1].as<std::string>());
    EXPECT_EQ(r[0].as<std::string>(), m.value("run_id", "")) << m.dump();
    out.push_back(std::move(m));
  }
  return out;
}

// Issue 39 (5): a launch request says until when a worker may start it: launched_at plus the
// greater of heartbeat_timeout and the queued timeout, past which the sweep counts a queued
// attempt lost. A retry's request gets its own, from its own launched_at, on both retry paths.
TEST_F(PgStoreTest, LaunchRequestsCarryAStartDeadlinePastWhichTheAttemptIsLost) {
  json quick = PartitionSchedule("quick", "d.quick");
  quick["heartbeat_timeout"] = "1s";
  quick["retry"] = {{"max_attempts", 3}, {"backoff", "1s"}};
  json slow = PartitionSchedule("slow", "d.slow");
  slow["heartbeat_timeout"] = "20m";
  Apply({quick, slow});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d.quick"), PartitionEvent("e2", "d.slow")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  // start_by - launched_at, in seconds, of the launch requests of `program` as published.
  auto windows = [&](const std::string& program) {
    std::vector<int64_t> out;
    for (const json& r : PublishedJson()) {
      if (r["program"]["name"] != program) continue;
      auto start_by = ParseTime(r.value("start_by", "")), launched_at = ParseTime(r.value("launched_at", ""));
      out.push_back(start_by.ok() && launched_at.ok()
                        ? std::chrono::duration_cast<std::chrono::seconds>(*start_by - *launched_at).count()
                        : -1);
    }
    return out;
  };
  EXPECT_EQ(windows("prog.quick"), std::vector<int64_t>{600});
  EXPECT_EQ(windows("prog.slow"), std::vector<int64_t>{1200});
  // Right after launched_at, as trigd writes times.
  for (const std::string& p : Published()) {
    EXPECT_TRUE(
        std::regex_search(p, std::regex(R"(^\{"attempt":1,"heartbeat_timeout":"[^"]*","launched_at":"[^"]*",)"
                                        R"("start_by":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z","program":)")))
        << p;
  }
  Exec("DELETE FROM outbox");
  // Attempt 1 lost and retried: attempt 2's deadline counts from its own launch.
  Exec(
      "UPDATE runs SET state = 'running', last_seen_at = now() - interval '10 seconds', "
      "attempt_launched_at = '2000-01-01T00:00:00Z' WHERE program = 'prog.quick'");
  ASSERT_EQ(store_->SweepRuns()->lost, 1);
  Exec("UPDATE runs SET next_attempt_at = now() - interval '1 second'");
  ASSERT_EQ(store_->SweepRuns()->retried, 1);
  EXPECT_EQ(windows("prog.quick"), std::vector<int64_t>{600});
  for (const json& r : PublishedJson()) {
    EXPECT_GT(*ParseTime(r.value("start_by", "")), std::chrono::system_clock::now() + std::chrono::minutes(9))
        << r.dump();
  }
  Exec("DELETE FROM outbox");
  // A request migrated by schema/016 (a template rendered from jsonb, a space after each ':' and
  // ',') is retried as well: attempt 3, with its own deadline.
  Exec(
      "UPDATE runs SET request = request::jsonb::text, state = 'running', "
      "last_seen_at = now() - interval '10 seconds' WHERE program = 'prog.quick'");
  ASSERT_EQ(store_->SweepRuns()->lost, 1);
  Exec("UPDATE runs SET next_attempt_at = now() - interval '1 second'");
  ASSERT_EQ(store_->SweepRuns()->retried, 1);
  EXPECT_EQ(windows("prog.quick"), std::vector<int64_t>{600});
  const std::vector<json> third = PublishedJson();
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third[0]["attempt"], 3);
  EXPECT_EQ(third[0]["schedule"], "default/quick");
}

// Issue 39 (5): every attempt trigd ends itself is announced on the control topic, in the
// transaction that ends it, so that no worker starts its request later: a lost attempt that is
// retried (the retry, attempt + 1, must still run), and the last one, failed as lost.
TEST_F(PgStoreTest, AnAttemptLostIsAnnouncedToWorkersInTheTransactionThatEndsIt) {
  json doc = PartitionSchedule("s", "d");
  doc["retry"] = {{"max_attempts", 2}, {"backoff", "1s"}};
  doc["heartbeat_timeout"] = "1s";
  Apply({doc});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  pqxx::connection c(conn_);
  const std::string run = pqxx::work(c).exec1("SELECT run_id FROM runs")[0].as<std::string>();
  // The start_by of the newest launch request as published.
  auto start_by = [&]() { return PublishedJson().back().value("start_by", ""); };
  const std::string first_start_by = start_by();
  Exec("DELETE FROM outbox");
  EXPECT_TRUE(ControlMessages(conn_).empty());
  Exec("UPDATE runs SET state = 'running', last_seen_at = now() - interval '10 seconds'");
  ASSERT_EQ(store_->SweepRuns()->lost, 1);
  std::vector<json> control = ControlMessages(conn_);
  ASSERT_EQ(control.size(), 1u);
  EXPECT_EQ(control[0]["type"], "attempt_ended");
  EXPECT_EQ(control[0]["run_id"], run);
  EXPECT_EQ(control[0]["attempt"], 1);
  EXPECT_EQ(control[0]["status"], "lost");
  EXPECT_EQ(control[0]["reason"], "lost");
  EXPECT_EQ(control[0]["final"], false);
  EXPECT_EQ(control[0]["start_by"], first_start_by);
  EXPECT_TRUE(ParseTime(control[0].value("time", "")).ok()) << control[0].dump();
  // The retry is a launch, not an end: nothing more on the control topic.
  Exec("DELETE FROM outbox");
  Exec("UPDATE runs SET next_attempt_at = now() - interval '1 second'");
  ASSERT_EQ(store_->SweepRuns()->retried, 1);
  EXPECT_TRUE(ControlMessages(conn_).empty());
  const std::string second_start_by = start_by();
  Exec("UPDATE runs SET state = 'running', last_seen_at = now() - interval '10 seconds'");
  ASSERT_EQ(store_->SweepRuns()->failed, 1);
  control = ControlMessages(conn_);
  ASSERT_EQ(control.size(), 1u);
  EXPECT_EQ(control[0]["attempt"], 2);
  EXPECT_EQ(control[0]["status"], "failed");
  EXPECT_EQ(control[0]["reason"], "lost");
  EXPECT_EQ(control[0]["final"], true);
  EXPECT_EQ(control[0]["start_by"], second_start_by);
}

// Issue 39 (5): runs a schedule delete kills are announced on the control topic too: a launch
// request withdrawn before its publication, a run waiting for its retry (trigctl's delete), and
// a retry the sweep kills because its schedule is gone.
TEST_F(PgStoreTest, RunsKilledByADeleteAreAnnouncedToWorkers) {
  auto launch = [&](const std::string& name, int64_t offset, bool published) {
    json doc = PartitionSchedule(name, "d." + name);
    doc["retry"] = {{"max_attempts", 3}, {"backoff", "1h"}};
    Apply({doc});
    EXPECT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e." + name, "d." + name)}, offset)).ok());
    EXPECT_TRUE(store_->CheckDueJobs(100).ok());
    if (published) Exec("DELETE FROM outbox");
    pqxx::connection c(conn_);
    return pqxx::work(c)
        .exec_params1("SELECT run_id FROM runs WHERE schedule_name = $1", "default/" + name)[0]
        .as<std::string>();
  };
  auto expect_killed = [&](const std::string& run, int64_t attempt) {
    std::vector<json> control = ControlMessages(conn_);
    ASSERT_EQ(control.size(), 1u) << run;
    EXPECT_EQ(control[0]["run_id"], run);
    EXPECT_EQ(control[0]["attempt"], attempt);
    EXPECT_EQ(control[0]["status"], "killed");
    EXPECT_EQ(control[0]["reason"], "schedule_deleted");
    EXPECT_EQ(control[0]["final"], true);
    EXPECT_TRUE(control[0].contains("start_by")) << control[0].dump();
    Exec("DELETE FROM outbox");
  };
  const std::string unpublished = launch("unpublished", 0, false);
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/unpublished", ScheduleAction::kDelete, Actor{"test"}).ok());
  expect_killed(unpublished, 1);
  const std::string waiting = launch("waiting", 1, true);
  ASSERT_TRUE(store_->ApplyBatch(Batch({ProgramEvent("f1", "prog.waiting", waiting, ProgramStatus::kFailed)}, 2)).ok());
  Exec("DELETE FROM outbox");
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/waiting", ScheduleAction::kDelete, Actor{"test"}).ok());
  expect_killed(waiting, 1);
  const std::string raced = launch("raced", 3, true);
  ASSERT_TRUE(store_->ApplyBatch(Batch({ProgramEvent("f2", "prog.raced", raced, ProgramStatus::kFailed)}, 4)).ok());
  Exec("DELETE FROM schedules WHERE name = 'default/raced'");
  Exec("UPDATE runs SET next_attempt_at = now() - interval '1 second' WHERE run_id = '" + raced + "'");
  Exec("DELETE FROM outbox");
  ASSERT_EQ(store_->SweepRuns()->killed, 1);
  expect_killed(raced, 1);
  // A run still running when its schedule is deleted goes on (its end is its worker's report):
  // nothing to announce.
  launch("running", 5, true);
  Exec("UPDATE runs SET state = 'running' WHERE schedule_name = 'default/running'");
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/running", ScheduleAction::kDelete, Actor{"test"}).ok());
  EXPECT_TRUE(ControlMessages(conn_).empty());
}

// A name deleted and applied again goes on counting versions, so no two launch requests with
// different args both say schedule_version 1 (docs/adr/0019-versions-continue-across-delete.md).
TEST_F(PgStoreTest, AScheduleVersionKeepsCountingAcrossADelete) {
  json doc = PartitionSchedule("s", "d");
  Apply({doc});
  doc["priority"] = 2;
  Apply({doc});
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kDelete, Actor{"test"}).ok());
  doc["priority"] = 3;
  auto applied = ApplySchedules(conn_, {Parse(doc)}, Actor{"test"});
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  ASSERT_EQ(applied->size(), 1u);
  EXPECT_EQ((*applied)[0].version, 3);
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE schedule_version = 3"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE (request::jsonb->>'schedule_version')::int = 3"), 1);
  // A name never deleted starts at 1.
  auto fresh = ApplySchedules(conn_, {Parse(PartitionSchedule("t", "d2"))}, Actor{"test"});
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ((*fresh)[0].version, 1);
}

TEST_F(PgStoreTest, UpstreamFailureDiscardsTheOpenJobAndPublishesKilled) {
  json doc = {
      {"name", "down"},
      {"program", {{"name", "down.p"}}},
      {"trigger",
       {{"all",
         {{{"partition", {{"dataset", "d"}}}}, {{"program", {{"name", "up"}, {"on_upstream_failure", "discard"}}}}}}}}};
  Apply({doc});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_TRUE(store_->ApplyBatch(Batch({ProgramEvent("f1", "up", "r1", ProgramStatus::kFailed)}, 1)).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='discarded' AND discard_reason='upstream_failed'"), 1);
  EXPECT_EQ(
      Count("SELECT count(*) FROM outbox WHERE topic='t.events.program' AND key='down.p' AND "
            "payload::jsonb->'payload'->>'status'='killed' AND payload::jsonb->'payload'->>'reason'='upstream_failed'"),
      1);
  // With no open job the failure still travels down.
  ASSERT_TRUE(store_->ApplyBatch(Batch({ProgramEvent("f2", "up", "r2", ProgramStatus::kFailed)}, 2)).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE key='down.p'"), 2);
}

// A correlated join's job discarded for an upstream failure can be the last thing active in its
// lineage (the sibling branch's run ended before): the lineage ends then, failed, and is counted
// for trigd_lineages_total, though no run of it ended in that batch.
TEST_F(PgStoreTest, ALineageEndsWhenItsLastOpenJobIsDiscarded) {
  json leaf_a = {{"program", {{"name", "a"}, {"correlate", true}, {"on_upstream_failure", "discard"}}}};
  json leaf_b = {{"program", {{"name", "b"}, {"correlate", true}, {"on_upstream_failure", "discard"}}}};
  Apply({{{"name", "j"}, {"program", {{"name", "j.p"}}}, {"trigger", {{"all", {leaf_a, leaf_b}}}}}});
  Exec("INSERT INTO lineages (id, started_at) VALUES ('L', now())");
  Exec(
      "INSERT INTO runs (run_id, job_id, schedule_id, schedule_name, program, target, state, heartbeat_timeout_ms, "
      "launched_at, last_seen_at, request, lineage) VALUES ('rA', 1, 1, 'default/a', 'a', 'default', 'launched', "
      "60000, now(), now(), '{}', 'L'), ('rX', 2, 1, 'default/x', 'x', 'default', 'failed', 60000, now(), now(), "
      "'{}', 'L')");
  // a's run succeeds: j opens a job for L, which keeps L active.
  auto r = store_->ApplyBatch(Batch({ProgramEvent("s1", "a", "rA", ProgramStatus::kSucceeded)}, 0));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->lineage_outcomes.empty());
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state = 'pending_trigger' AND lineage = 'L'"), 1);
  // x's run of L had failed, so b's job of L was discarded: b's killed event, with no run,
  // discards j's job.
  Event killed = ProgramEvent("k1", "b", "job-7", ProgramStatus::kKilled);
  killed.program.lineage = "L";
  killed.payload["lineage"] = "L";
  killed.payload["reason"] = "upstream_failed";
  r = store_->ApplyBatch(Batch({killed}, 1));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state = 'discarded' AND lineage = 'L'"), 1);
  EXPECT_EQ(r->lineage_outcomes["failed"], 1);
  EXPECT_EQ(Text("SELECT outcome FROM lineages WHERE id = 'L' AND ended_at IS NOT NULL"), "failed");
}

// The checker's discard ends a lineage too: a correlated join's job of L that times out while
// nothing else of L is active.
TEST_F(PgStoreTest, ALineageEndsWhenTheCheckerDiscardsItsLastOpenJob) {
  json leaf_a = {{"program", {{"name", "a"}, {"correlate", true}}}};
  json leaf_b = {{"program", {{"name", "b"}, {"correlate", true}}}};
  Apply({{{"name", "j"},
          {"program", {{"name", "j.p"}}},
          {"trigger", {{"all", {leaf_a, leaf_b}}}},
          {"timeout", {{"after", "10m"}, {"action", "discard"}}}}});
  Exec("INSERT INTO lineages (id, started_at) VALUES ('L', now())");
  Exec(
      "INSERT INTO runs (run_id, job_id, schedule_id, schedule_name, program, target, state, heartbeat_timeout_ms, "
      "launched_at, last_seen_at, request, lineage) VALUES ('rA', 1, 1, 'default/a', 'a', 'default', 'launched', "
      "60000, now(), now(), '{}', 'L')");
  ASSERT_TRUE(store_->ApplyBatch(Batch({ProgramEvent("s1", "a", "rA", ProgramStatus::kSucceeded)}, 0)).ok());
  ASSERT_EQ(Count("SELECT count(*) FROM jobs WHERE state = 'pending_trigger' AND lineage = 'L'"), 1);
  // b never reports: the job's timeout passes.
  Exec("UPDATE jobs SET opened_at = now() - interval '1 hour', next_check_at = now() WHERE lineage = 'L'");
  auto r = store_->CheckDueJobs(100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->discarded, 1);
  EXPECT_EQ(r->lineage_outcomes["succeeded"], 1);
  EXPECT_EQ(Text("SELECT outcome FROM lineages WHERE id = 'L' AND ended_at IS NOT NULL"), "succeeded");
}

// A schedule change and the engine's transactions exclude each other (the batch share-locks the
// schedules it reads): a batch that starts while a change is in flight waits for it and then
// sees it. Without the lock the batch reads the schedule as it was (the change not committed
// yet) and opens a job for a suspended schedule.
TEST_F(PgStoreTest, ABatchWaitsForAScheduleChangeInFlightAndSeesIt) {
  Apply({PartitionSchedule("s", "d")});
  auto store = NewStore(/*fast_path=*/true);
  IngestBatch batch = Batch({PartitionEvent("e1", "d")}, 0);
  pqxx::connection change_conn(conn_);
  pqxx::work change(change_conn);
  change.exec("LOCK TABLE schedule_changes IN EXCLUSIVE MODE");  // as every change (admin.cc) does first
  change.exec("UPDATE schedules SET state = 'suspended' WHERE name = 'default/s'");
  std::optional<Result<IngestResult>> r;
  std::atomic<bool> done{false};
  std::thread batch_thread([&] {
    r = store->ApplyBatch(batch);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(done) << "the batch did not wait for the change in flight";
  change.commit();
  batch_thread.join();
  ASSERT_TRUE(r->ok()) << r->status().ToString();
  EXPECT_EQ((*r)->jobs_opened, 0);
  EXPECT_EQ((*r)->outcome, std::vector<EventOutcome>{EventOutcome::kNoMatch});
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM consumer_offsets WHERE next_offset = 1"), 1);
}

// A checker reads its claimed jobs' schedules without locking them (ADR 0177): a change in flight
// that holds the schedule's row does not hold the check up. The change then meets the job the
// check held, decided: launched under the version it was checked against, nothing left to discard.
TEST_F(PgStoreTest, ACheckDoesNotWaitForAChangeHoldingTheScheduleAndTheChangeFindsItsJobLaunched) {
  Apply({PartitionSchedule("s", "d")});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_EQ(Count("SELECT count(*) FROM jobs WHERE state = 'pending_constraint'"), 1);
  // A change's first steps (admin.cc): the change log, then the schedule's row, updated.
  pqxx::connection change_conn(conn_);
  pqxx::work change(change_conn);
  change.exec("LOCK TABLE schedule_changes IN EXCLUSIVE MODE");
  change.exec("UPDATE schedules SET version = version + 1 WHERE name = 'default/s'");
  std::atomic<bool> done{false};
  std::optional<Result<CheckerResult>> r;
  std::thread check([&] {
    r = store_->CheckDueJobs(100);
    done = true;
  });
  for (int i = 0; i < 250 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const bool waited = !done;
  // The change's discard of the schedule's open and waiting jobs (DiscardOpenJobs).
  const auto discarded = waited ? -1
                                : change
                                      .exec(
                                          "UPDATE jobs SET state = 'discarded' WHERE state IN "
                                          "('pending_trigger', 'pending_constraint')")
                                      .affected_rows();
  change.commit();
  check.join();
  EXPECT_FALSE(waited) << "the check waited for the change in flight";
  ASSERT_TRUE(r->ok()) << r->status().ToString();
  EXPECT_EQ((*r)->launched, 1);
  EXPECT_EQ(discarded, 0);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state = 'launched' AND schedule_version = 1"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state = 'launched'"), 1);
}

// An ingest transaction that freed the counters of the runs its reports ended (schedule, then
// group) and then, on the fast path, locked the counters of the jobs it checks would take
// schedules after a group, out of the order the checkers use (schedules, then groups); a checker
// holding the checked job's schedule counter and asking for the group's would close the cycle.
// The ingest takes every counter lock in one order and frees the slots after
// (docs/adr/0015-run-counter-lock-order.md).
TEST_F(PgStoreTest, AnIngestThatEndsARunAndChecksAJobTakesCounterLocksInTheCheckersOrder) {
  json a = PartitionSchedule("a", "d.a", {{"concurrency_group", {{"name", "g"}, {"max", 2}}}});
  json b = PartitionSchedule("b", "d.b", {{"concurrency_group", {{"name", "g"}, {"max", 2}}}});
  Apply({a, b});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d.a")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  Exec("DELETE FROM outbox");
  Exec(
      "INSERT INTO schedule_runtime (schedule_id) SELECT id FROM schedules WHERE name = 'default/b' ON CONFLICT DO "
      "NOTHING");
  pqxx::connection c(conn_);
  const std::string run = pqxx::work(c).exec1("SELECT run_id FROM runs")[0].as<std::string>();
  const std::string b_id = std::to_string(Count("SELECT id FROM schedules WHERE name = 'default/b'"));
  ASSERT_LT(Count("SELECT id FROM schedules WHERE name = 'default/a'"), std::stoll(b_id));  // a's counter first
  // A checker has locked b's schedule counter and is about to lock the group's.
  pqxx::connection checker_conn(conn_);
  pqxx::work checker(checker_conn);
  checker.exec("SELECT 1 FROM schedule_runtime WHERE schedule_id = " + b_id + " FOR UPDATE");
  // The batch ends a's run (its slot in g) and completes a job of b, checked on the fast path.
  auto store = NewStore(/*fast_path=*/true);
  std::optional<Result<IngestResult>> r;
  std::thread batch([&] {
    r = store->ApplyBatch(
        Batch({ProgramEvent("f1", "prog.a", run, ProgramStatus::kSucceeded), PartitionEvent("e2", "d.b")}, 1));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the batch waits for b's counter
  // Before, the batch held g's counter here: this waited for it, and PostgreSQL aborted one of
  // the two after deadlock_timeout.
  EXPECT_NO_THROW(checker.exec("SELECT 1 FROM group_runtime WHERE name = 'g' FOR UPDATE"));
  checker.commit();
  batch.join();
  ASSERT_TRUE(r->ok()) << r->status().ToString();
  EXPECT_EQ((*r)->run_outcomes["succeeded"], 1);
  EXPECT_EQ((*r)->checker.launched, 1);
  EXPECT_EQ(Count("SELECT active_runs FROM schedule_runtime WHERE schedule_id = (SELECT id FROM schedules WHERE name = "
                  "'default/a')"),
            0);
  EXPECT_EQ(Count("SELECT active_runs FROM schedule_runtime WHERE schedule_id = " + b_id), 1);
  EXPECT_EQ(Count("SELECT active_runs FROM group_runtime WHERE name = 'g'"), 1);
}

// Two instances: a batch that ends a run of a group and wakes the group's waiting jobs before
// it holds the group's counter skips one another instance's check holds; that check has read
// the group full and writes the job back to wait 30 s, and the freed slot would stay idle until
// some other run ends. The batch wakes again once it holds the counter.
TEST_F(PgStoreTest, ARunsEndWakesAWaitingJobAnotherInstanceHeldWhileCheckingIt) {
  json group = {{"concurrency_group", {{"name", "g"}, {"max", 1}}}};
  Apply({PartitionSchedule("a", "d.a", group), PartitionSchedule("b", "d.b", group)});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d.a")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e2", "d.b")}, 1)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(100).ok());
  const int64_t waiting = Count("SELECT id FROM jobs WHERE state = 'pending_constraint'");
  ASSERT_EQ(Count("SELECT count(*) FROM jobs WHERE id = " + std::to_string(waiting) + " AND next_check_at > now()"), 1);
  pqxx::connection c(conn_);
  const std::string run = pqxx::work(c).exec1("SELECT run_id FROM runs")[0].as<std::string>();
  // The other instance's check: it holds the waiting job and the group's counter (read full).
  pqxx::connection other_conn(conn_);
  pqxx::work other(other_conn);
  other.exec("SELECT 1 FROM jobs WHERE id = " + std::to_string(waiting) + " FOR UPDATE");
  other.exec("SELECT 1 FROM group_runtime WHERE name = 'g' FOR UPDATE");
  // This instance's batch ends a's run, the group's one active run.
  auto store = NewStore(/*fast_path=*/true);
  std::optional<Result<IngestResult>> r;
  std::thread batch(
      [&] { r = store->ApplyBatch(Batch({ProgramEvent("f1", "prog.a", run, ProgramStatus::kSucceeded)}, 2)); });
  const std::string blocked =
      "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
      "WHERE NOT l.granted AND a.datname = current_database()";
  for (int i = 0; i < 100 && Count(blocked) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const bool waited = Count(blocked) > 0;
  // The other check decides to wait (the group was full when it read it) and commits.
  other.exec(
      "UPDATE jobs SET next_check_at = now() + interval '30 seconds', last_decision = 'waiting for concurrency_group' "
      "WHERE id = " +
      std::to_string(waiting));
  other.commit();
  batch.join();
  ASSERT_TRUE(waited) << "the batch did not wait for the group's counter";
  ASSERT_TRUE(r->ok()) << r->status().ToString();
  EXPECT_EQ(Count("SELECT active_runs FROM group_runtime WHERE name = 'g'"), 0);
  // Woken: due now, for the checker loop (which the engine wakes on a run's end).
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE id = " + std::to_string(waiting) + " AND next_check_at <= now()"),
            1);
  EXPECT_EQ(store_->CheckDueJobs(100)->launched, 1);
}

// A change locks its schedule, then the schedule's open jobs; another transaction has locked a
// job first and then share-locks its schedule (the engine's checker does not, ADR 0177; any
// transaction taking the two in this order does). The two meet in a deadlock, which PostgreSQL
// breaks after deadlock_timeout by aborting the one whose check finds it: the change, which
// waited first. The change runs again and succeeds: a user's suspend does not fail on it.
TEST_F(PgStoreTest, AScheduleChangeAbortedByADeadlockRunsAgain) {
  Apply({PartitionSchedule("s", "d")});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0)).ok());
  ASSERT_EQ(Count("SELECT count(*) FROM jobs WHERE state='pending_constraint'"), 1);
  pqxx::connection checker_conn(conn_);
  pqxx::work checker(checker_conn);
  checker.exec("SELECT id FROM jobs WHERE state = 'pending_constraint' FOR UPDATE");  // the claim
  std::optional<Status> changed;
  std::thread change(
      [&] { changed = ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kSuspend, Actor{"test"}); });
  // On any early exit the checker's transaction ends before the change is joined, so a failure
  // reports itself instead of waiting forever or terminating on a joinable thread.
  struct EndBoth {
    pqxx::work& checker;
    std::thread& change;
    ~EndBoth() {
      if (!change.joinable()) return;
      try {
        checker.abort();
      } catch (const std::exception&) {
      }
      change.join();
    }
  } end_both{checker, change};
  // The change holds the schedule's row and waits for the job.
  const std::string waiting =
      "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
      "WHERE NOT l.granted AND a.datname = current_database()";
  for (int i = 0; i < 500 && Count(waiting) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (Count(waiting) == 0) {
    checker.commit();
    change.join();
    FAIL() << "the change did not wait for the job";
  }
  try {
    checker.exec("SELECT id FROM schedules WHERE name = 'default/s' FOR SHARE");
    checker.commit();
  } catch (const pqxx::sql_error&) {
    // If the checker is the one aborted instead, it ends and releases the job; the change goes on.
    checker.abort();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the checker's share lock failed: " << e.what();
    checker.abort();
  }
  change.join();
  ASSERT_TRUE(changed.has_value());
  EXPECT_TRUE(changed->ok()) << changed->ToString();
  EXPECT_EQ(Count("SELECT count(*) FROM schedules WHERE state = 'suspended'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state = 'discarded' AND discard_reason = 'schedule suspended'"), 1);
}

TEST_F(PgStoreTest, FastPathLaunchesAReadyJobInTheIngestTransaction) {
  Apply({PartitionSchedule("s", "d")});
  auto store = NewStore(/*fast_path=*/true);
  auto r = store->ApplyBatch(Batch({PartitionEvent("e1", "d")}, 0));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->jobs_ready, 1);
  EXPECT_EQ(r->checker.launched, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='launched'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state='launched'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE topic='t.launch.default' AND job_id IS NOT NULL"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM consumer_offsets WHERE next_offset = 1"), 1);
  // Nothing is left for the checker loop.
  EXPECT_EQ(store->CheckDueJobs(100)->checked, 0);
}

TEST_F(PgStoreTest, FastPathLeavesAJobThatMustWaitToTheChecker) {
  Apply({PartitionSchedule("s", "d", {{"max_concurrent_runs", 1}})});
  auto store = NewStore(/*fast_path=*/true);
  auto r = store->ApplyBatch(Batch({PartitionEvent("e1", "d", "a"), PartitionEvent("e2", "d", "b")}, 0));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->jobs_ready, 2);
  EXPECT_EQ(r->checker.launched, 1);
  EXPECT_EQ(r->checker.waiting, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs"), 1);
  EXPECT_EQ(
      Count(
          "SELECT count(*) FROM jobs WHERE state='pending_constraint' AND last_decision LIKE '%max_concurrent_runs%'"),
      1);
  // The run's end frees the slot and the same transaction launches the waiting job.
  pqxx::connection c(conn_);
  auto run = pqxx::work(c).exec1("SELECT run_id FROM runs")[0].as<std::string>();
  r = store->ApplyBatch(Batch({ProgramEvent("done", "prog.s", run, ProgramStatus::kSucceeded)}, 2));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->checker.launched, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state='launched'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state='succeeded'"), 1);
}

TEST_F(PgStoreTest, FastPathWritesANewJobOnceInItsDecidedStateAfterOlderWaitingJobs) {
  json group = {{"concurrency_group", {{"name", "g"}, {"max", 1}}}};
  Apply({PartitionSchedule("a", "d.a", group), PartitionSchedule("b", "d.b", group), PartitionSchedule("c", "d.c")});
  auto store = NewStore(/*fast_path=*/true);
  // a launches and holds the group's one slot; b's job then waits for it.
  ASSERT_TRUE(store->ApplyBatch(Batch({PartitionEvent("a1", "d.a")}, 0)).ok());
  auto r = store->ApplyBatch(Batch({PartitionEvent("b1", "d.b")}, 1));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->checker.waiting, 1);
  // A new job of b's (a is due again) is never written as pending first: it is inserted once,
  // already waiting, behind b's older job.
  pqxx::connection c(conn_);
  auto run_a = pqxx::work(c).exec1("SELECT run_id FROM runs")[0].as<std::string>();
  IngestBatch batch = Batch({PartitionEvent("a2", "d.a"), PartitionEvent("c1", "d.c")}, 2);
  r = store->ApplyBatch(batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->checker.launched, 1);  // c (no group)
  EXPECT_EQ(r->checker.waiting, 1);   // a's second job: the slot is still a's first run's
  EXPECT_EQ(Count("SELECT count(*) FROM jobs j JOIN runs r ON r.job_id = j.id WHERE j.schedule_name = 'default/c' "
                  "AND j.state = 'launched' AND j.finished_at IS NOT NULL AND j.ready_at IS NOT NULL "
                  "AND j.history::text LIKE '%constraints hold%' AND r.request::jsonb->>'schedule' = 'default/c'"),
            1);
  EXPECT_EQ(Count("SELECT count(*) FROM outbox o JOIN jobs j ON j.id = o.job_id WHERE j.schedule_name = 'default/c'"),
            1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE schedule_name = 'default/a' AND state = 'pending_constraint' "
                  "AND next_check_at IS NOT NULL AND last_decision LIKE '%concurrency_group%' "
                  "AND jsonb_array_length(history) >= 2"),
            1);
  // a's run ends: the oldest waiting job of the group (b's, ready first) takes the slot.
  r = store->ApplyBatch(Batch({ProgramEvent("done", "prog.a", run_a, ProgramStatus::kSucceeded)}, 4));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->checker.launched, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE schedule_name = 'default/b' AND state = 'launched'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE schedule_name = 'default/a' AND state = 'pending_constraint'"), 1);
}

// The prepared statements run on generic plans made anew every second (PgStore::Connect): a
// plan made while `jobs` was empty reads the whole table, and once the table has grown the next
// plan must look rows up by key. A plan kept for good (PostgreSQL's own cache) would stay on the
// whole-table plan until an autoanalyze, and a storm stall for minutes
// (docs/adr/0030-generic-plans-renewed.md).
TEST_F(PgStoreTest, GenericPlansAreMadeAnewForTheTablesCurrentSize) {
  // Counters, jobs and lineages, + the columns of jobs, runs and outbox rows it inserts.
  constexpr int kCheckerWritesParams = 14 + 19 + 18 + 8;
  auto empty = store_->ExplainPrepared("checker_writes", kCheckerWritesParams);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_NE(empty->find("Seq Scan on jobs"), std::string::npos) << "plan for an empty jobs table:\n" << *empty;
  {
    pqxx::connection c(conn_);
    pqxx::nontransaction tx(c);
    tx.exec(
        "INSERT INTO jobs (schedule_id, schedule_name, schedule_version, state, trigger_state, opened_at) "
        "SELECT g, 's', 1, 'launched', '{}', now() FROM generate_series(1, 100000) g");
  }
  // While its lifetime lasts, the cached plan is still the one for the empty table (the lifetime
  // is set here rather than waited for: inserting the rows can take longer than a second)...
  store_->SetPlanLifetime(std::chrono::hours(1));
  auto cached = store_->ExplainPrepared("checker_writes", kCheckerWritesParams);
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  EXPECT_EQ(*cached, *empty);
  // ... once it is over, the plan is made for 100,000 jobs.
  store_->SetPlanLifetime(std::chrono::milliseconds(0));
  auto grown = store_->ExplainPrepared("checker_writes", kCheckerWritesParams);
  ASSERT_TRUE(grown.ok()) << grown.status().ToString();
  EXPECT_EQ(grown->find("Seq Scan on jobs"), std::string::npos) << "plan for 100,000 jobs:\n" << *grown;
  EXPECT_NE(grown->find("jobs_pkey"), std::string::npos) << "plan for 100,000 jobs:\n" << *grown;
}

// The engine's connections plan without JIT compilation (PgStore::Connect): a plan costed
// above jit_above_cost compiles on every execution, 250 ms for the job gauge's count of the
// outbox every 2 s (docs/adr/0156-no-jit-for-the-engine.md). With the threshold at 0 for the
// database, every plan of a connection that left JIT on would compile.
TEST_F(PgStoreTest, EngineConnectionsDoNotCompilePlans) {
  Exec("ALTER DATABASE trigd_store_test SET jit_above_cost = 0");
  auto store = NewStore();
  auto plan = store->ExplainPrepared("schedule_versions", 1);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->find("JIT"), std::string::npos) << *plan;
}

TEST_F(PgStoreTest, FastPathClaimLooksUpItsSchedulesJobsInsteadOfWalkingTheDueOnes) {
  // 100,000 due jobs of other schedules: the fast path's claim must find its schedules' and
  // groups' jobs through their indexes, not walk jobs_claim past all of these.
  Exec(
      "INSERT INTO jobs (schedule_id, schedule_name, schedule_version, state, trigger_state, opened_at, ready_at, "
      "next_check_at, concurrency_group) SELECT g, 's', 1, 'pending_constraint', '{}', now(), now(), now(), "
      "CASE WHEN g % 2 = 0 THEN 'g' || (g % 1000) END FROM generate_series(1, 100000) g");
  Exec("ANALYZE jobs");
  auto store = NewStore(/*fast_path=*/true);
  for (const char* name : {"claim_for", "claim_for_fresh"}) {
    auto plan = store->ExplainPrepared(name, std::string(name) == "claim_for" ? 3 : 4);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->find("jobs_claim"), std::string::npos) << name << ":\n" << *plan;
    EXPECT_NE(plan->find("jobs_waiting_by_schedule"), std::string::npos) << name << ":\n" << *plan;
    EXPECT_NE(plan->find("jobs_waiting_by_group"), std::string::npos) << name << ":\n" << *plan;
  }
}

// The jobs, runs and launch requests of a few decisions ride on checker_writes as arrays, those
// of many are copied in (TableRows): both ways must write the same rows, escapes included.
TEST_F(PgStoreTest, FastPathWritesTheSameRowsAsArraysForAFewJobsAndByCopyForMany) {
  constexpr int kFew = 3, kMany = 80;  // either side of kRowsAsArraysLimit (64)
  const std::string odd = "tab\there \"quoted\" back\\slash\nnew line {a,b} NULL \u00e9";
  std::vector<json> docs;
  for (int i = 0; i < kFew + kMany; ++i) {
    json doc = PartitionSchedule("s" + std::to_string(i), "d" + std::to_string(i),
                                 {{"concurrency_group", {{"name", "g" + std::to_string(i)}, {"max", 5}}}});
    doc["program"]["args"] = {{"text", odd}};
    docs.push_back(doc);
  }
  Apply(docs);
  auto store = NewStore(/*fast_path=*/true);
  auto events = [&](int from, int n) {
    std::vector<Event> out;
    for (int i = from; i < from + n; ++i) {
      Event e = PartitionEvent("e" + std::to_string(i), "d" + std::to_string(i), odd);
      out.push_back(e);
    }
    return out;
  };
  auto few = store->ApplyBatch(Batch(events(0, kFew), 0));
  ASSERT_TRUE(few.ok()) << few.status().ToString();
  EXPECT_EQ(few->checker.launched, kFew);
  auto many = store->ApplyBatch(Batch(events(kFew, kMany), kFew));
  ASSERT_TRUE(many.ok()) << many.status().ToString();
  EXPECT_EQ(many->checker.launched, kMany);
  // Every job's rows, less what differs by job (ids, names, times), are one and the same.
  const std::string shape =
      "SELECT count(DISTINCT concat_ws('|', j.state, j.priority, j.trigger_state::text, "
      "  j.triggered_by->0->'payload'->'partitions', jsonb_array_length(j.history), j.history->-1->>'what', "
      "j.last_decision, "
      "  j.forced, j.discard_reason, j.finished_at = r.launched_at, j.ready_at = r.launched_at, "
      "  j.first_event_at = j.opened_at, j.next_check_at IS NULL, j.concurrency_group = 'g' || substr(j.schedule_name, "
      "10), "
      "  r.state, r.attempt, r.max_attempts, r.heartbeat_timeout_ms, r.last_seen_at = r.launched_at, "
      "  r.concurrency_group = j.concurrency_group, r.program = 'prog.' || substr(j.schedule_name, 9), "
      "  r.history->0->>'status', r.request::jsonb->'program'->'args', r.request::jsonb->'triggered_by' = "
      "j.triggered_by, "
      "  o.payload = r.request, o.key = r.program, o.topic, o.ready_at = j.ready_at)) "
      "FROM jobs j JOIN runs r ON r.job_id = j.id JOIN outbox o ON o.job_id = j.id";
  EXPECT_EQ(Count(shape), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs j JOIN runs r ON r.job_id = j.id JOIN outbox o ON o.job_id = j.id "
                  "WHERE j.state = 'launched' AND r.request::jsonb->'program'->'args'->>'text' = " +
                  pqxx::connection(conn_).quote(odd) +
                  " AND j.triggered_by->0->'payload'->'partitions'->>0 = " + pqxx::connection(conn_).quote(odd)),
            kFew + kMany);
  EXPECT_EQ(Count("SELECT sum(active_runs) FROM group_runtime"), kFew + kMany);
  EXPECT_EQ(Count("SELECT sum(active_runs) FROM schedule_runtime"), kFew + kMany);
}

TEST_F(PgStoreTest, FastPathKeepsTheNewestHistoryEntriesOfAJobItWritesOnce) {
  Apply({{{"name", "big"},
          {"program", {{"name", "p"}}},
          {"trigger", {{"partition", {{"dataset", "d"}, {"count", 60}}}}}}});
  auto store = NewStore(/*fast_path=*/true);
  std::vector<Event> events;
  for (int i = 0; i < 60; ++i) events.push_back(PartitionEvent("e" + std::to_string(i), "d", "p" + std::to_string(i)));
  auto r = store->ApplyBatch(Batch(events, 0));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->checker.launched, 1);
  EXPECT_EQ(Count("SELECT jsonb_array_length(history) FROM jobs"), static_cast<int64_t>(kMaxJobHistory));
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE history->-1->>'what' LIKE 'constraints hold%'"), 1);
}

TEST_F(PgStoreTest, TickAppliesItselfAndItsCopyOnTheTopicIsADuplicate) {
  Apply({{{"name", "t"}, {"program", {{"name", "p"}}}, {"trigger", {{"time", {{"every", "1m"}}}}}}});
  Exec("UPDATE time_triggers SET anchor = now() - interval '90 seconds', next_fire_at = now() - interval '30 seconds'");
  auto store = NewStore(/*fast_path=*/true);
  auto r = store->TickTimeTriggers(100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->produced, 1);
  EXPECT_EQ(r->applied.jobs_ready, 1);
  EXPECT_EQ(r->applied.checker.launched, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs"), 1);
  // Ingestion of the published copy changes nothing (and needs no de-duplication id).
  EXPECT_EQ(Count("SELECT count(*) FROM seen_events"), 0);
  auto rows = store->ClaimOutbox(10);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  std::string payload;
  std::vector<int64_t> ids;
  for (const OutboxRow& row : rows->messages) {
    if (row.topic == "t.events.time") payload = row.payload;
    ids.push_back(row.id);
  }
  ASSERT_TRUE(store->CompleteOutbox(ids).ok());
  auto tick = ParseEnvelope(payload);
  ASSERT_TRUE(tick.ok()) << tick.status().ToString();
  auto copy = store->ApplyBatch(Batch({*tick}, 0));
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  EXPECT_EQ(copy->outcome, std::vector<EventOutcome>{EventOutcome::kDuplicate});
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs"), 1);
}

// A storm's ticks: their copies for observers go in bundles of kBundleMessages, and the relay's
// claim takes a bounded number of bundles beside the single messages, each message in order.
TEST_F(PgStoreTest, TicksGoOutInBundlesAndTheClaimExpandsThem) {
  std::vector<json> docs;
  for (int k = 0; k < 1001; ++k) {
    docs.push_back(
        {{"name", "t" + std::to_string(k)}, {"program", {{"name", "p"}}}, {"trigger", {{"time", {{"every", "1m"}}}}}});
  }
  Apply(docs);
  Exec("UPDATE time_triggers SET anchor = now() - interval '90 seconds', next_fire_at = now() - interval '30 seconds'");
  auto r = store_->TickTimeTriggers(5000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->produced, 1001);
  EXPECT_EQ(Count("SELECT count(*) FROM outbox"), 2);  // 1,000 and 1 ticks
  // A single message (a dead letter) written after the bundles.
  ASSERT_TRUE(store_->ApplyBatch(Batch({}, 0, {{"k", "{\"reason\":\"bad_json\"}"}})).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE NOT bundle"), 1);

  // Up to 10 single messages and one bundle (10 rounded up to whole bundles).
  auto rows = store_->ClaimOutbox(10);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->messages.size(), 1001u);
  EXPECT_TRUE(rows->full) << "it took as many bundles as it may: more may be waiting";
  std::set<std::string> keys;
  std::set<int64_t> ids;
  for (size_t i = 0; i < rows->messages.size(); ++i) {
    const OutboxRow& row = rows->messages[i];
    if (i > 0) {
      EXPECT_LE(rows->messages[i - 1].id, row.id);
    }
    ids.insert(row.id);
    if (row.topic == "t.dead") continue;
    EXPECT_EQ(row.topic, "t.events.time");
    auto tick = ParseEnvelope(row.payload);
    ASSERT_TRUE(tick.ok()) << tick.status().ToString();
    EXPECT_EQ(tick->tick.schedule, row.key);
    keys.insert(row.key);
  }
  EXPECT_EQ(keys.size(), 1000u);
  ASSERT_EQ(ids.size(), 2u);  // the bundle's messages share its row id
  ASSERT_TRUE(store_->CompleteOutbox(std::vector<int64_t>(ids.begin(), ids.end())).ok());
  auto rest = store_->ClaimOutbox(10);
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  ASSERT_EQ(rest->messages.size(), 1u);
  EXPECT_TRUE(rest->full) << "a claim of 10 takes one bundle, and took it";
  EXPECT_FALSE(keys.count(rest->messages[0].key)) << rest->messages[0].key;
  ASSERT_TRUE(store_->CompleteOutbox({rest->messages[0].id}).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM outbox"), 0);
  auto none = store_->ClaimOutbox(10);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->messages.empty());
  EXPECT_FALSE(none->full);
}

TEST_F(PgStoreTest, AMalformedBundleIsAnErrorNamingItsRow) {
  Exec("INSERT INTO outbox (topic, payload, bundle) VALUES ('t.events.time', '3:abc,5:hel', true)");
  auto rows = store_->ClaimOutbox(10);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("outbox row"), std::string::npos) << rows.status().ToString();
  EXPECT_NE(rows.status().message().find("malformed at byte 0 of 11"), std::string::npos) << rows.status().ToString();
}

TEST_F(PgStoreTest, PruneDropsOnlyDeduplicationIdsOlderThanTheKeepPeriod) {
  Apply({PartitionSchedule("s", "d")});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("old", "d"), PartitionEvent("new", "d", "q")}, 0)).ok());
  Exec("UPDATE seen_events SET seen_at = now() - interval '9 days' WHERE id = 'old'");
  ASSERT_TRUE(store_->Prune(std::chrono::hours(24 * 8)).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM seen_events WHERE id = 'old'"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM seen_events WHERE id = 'new'"), 1);
  // Still de-duplicated within the keep period.
  auto again = store_->ApplyBatch(Batch({PartitionEvent("new", "d", "q")}, 2));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->outcome, std::vector<EventOutcome>{EventOutcome::kDuplicate});
}

// max_concurrent_runs {"max": 2, "on_unmet": "cancel_oldest"} under three racing checkers: every
// job launches, the oldest runs are cancelled (killed, reason overlap, each with its control
// message and killed event), and no snapshot ever shows more than 2 active runs
// (docs/adr/0112-cancel-oldest.md).
TEST_F(PgStoreTest, CancelOldestNeverExceedsTheLimitWithThreeRacingCheckers) {
  Apply({PartitionSchedule("co", "d", {{"max_concurrent_runs", {{"max", 2}, {"on_unmet", "cancel_oldest"}}}})});
  const int kJobs = 30;
  std::vector<Event> events;
  for (int j = 0; j < kJobs; ++j) events.push_back(PartitionEvent("e" + std::to_string(j), "d", std::to_string(j)));
  // One event each, so each opens a job that completes at once.
  for (int j = 0; j < kJobs; ++j) ASSERT_TRUE(store_->ApplyBatch(Batch({events[j]}, j)).ok());
  std::atomic<bool> done{false};
  std::atomic<int> violations{0}, observations{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      auto s = NewStore();
      while (!done) {
        auto r = s->CheckDueJobs(3);
        if (!r.ok() && r.status().code() != StatusCode::kAborted) ADD_FAILURE() << r.status().ToString();
      }
    });
  }
  std::thread observer([&] {
    pqxx::connection c(conn_);
    while (!done) {
      pqxx::read_transaction tx(c);
      if (tx.exec1("SELECT count(*) FROM runs WHERE state IN ('launched','running','retry_wait')")[0].as<int64_t>() > 2)
        ++violations;
      ++observations;
    }
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (Count("SELECT count(*) FROM jobs WHERE state = 'launched'") < kJobs &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  done = true;
  for (auto& t : threads) t.join();
  observer.join();
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state = 'launched'"), kJobs);
  EXPECT_EQ(violations.load(), 0);
  EXPECT_GT(observations.load(), 10);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state IN ('launched','running','retry_wait')"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state = 'killed' AND reason = 'overlap'"), kJobs - 2);
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE payload LIKE '%\"reason\":\"overlap\"%' AND payload LIKE "
                  "'%attempt_ended%'"),
            kJobs - 2);
  EXPECT_EQ(Count("SELECT active_runs FROM schedule_runtime"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE history::text LIKE "
                  "'%cancelled by max_concurrent_runs on_unmet cancel_oldest for job %'"),
            kJobs - 2);
}

// cancel_oldest ends a run launched under the group its schedule had before an update ("old"),
// in a check that also holds "old"'s counter for another schedule (b): the counter written back
// counts b's run only. (The victim's group row was decremented beside a held count that was
// then written back unchanged: "old" stayed one too high for good.)
TEST_F(PgStoreTest, CancelOldestFreesTheSlotOfAGroupTheScheduleLeft) {
  auto a = [](const std::string& group) {
    return PartitionSchedule("a", "da",
                             {{"max_concurrent_runs", {{"max", 1}, {"on_unmet", "cancel_oldest"}}},
                              {"concurrency_group", {{"name", group}, {"max", 10}}}});
  };
  Apply({a("old")});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("a1", "da", "1")}, 0)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(10).ok());
  ASSERT_EQ(Count("SELECT count(*) FROM runs WHERE concurrency_group = 'old' AND state = 'launched'"), 1);
  Apply({a("new"), PartitionSchedule("b", "db", {{"concurrency_group", {{"name", "old"}, {"max", 10}}}})});
  ASSERT_TRUE(store_->ApplyBatch(Batch({PartitionEvent("a2", "da", "2"), PartitionEvent("b1", "db", "1")}, 1)).ok());
  ASSERT_TRUE(store_->CheckDueJobs(10).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state = 'killed' AND reason = 'overlap'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state = 'launched'"), 2);
  EXPECT_EQ(Count("SELECT active_runs FROM group_runtime WHERE name = 'old'"), 1) << "b's run";
  EXPECT_EQ(Count("SELECT active_runs FROM group_runtime WHERE name = 'new'"), 1) << "a's new run";
}

}  // namespace
}  // namespace trigd
