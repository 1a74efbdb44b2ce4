// A schedule that fails every transaction that writes its rows (here a trigger raising for it,
// as a value past a column's range would) must not stall ingest: its events are dead-lettered
// for it with reason schedule_failed, and the rest of the batch commits with its positions.
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

Event Partition(const std::string& id, const std::string& dataset, const std::string& part) {
  Event e;
  e.id = id;
  e.type = EventType::kPartition;
  e.partition.dataset = dataset;
  e.partition.partitions = {part};
  e.payload = {{"dataset", dataset}, {"partitions", {part}}};
  return e;
}

class PoisonTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    conn_ = test::FreshDatabase("trigd_poison_test");
    ASSERT_TRUE(ApplyMigrations(conn_, TRIGD_SOURCE_DIR "/schema", nullptr).ok());
    std::vector<Schedule> schedules;
    for (auto [name, dataset] : {std::pair{"a", "x.ds"}, {"b", "x.ds"}, {"c", "y.ds"}}) {
      ParsedSchedule p = ParseSchedule({{"name", name},
                                        {"program", {{"name", std::string("prog.") + name}}},
                                        {"trigger", {{"partition", {{"dataset", dataset}}}}}});
      ASSERT_TRUE(p.ok());
      schedules.push_back(p.schedule);
    }
    ASSERT_TRUE(ApplySchedules(conn_, schedules, Actor{"test"}).ok());
    auto store = PgStore::Connect(conn_, "t.");
    ASSERT_TRUE(store.ok());
    store_ = std::move(*store);
    store_->SetFastPath(GetParam());
    // Every job row of schedule a fails, inserted by COPY or by the fast path's writes.
    Exec(
        "CREATE FUNCTION refuse_a() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF NEW.schedule_name = 'default/a' THEN RAISE EXCEPTION 'schedule a refused on purpose'; END IF; "
        "RETURN NEW; END $$");
    Exec("CREATE TRIGGER refuse_a BEFORE INSERT OR UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION refuse_a()");
  }
  void Exec(const std::string& sql) {
    pqxx::connection c(conn_);
    pqxx::work tx(c);
    tx.exec(sql);
    tx.commit();
  }
  int64_t Count(const std::string& sql) {
    pqxx::connection c(conn_);
    pqxx::work tx(c);
    return tx.exec1(sql)[0].as<int64_t>();
  }
  IngestBatch Batch(const std::vector<Event>& events, int64_t first) {
    std::map<std::string, std::vector<int64_t>> index;
    auto changes = store_->LoadScheduleChanges(0);
    EXPECT_TRUE(changes.ok());
    for (const auto& s : changes->schedules)
      for (const auto& k : s.event_keys) index[k].push_back(s.id);
    IngestBatch b;
    b.group = "g";
    for (const Event& e : events) {
      b.events.push_back(e);
      b.schedule_ids.push_back(index[e.EventKey()]);
      b.sources.push_back({"t.events.data", 0, first + static_cast<int64_t>(b.sources.size())});
    }
    b.positions = {{"t.events.data", 0, first, first + static_cast<int64_t>(events.size())}};
    return b;
  }
  // The dead letters in the outbox (claimed and released).
  std::vector<json> DeadLetters() {
    auto rows = store_->ClaimOutbox(1000);
    EXPECT_TRUE(rows.ok());
    std::vector<json> out;
    for (const OutboxRow& r : rows->messages) {
      if (r.topic == "t.dead") out.push_back(json::parse(r.payload));
    }
    EXPECT_TRUE(store_->CompleteOutbox({}).ok());
    return out;
  }
  std::string conn_;
  std::unique_ptr<PgStore> store_;
};

TEST_P(PoisonTest, AFailingScheduleIsDeadLetteredAndTheBatchGoesOn) {
  auto r = store_->ApplyBatch(
      Batch({Partition("e1", "x.ds", "p1"), Partition("e2", "y.ds", "p1"), Partition("e3", "x.ds", "p2")}, 0));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcome, (std::vector<EventOutcome>(3, EventOutcome::kApplied)));
  EXPECT_EQ(r->dead_reasons, (std::vector<DeadLetterReason>(2, DeadLetterReason::kScheduleFailed)));
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE schedule_name = 'default/a'"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE schedule_name = 'default/b'"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE schedule_name = 'default/c'"), 1);
  // Exactly once: the positions moved with the jobs, and the events are recorded.
  EXPECT_EQ(Count("SELECT next_offset FROM consumer_offsets WHERE group_id = 'g'"), 3);
  EXPECT_EQ(Count("SELECT count(*) FROM seen_events"), 3);
  std::vector<json> dead = DeadLetters();
  ASSERT_EQ(dead.size(), 2u);
  for (const json& d : dead) {
    const std::string reason = d["reason"];
    EXPECT_EQ(reason.rfind("schedule_failed: schedule default/a cannot apply this event: ", 0), 0u) << reason;
    EXPECT_NE(reason.find("schedule a refused on purpose"), std::string::npos) << reason;
    EXPECT_EQ(d["topic"], "t.events.data");
  }
  EXPECT_EQ(dead[0]["offset"], 0);
  EXPECT_EQ(dead[1]["offset"], 2);

  // Again (the schedule is now a suspect, tried last): an event that reaches only the failing
  // schedule is dead, the others apply.
  Exec("UPDATE schedules SET state = 'suspended' WHERE name = 'default/b'");
  IngestBatch next = Batch({Partition("e4", "x.ds", "p3"), Partition("e5", "y.ds", "p2")}, 3);
  auto again = store_->ApplyBatch(next);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->outcome, (std::vector<EventOutcome>{EventOutcome::kDead, EventOutcome::kApplied}));
  EXPECT_EQ(again->dead_reasons, (std::vector<DeadLetterReason>{DeadLetterReason::kScheduleFailed}));
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE schedule_name = 'default/c'"), 2);
  EXPECT_EQ(Count("SELECT next_offset FROM consumer_offsets WHERE group_id = 'g'"), 5);
}

// A failure that is no schedule's (here the positions' row is refused) is not dead-lettered:
// the batch fails as a whole, nothing is written, and ingest retries it as before.
TEST_P(PoisonTest, AFailureOfNoScheduleIsNotDeadLettered) {
  Exec(
      "CREATE FUNCTION refuse_all() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
      "RAISE EXCEPTION 'positions refused'; END $$");
  Exec(
      "CREATE TRIGGER refuse_all BEFORE INSERT OR UPDATE ON consumer_offsets FOR EACH ROW EXECUTE FUNCTION "
      "refuse_all()");
  auto r = store_->ApplyBatch(Batch({Partition("e1", "x.ds", "p1"), Partition("e2", "y.ds", "p1")}, 0));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("positions refused"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(Count("SELECT count(*) FROM outbox"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 0);
}

INSTANTIATE_TEST_SUITE_P(FastPath, PoisonTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "FastPath" : "CheckerLoop"; });

}  // namespace
}  // namespace trigd
