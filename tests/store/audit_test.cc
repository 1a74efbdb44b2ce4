// The audit (store/audit.h): each verb that changes something writes exactly one row naming its
// actor, in the transaction of the change (one rolled back leaves none); a verb that changes
// nothing or is refused writes none; the list's filters; and who started a run by hand.
#include <string>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "core/schedule_parser.h"
#include "source_paths.h"
#include "store/admin.h"
#include "store/audit.h"
#include "store/migrator.h"
#include "store/operate.h"
#include "store/test_pg.h"

namespace trigd {
namespace {

using nlohmann::json;

constexpr const char* kDb = "trigd_audit_test";
const Actor kAlice{"token:alice"};
const Actor kBob{"os:bob@host-1"};

// The schedule NS/NAME.
Schedule Parse(const std::string& full_name, const std::string& dataset = "d") {
  const size_t slash = full_name.find('/');
  ParsedSchedule p = ParseSchedule(json{{"namespace", full_name.substr(0, slash)},
                                        {"name", full_name.substr(slash + 1)},
                                        {"program", {{"name", "prog"}}},
                                        {"trigger", {{"partition", {{"dataset", dataset}}}}}});
  EXPECT_TRUE(p.ok()) << (p.errors.empty() ? "" : p.errors[0].ToString());
  return p.schedule;
}

class AuditTest : public ::testing::Test {
 protected:
  void SetUp() override {
    conn_ = test::FreshDatabase(kDb);
    Status s = ApplyMigrations(conn_, TRIGD_SOURCE_DIR "/schema", nullptr);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void Exec(const std::string& sql) {
    pqxx::connection c(conn_);
    pqxx::nontransaction tx(c);
    tx.exec(sql);
  }
  int64_t Count(const std::string& sql) {
    pqxx::connection c(conn_);
    pqxx::nontransaction tx(c);
    return tx.exec1(sql)[0].as<int64_t>();
  }
  int64_t AuditRows() { return Count("SELECT count(*) FROM audit"); }
  // Every audit row, oldest first.
  json Rows() {
    auto r = QueryAudit(conn_, AuditQuery{});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    json rows = json::array();
    for (auto it = r->rbegin(); it != r->rend(); ++it) rows.push_back(*it);
    return rows;
  }
  void Apply(const std::vector<Schedule>& s, const Actor& actor = kAlice) {
    auto r = ApplySchedules(conn_, s, actor);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  // The run of job `job_id`, launched (as the checker would leave it): its run id.
  std::string Launch(int64_t job_id) {
    const std::string run = "run-" + std::to_string(job_id);
    Exec("UPDATE jobs SET state = 'launched', next_check_at = NULL WHERE id = " + std::to_string(job_id));
    Exec(
        "INSERT INTO runs (run_id, job_id, schedule_id, schedule_name, program, target, state, heartbeat_timeout_ms, "
        "launched_at, last_seen_at, request) SELECT '" +
        run +
        "', id, schedule_id, schedule_name, 'prog', 'default', 'launched', 60000, now(), now(), '{}' FROM jobs "
        "WHERE id = " +
        std::to_string(job_id));
    Exec("UPDATE schedule_runtime SET active_runs = active_runs + 1");
    return run;
  }
  // A run of a job started by hand by alice, launched.
  std::string LaunchedRun(const std::string& schedule) {
    auto job = StartRun(conn_, schedule, json::object(), false, kAlice);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return Launch(job->job_id);
  }
  // Makes every transaction that writes `table` fail at its commit, after all its statements
  // (its audit row's included) ran: the whole change rolls back.
  void FailAtCommit(const std::string& table) {
    Exec(
        "CREATE OR REPLACE FUNCTION fail_at_commit() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$");
    Exec("CREATE CONSTRAINT TRIGGER fail_at_commit AFTER INSERT OR UPDATE OR DELETE ON " + table +
         " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fail_at_commit()");
  }
  void StopFailing(const std::string& table) { Exec("DROP TRIGGER fail_at_commit ON " + table); }

  std::string conn_;
};

TEST_F(AuditTest, ApplyWritesOneRowPerNewOrChangedScheduleAndNoneForAnUnchangedOne) {
  Apply({Parse("team-a/s"), Parse("team-b/t")});
  json rows = Rows();
  ASSERT_EQ(rows.size(), 2u) << rows.dump();
  EXPECT_EQ(rows[0]["actor"], "token:alice");
  EXPECT_EQ(rows[0]["action"], "apply");
  EXPECT_EQ(rows[0]["schedule"], "team-a/s");
  EXPECT_EQ(rows[0]["namespace"], "team-a");
  EXPECT_EQ(rows[0]["detail"]["version"], 1);
  EXPECT_TRUE(rows[0]["detail"]["from_version"].is_null());
  EXPECT_EQ(rows[1]["schedule"], "team-b/t");

  Apply({Parse("team-a/s"), Parse("team-b/t")});  // unchanged: nothing changed, nothing recorded
  EXPECT_EQ(AuditRows(), 2);

  Apply({Parse("team-a/s", "other"), Parse("team-b/t")}, kBob);
  rows = Rows();
  ASSERT_EQ(rows.size(), 3u) << rows.dump();
  EXPECT_EQ(rows[2]["actor"], "os:bob@host-1");
  EXPECT_EQ(rows[2]["schedule"], "team-a/s");
  EXPECT_EQ(rows[2]["detail"]["version"], 2);
  EXPECT_EQ(rows[2]["detail"]["from_version"], 1);
  EXPECT_EQ(rows[2]["detail"]["fields"], json::array({"trigger.partition.dataset"}));
}

TEST_F(AuditTest, SuspendResumeAndDeleteEachWriteOneRowAndANoOpNone) {
  Apply({Parse("default/s")});
  const int64_t applied = AuditRows();
  bool changed = false;
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kSuspend, kBob, &changed).ok());
  ASSERT_TRUE(changed);
  EXPECT_EQ(AuditRows(), applied + 1);
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kSuspend, kBob, &changed).ok());
  ASSERT_FALSE(changed);
  EXPECT_EQ(AuditRows(), applied + 1);  // already suspended: no change, no row
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kResume, kAlice).ok());
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kDelete, kBob).ok());
  EXPECT_EQ(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kDelete, kBob).code(), StatusCode::kNotFound);
  json rows = Rows();
  ASSERT_EQ(rows.size(), static_cast<size_t>(applied + 3)) << rows.dump();
  EXPECT_EQ(rows[applied]["action"], "suspend");
  EXPECT_EQ(rows[applied]["actor"], "os:bob@host-1");
  EXPECT_EQ(rows[applied + 1]["action"], "resume");
  EXPECT_EQ(rows[applied + 1]["actor"], "token:alice");
  EXPECT_EQ(rows[applied + 2]["action"], "delete");
  EXPECT_EQ(rows[applied + 2]["detail"]["version"], 1);
  EXPECT_EQ(rows[applied + 2]["detail"]["runs_killed"], 0);
}

TEST_F(AuditTest, StartRerunAndCancelEachWriteOneRowNamingTheRun) {
  Apply({Parse("default/s")});
  const std::string run = LaunchedRun("default/s");  // a start by alice
  auto rerun = RerunRun(conn_, run, true, kBob);
  ASSERT_TRUE(rerun.ok()) << rerun.status().ToString();
  auto cancel = CancelRun(conn_, "t.", run, "wrong data", kBob);
  ASSERT_TRUE(cancel.ok()) << cancel.status().ToString();
  json rows = Rows();
  ASSERT_EQ(rows.size(), 4u) << rows.dump();
  EXPECT_EQ(rows[1]["action"], "start");
  EXPECT_EQ(rows[1]["actor"], "token:alice");
  EXPECT_TRUE(rows[1]["run_id"].is_null());
  EXPECT_EQ(rows[2]["action"], "rerun");
  EXPECT_EQ(rows[2]["actor"], "os:bob@host-1");
  EXPECT_EQ(rows[2]["run_id"], run);
  EXPECT_EQ(rows[2]["detail"]["job_id"], rerun->job_id);
  EXPECT_EQ(rows[2]["detail"]["force"], true);
  EXPECT_EQ(rows[3]["action"], "cancel");
  EXPECT_EQ(rows[3]["run_id"], run);
  EXPECT_EQ(rows[3]["schedule"], "default/s");
  EXPECT_EQ(rows[3]["detail"]["why"], "wrong data");
  EXPECT_EQ(rows[3]["detail"]["previous_state"], "launched");
}

TEST_F(AuditTest, RunsShowNamesWhoStartedTheRunByHandAndARerunItsOwnStarter) {
  Apply({Parse("default/s")});
  const std::string run = LaunchedRun("default/s");
  auto shown = QueryRun(conn_, run);
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ((*shown)[0]["started_by_hand"], "token:alice");
  // The rerun copies the run's triggered_by, whose manual entry names alice: its run names bob.
  auto rerun = RerunRun(conn_, run, false, kBob);
  ASSERT_TRUE(rerun.ok());
  auto rerun_shown = QueryRun(conn_, Launch(rerun->job_id));
  ASSERT_TRUE(rerun_shown.ok());
  EXPECT_EQ((*rerun_shown)[0]["started_by_hand"], "os:bob@host-1");
}

TEST_F(AuditTest, BackfillIsRecordedWithItsRangeAndTicks) {
  Apply({Parse("default/s")});
  const TimePoint from = *ParseTime("2026-11-22T00:00:00Z"), to = *ParseTime("2026-11-23T00:00:00Z");
  ASSERT_TRUE(RecordBackfill(conn_, "default/s", from, to, 24, kBob).ok());
  json rows = Rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["action"], "backfill");
  EXPECT_EQ(rows[1]["detail"], (json{{"from", "2026-11-22T00:00:00Z"}, {"to", "2026-11-23T00:00:00Z"}, {"ticks", 24}}));
  EXPECT_EQ(Count("SELECT sum(count) FROM operator_actions WHERE action = 'backfill_tick'"), 24);
}

TEST_F(AuditTest, ARefusedVerbWritesNoRow) {
  Apply({Parse("default/s")});
  const std::string run = LaunchedRun("default/s");
  ASSERT_TRUE(CancelRun(conn_, "t.", run, "", kBob).ok());
  const int64_t before = AuditRows();
  EXPECT_EQ(CancelRun(conn_, "t.", run, "", kBob).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(StartRun(conn_, "default/none", json::object(), false, kBob).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kSuspend, kBob).ok());
  EXPECT_EQ(StartRun(conn_, "default/s", json::object(), false, kBob).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(AuditRows(), before + 1);  // the suspend alone
}

TEST_F(AuditTest, AChangeRolledBackAtCommitLeavesNoAuditRow) {
  Apply({Parse("default/s")});
  const std::string run = LaunchedRun("default/s");
  const int64_t before = AuditRows();

  FailAtCommit("schedule_changes");  // apply, suspend, resume and delete each log a change
  EXPECT_FALSE(ApplySchedules(conn_, {Parse("default/s", "other"), Parse("default/new")}, kBob).ok());
  EXPECT_FALSE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kSuspend, kBob).ok());
  EXPECT_FALSE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kDelete, kBob).ok());
  StopFailing("schedule_changes");
  FailAtCommit("jobs");
  EXPECT_FALSE(StartRun(conn_, "default/s", json::object(), false, kBob).ok());
  EXPECT_FALSE(RerunRun(conn_, run, false, kBob).ok());
  StopFailing("jobs");
  FailAtCommit("runs");
  EXPECT_FALSE(CancelRun(conn_, "t.", run, "", kBob).ok());
  StopFailing("runs");
  FailAtCommit("operator_actions");
  EXPECT_FALSE(RecordBackfill(conn_, "default/s", TimePoint{}, TimePoint{} + Millis(1), 1, kBob).ok());
  StopFailing("operator_actions");

  EXPECT_EQ(AuditRows(), before);
  EXPECT_EQ(Count("SELECT count(*) FROM schedules WHERE name = 'default/new'"), 0);  // rolled back indeed
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state = 'launched'"), 1);
}

TEST_F(AuditTest, ListsNewestFirstFilteredBySinceActorAndNamespace) {
  Apply({Parse("team-a/s")}, kAlice);
  Apply({Parse("team-b/t")}, kBob);
  Apply({Parse("team-a/u")}, kBob);
  Exec("UPDATE audit SET at = now() - interval '2 days' WHERE schedule = 'team-a/s'");
  auto q = [&](AuditQuery query) {
    auto r = QueryAudit(conn_, query);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::string> names;
    for (const auto& row : *r) names.push_back(row["schedule"].get<std::string>());
    return names;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(q({}), (V{"team-a/u", "team-b/t", "team-a/s"}));
  EXPECT_EQ(q({.actor = "os:bob@host-1"}), (V{"team-a/u", "team-b/t"}));
  EXPECT_EQ(q({.namespace_name = "team-a"}), (V{"team-a/u", "team-a/s"}));
  EXPECT_EQ(q({.since = SystemClock::Get().Now() - std::chrono::hours(24)}), (V{"team-a/u", "team-b/t"}));
  EXPECT_EQ(q({.actor = "os:bob@host-1", .namespace_name = "team-a"}), (V{"team-a/u"}));
  EXPECT_EQ(q({.limit = 1}), (V{"team-a/u"}));
  EXPECT_EQ(q({.actor = "token:nobody"}), V{});
}

}  // namespace
}  // namespace trigd
