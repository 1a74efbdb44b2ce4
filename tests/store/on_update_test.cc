// on_update (SPEC §11, issue 35 point 5) on a real PostgreSQL: discard, keep and reevaluate, each
// for a job collecting, a job waiting on a constraint (delay) and a job waiting for a time
// window; `jobs why`'s history says what the update did. Also the silence armed at apply and
// re-armed by the update, and a quiet job completed by the checker at its due time.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "api/why.h"
#include "core/schedule_parser.h"
#include "source_paths.h"
#include "store/admin.h"
#include "store/migrator.h"
#include "store/pg_store.h"
#include "store/test_pg.h"

namespace trigd {
namespace {

using nlohmann::json;

Event Part(const std::string& id, const std::string& dataset) {
  Event e;
  e.id = id;
  e.type = EventType::kPartition;
  e.partition.dataset = dataset;
  e.partition.partitions = {id};
  e.payload = {{"dataset", dataset}, {"partitions", {id}}};
  return e;
}

enum class Waiting { kCollecting, kConstraint, kWindow };

class OnUpdateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    conn_ = test::FreshDatabase("trigd_on_update_test");
    ASSERT_TRUE(ApplyMigrations(conn_, TRIGD_SOURCE_DIR "/schema", nullptr).ok());
    auto store = PgStore::Connect(conn_, "t.");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    store_->SetFastPath(false);
  }
  void Apply(const json& doc) {
    ParsedSchedule p = ParseSchedule(doc);
    ASSERT_TRUE(p.ok()) << p.errors[0].ToString();
    auto r = ApplySchedules(conn_, {p.schedule}, Actor{"test"});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  void Ingest(const std::vector<Event>& events) {
    auto changes = store_->LoadScheduleChanges(0);
    ASSERT_TRUE(changes.ok());
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
  }
  void Check() { ASSERT_TRUE(store_->CheckDueJobs(100).ok()); }
  std::string Text(const std::string& sql) {
    pqxx::connection c(conn_);
    pqxx::work tx(c);
    auto r = tx.exec(sql);
    return r.empty() || r[0][0].is_null() ? "" : r[0][0].as<std::string>();
  }
  void Exec(const std::string& sql) {
    pqxx::connection c(conn_);
    pqxx::work tx(c);
    tx.exec(sql);
    tx.commit();
  }
  int64_t FirstJob() { return std::stoll(Text("SELECT min(id) FROM jobs")); }
  // The first job's `jobs why`: its state and its history's entries, one per line.
  std::string Why(int64_t job, std::string* state = nullptr) {
    auto seen = InspectJob(conn_, job);
    EXPECT_TRUE(seen.ok()) << seen.status().ToString();
    if (!seen.ok()) return "";
    json why = ExplainJob(*seen);
    if (state) *state = why.value("state", "");
    std::string out;
    for (const json& h : why["history"]) out += h.value("what", "") + "\n";
    return out;
  }

  // A schedule "s" counting 3 partitions of d (v1), and a job in the situation `waiting`:
  // collecting with 2 partitions, or complete and waiting on a 1h delay or a window closed now.
  json Situation(Waiting waiting, const std::string& on_update) {
    json doc = {{"name", "s"},
                {"program", {{"name", "p.v1"}}},
                {"on_update", on_update},
                {"trigger", {{"partition", {{"dataset", "d"}, {"count", waiting == Waiting::kCollecting ? 3 : 2}}}}}};
    if (waiting == Waiting::kConstraint) doc["constraints"] = {{"delay", "1h"}};
    if (waiting == Waiting::kWindow) {
      const int hour = (std::stoi(Text("SELECT extract(hour from now() AT TIME ZONE 'UTC')::int")) + 2) % 24;
      auto hh = [](int h) { return std::string(h < 10 ? "0" : "") + std::to_string(h) + ":00"; };
      doc["constraints"] = {{"time_window", {{"start", hh(hour)}, {"end", hh((hour + 1) % 24)}}}};
    }
    Apply(doc);
    Ingest({Part("e1", "d"), Part("e2", "d")});
    Check();
    EXPECT_EQ(Text("SELECT state FROM jobs"),
              waiting == Waiting::kCollecting ? "pending_trigger" : "pending_constraint");
    return doc;
  }
  // v2: another program, and no constraint (a kept job waiting on one launches at once).
  void Update(json doc, int count = 3) {
    doc["program"]["name"] = "p.v2";
    doc.erase("constraints");
    doc["trigger"]["partition"]["count"] = count;
    Apply(doc);
  }

  std::string conn_;
  std::unique_ptr<PgStore> store_;
  int64_t offset_ = 0;
};

// --- discard (the default, SPEC §5) -----------------------------------------------------------

TEST_F(OnUpdateTest, DiscardDiscardsAJobInEachSituation) {
  for (Waiting w : {Waiting::kCollecting, Waiting::kConstraint, Waiting::kWindow}) {
    SetUp();
    offset_ = 0;
    Update(Situation(w, "discard"));
    std::string state;
    const std::string history = Why(FirstJob(), &state);
    EXPECT_EQ(state, "discarded") << static_cast<int>(w);
    EXPECT_NE(history.find("discarded: schedule updated"), std::string::npos) << history;
    Check();
    EXPECT_EQ(Text("SELECT count(*) FROM runs"), "0");
  }
}

// --- keep ---------------------------------------------------------------------------------------

TEST_F(OnUpdateTest, KeepACollectingJobCountsOnAndLaunchesUnderTheNewVersion) {
  Update(Situation(Waiting::kCollecting, "keep"));
  std::string state;
  EXPECT_NE(Why(FirstJob(), &state).find("kept: schedule updated to v2"), std::string::npos);
  EXPECT_EQ(state, "pending_trigger");
  Ingest({Part("e3", "d")});  // 3 of 3 with what it kept
  Check();
  EXPECT_EQ(Text("SELECT program FROM runs"), "p.v2");
  EXPECT_EQ(Text("SELECT schedule_version FROM jobs WHERE id = " + std::to_string(FirstJob())), "2");
}

// A kept job waiting on its constraints is checked at once under the new ones: v2 has none, so
// it launches at the next check instead of at v1's delay end an hour away.
TEST_F(OnUpdateTest, KeepAJobWaitingOnADelayIsCheckedUnderTheNewConstraints) {
  Update(Situation(Waiting::kConstraint, "keep"), 2);
  Check();
  std::string state;
  const std::string history = Why(FirstJob(), &state);
  EXPECT_EQ(state, "launched") << history;
  EXPECT_NE(history.find("kept: schedule updated to v2"), std::string::npos) << history;
  EXPECT_EQ(Text("SELECT program FROM runs"), "p.v2");
}

TEST_F(OnUpdateTest, KeepAJobWaitingForAWindowIsCheckedUnderTheNewConstraints) {
  Update(Situation(Waiting::kWindow, "keep"), 2);
  Check();
  std::string state;
  const std::string history = Why(FirstJob(), &state);
  EXPECT_EQ(state, "launched") << history;
  EXPECT_NE(history.find("kept: schedule updated to v2"), std::string::npos) << history;
  EXPECT_EQ(Text("SELECT program FROM runs"), "p.v2");
}

// --- reevaluate ---------------------------------------------------------------------------------

TEST_F(OnUpdateTest, ReevaluateCompletesACollectingJobAtOnce) {
  Update(Situation(Waiting::kCollecting, "reevaluate"), 2);  // its 2 partitions are enough now
  std::string state;
  std::string history = Why(FirstJob(), &state);
  EXPECT_EQ(state, "pending_constraint");
  EXPECT_NE(history.find("reevaluated: trigger complete under the new version"), std::string::npos) << history;
  Check();
  history = Why(FirstJob(), &state);
  EXPECT_EQ(state, "launched") << history;
  EXPECT_EQ(Text("SELECT program FROM runs"), "p.v2");
}

TEST_F(OnUpdateTest, ReevaluateSendsACollectingJobBackToCollecting) {
  json doc = Situation(Waiting::kCollecting, "reevaluate");
  // v2 counts only partitions matching "x*": neither e1 nor e2 does.
  doc["trigger"]["partition"]["match"] = "x*";
  Update(doc, 1);
  std::string state;
  const std::string history = Why(FirstJob(), &state);
  EXPECT_EQ(state, "pending_trigger");
  EXPECT_NE(history.find("reevaluated: collecting under the new version"), std::string::npos) << history;
  EXPECT_EQ(Text("SELECT trigger_state->0->>'count' FROM jobs"), "0");
  Ingest({Part("x1", "d")});
  Check();
  EXPECT_EQ(Text("SELECT program FROM runs"), "p.v2");
}

// A job waiting on its constraints had a complete trigger: it keeps waiting (a job never goes back
// to collecting), under the new version and its constraints.
TEST_F(OnUpdateTest, ReevaluateKeepsAJobWaitingOnADelayOrAWindowAndChecksItUnderTheNewConstraints) {
  for (Waiting w : {Waiting::kConstraint, Waiting::kWindow}) {
    SetUp();
    offset_ = 0;
    Update(Situation(w, "reevaluate"), 2);
    Check();
    std::string state;
    const std::string history = Why(FirstJob(), &state);
    EXPECT_EQ(state, "launched") << history;
    EXPECT_NE(history.find("kept: schedule updated to v2"), std::string::npos) << history;
    EXPECT_EQ(Text("SELECT program FROM runs"), "p.v2");
  }
}

// --- quiet and silence in the store ---------------------------------------------------------

// A silence is armed at apply: a collecting job due at its end, which the checker completes then.
TEST_F(OnUpdateTest, SilenceIsArmedAtApplyAndAgainByAnUpdate) {
  json doc = {{"name", "quiet-feed"},
              {"program", {{"name", "alert"}}},
              {"trigger", {{"silence", {{"dataset", "feed"}, {"for", "1h"}}}}}};
  Apply(doc);
  EXPECT_EQ(Text("SELECT count(*) FROM jobs WHERE state = 'pending_trigger' "
                 "AND next_check_at BETWEEN now() + interval '59 minutes' AND now() + interval '61 minutes'"),
            "1");
  std::string history = Why(FirstJob());
  EXPECT_NE(history.find("opened: silence armed"), std::string::npos) << history;
  // Due at its end: moved into the past, the checker completes and launches it.
  Exec(
      "UPDATE jobs SET trigger_state = jsonb_set(trigger_state, '{0,last_arrival_ms}', "
      "to_jsonb(floor(extract(epoch from now() - interval '2 hours') * 1000)::bigint)), "
      "next_check_at = now() - interval '1 hour'");
  Check();
  std::string state;
  history = Why(FirstJob(), &state);
  EXPECT_EQ(state, "launched") << history;
  EXPECT_NE(history.find("trigger complete"), std::string::npos) << history;
  // Once per silence: nothing armed until an arrival; an update (discard) arms it again.
  EXPECT_EQ(Text("SELECT count(*) FROM jobs WHERE state = 'pending_trigger'"), "0");
  doc["priority"] = 2;
  Apply(doc);
  EXPECT_EQ(Text("SELECT count(*) FROM jobs WHERE state = 'pending_trigger'"), "1");
}

// The clock's "trigger complete" entry belongs to the job it completed: a job decided after it in
// the same check (here discarded unchecked, its schedule changed) does not get it too.
TEST_F(OnUpdateTest, AClockCompletionIsWrittenOnlyToItsOwnJob) {
  Apply({{"name", "quiet-feed"},
         {"priority", 2},  // claimed first
         {"program", {{"name", "alert"}}},
         {"trigger", {{"silence", {{"dataset", "feed"}, {"for", "1h"}}}}}});
  Apply({{"name", "s"}, {"program", {{"name", "p"}}}, {"trigger", {{"partition", {{"dataset", "d"}}}}}});
  Ingest({Part("e1", "d")});  // s's job: complete, due now
  Exec(
      "UPDATE jobs SET trigger_state = jsonb_set(trigger_state, '{0,last_arrival_ms}', "
      "to_jsonb(floor(extract(epoch from now() - interval '2 hours') * 1000)::bigint)), "
      "next_check_at = now() - interval '1 hour' WHERE schedule_name LIKE '%quiet-feed'");
  Exec("UPDATE jobs SET schedule_version = schedule_version + 1 WHERE schedule_name LIKE '%/s'");
  Check();
  const int64_t silent = std::stoll(Text("SELECT id FROM jobs WHERE schedule_name LIKE '%quiet-feed'"));
  const int64_t other = std::stoll(Text("SELECT id FROM jobs WHERE schedule_name LIKE '%/s'"));
  std::string state;
  std::string history = Why(silent, &state);
  EXPECT_EQ(state, "launched") << history;
  EXPECT_NE(history.find("trigger complete"), std::string::npos) << history;
  history = Why(other, &state);
  EXPECT_EQ(state, "discarded") << history;
  EXPECT_NE(history.find("discarded: schedule updated"), std::string::npos) << history;
  // Its own completion (by the event, at ingest) once; none by the clock.
  const size_t own = history.find("trigger complete");
  ASSERT_NE(own, std::string::npos) << history;
  EXPECT_EQ(history.find("trigger complete", own + 1), std::string::npos) << history;
}

TEST_F(OnUpdateTest, QuietJobIsDueAtItsLastArrivalPlusThePeriod) {
  Apply({{"name", "q"},
         {"program", {{"name", "p"}}},
         {"trigger", {{"partition", {{"dataset", "d"}, {"quiet", "10m"}}}}}});
  Ingest({Part("e1", "d")});
  Check();  // not due yet
  EXPECT_EQ(Text("SELECT state FROM jobs"), "pending_trigger");
  EXPECT_EQ(Text("SELECT (floor(extract(epoch from next_check_at) * 1000)::bigint - "
                 "(trigger_state->0->>'last_arrival_ms')::bigint)::text FROM jobs"),
            "600000");
  std::string why;
  {
    auto seen = InspectJob(conn_, FirstJob());
    ASSERT_TRUE(seen.ok());
    why = FormatExplanation(ExplainJob(*seen));
  }
  EXPECT_NE(why.find("quiet until "), std::string::npos) << why;
  EXPECT_NE(why.find(", last arrival at "), std::string::npos) << why;
}

}  // namespace
}  // namespace trigd
