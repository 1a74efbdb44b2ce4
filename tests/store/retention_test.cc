// History retention (store/retention.h): what a pass deletes, what it keeps however old, the
// dry run, the chunks, and the shortest retention accepted.
#include <string>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "core/schedule_parser.h"
#include "source_paths.h"
#include "store/admin.h"
#include "store/migrator.h"
#include "store/retention.h"
#include "store/test_pg.h"

namespace trigd {
namespace {

using nlohmann::json;
using std::chrono::hours;

constexpr const char* kDb = "trigd_retention_test";
constexpr Millis kDay = hours(24);

Schedule Parse(const std::string& name, const json& constraints = json::object()) {
  json doc{{"name", name},
           {"program", {{"name", "prog." + name}}},
           {"trigger", {{"partition", {{"dataset", "d." + name}}}}}};
  if (!constraints.empty()) doc["constraints"] = constraints;
  ParsedSchedule p = ParseSchedule(doc);
  EXPECT_TRUE(p.ok()) << (p.errors.empty() ? "" : p.errors[0].ToString());
  return p.schedule;
}

class RetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    conn_ = test::FreshDatabase(kDb);
    Status s = ApplyMigrations(conn_, TRIGD_SOURCE_DIR "/schema", nullptr);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  std::string One(const std::string& sql) {
    pqxx::connection c(conn_);
    pqxx::nontransaction tx(c);
    auto r = tx.exec1(sql);
    return r[0].is_null() ? "" : r[0].as<std::string>();
  }
  int64_t Count(const std::string& sql) { return std::stoll(One(sql)); }
  void Apply(const std::vector<Schedule>& s) {
    auto r = ApplySchedules(conn_, s, Actor{"test"});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  int64_t Id(const std::string& name) { return Count("SELECT id FROM schedules WHERE name = '" + name + "'"); }
  static std::string DaysAgo(double days) { return "(now() - interval '1 day' * " + std::to_string(days) + ")"; }
  // A job in `state`, opened `opened` days ago and finished `finished` days ago (open: < 0).
  int64_t Job(const std::string& state, double opened, double finished = -1) {
    return Count(
        "INSERT INTO jobs (schedule_id, schedule_name, schedule_version, state, trigger_state, opened_at, "
        "finished_at) VALUES (" +
        std::to_string(schedule_) + ", 'default/s', 1, '" + state + "', '{}', " + DaysAgo(opened) + ", " +
        (finished < 0 ? "NULL" : DaysAgo(finished)) + ") RETURNING id");
  }
  // A launched job and its run in `run_state`, launched `launched` days ago, ended `ended` days
  // ago (active: < 0). Returns the job id.
  int64_t Launched(const std::string& run_state, double launched, double ended = -1) {
    const int64_t job = Job("launched", launched, launched);
    One("INSERT INTO runs (run_id, job_id, schedule_id, schedule_name, program, target, state, heartbeat_timeout_ms, "
        "launched_at, last_seen_at, finished_at, request) VALUES ('run-" +
        std::to_string(job) + "', " + std::to_string(job) + ", " + std::to_string(schedule_) +
        ", 'default/s', 'p', 'default', '" + run_state + "', 60000, " + DaysAgo(launched) + ", " + DaysAgo(launched) +
        ", " + (ended < 0 ? "NULL" : DaysAgo(ended)) + ", '{}') RETURNING run_id");
    return job;
  }
  bool JobExists(int64_t id) { return Count("SELECT count(*) FROM jobs WHERE id = " + std::to_string(id)) == 1; }
  bool RunExists(int64_t job) { return Count("SELECT count(*) FROM runs WHERE job_id = " + std::to_string(job)) == 1; }

  std::string conn_;
  int64_t schedule_ = 0;
};

TEST_F(RetentionTest, DeletesFinishedJobsAndRunsOlderThanTheRetentionAndKeepsEverythingElse) {
  Apply({Parse("s")});
  schedule_ = Id("default/s");
  const int64_t succeeded = Launched("succeeded", 41, 40);
  const int64_t failed = Launched("failed", 41, 40);
  const int64_t killed = Launched("killed", 41, 40);
  const int64_t discarded = Job("discarded", 41, 40);
  const int64_t running = Launched("running", 40);        // active, however old
  const int64_t retrying = Launched("retry_wait", 40);    // waits for a retry
  const int64_t open = Job("pending_trigger", 40);        // still accumulating
  const int64_t waiting = Job("pending_constraint", 40);  // waiting on a constraint
  const int64_t recent = Launched("succeeded", 6, 5);     // within the retention
  const int64_t recent_discard = Job("discarded", 6, 5);
  const int64_t late_end = Launched("succeeded", 41, 5);      // launched long ago, ended lately
  const int64_t unpublished = Launched("succeeded", 41, 40);  // its launch request still in the outbox
  One("INSERT INTO outbox (topic, payload, job_id) VALUES ('t', '{}', " + std::to_string(unpublished) +
      ") RETURNING id");
  const int64_t young = Job("pending_constraint", 0.01);  // after the cutoff: the pass ends here

  // A dry run counts and deletes nothing.
  TimePoint cutoff{}, runs_cutoff{};
  auto dry = PruneHistory(conn_, 30 * kDay, /*dry_run=*/true, &cutoff, &runs_cutoff);
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_EQ(dry->jobs, 4);
  EXPECT_EQ(dry->runs, 3);
  EXPECT_EQ(runs_cutoff, cutoff);  // no max_runs_per anywhere
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 13);
  EXPECT_EQ(Count("SELECT count(*) FROM runs"), 8);

  auto done = PruneHistory(conn_, 30 * kDay, /*dry_run=*/false);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->jobs, 4);
  EXPECT_EQ(done->runs, 3);
  for (int64_t gone : {succeeded, failed, killed, discarded}) {
    EXPECT_FALSE(JobExists(gone)) << gone;
    EXPECT_FALSE(RunExists(gone)) << gone;
  }
  for (int64_t kept : {running, retrying, open, waiting, recent, recent_discard, late_end, unpublished, young}) {
    EXPECT_TRUE(JobExists(kept)) << kept;
  }
  for (int64_t kept : {running, retrying, recent, late_end, unpublished}) EXPECT_TRUE(RunExists(kept)) << kept;

  // A second pass finds nothing more.
  auto again = PruneHistory(conn_, 30 * kDay, false);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->jobs, 0);
  EXPECT_EQ(again->runs, 0);
  // A shorter retention reaches the runs that ended 5 days ago.
  auto shorter = PruneHistory(conn_, 2 * kDay, false);
  ASSERT_TRUE(shorter.ok());
  EXPECT_EQ(shorter->jobs, 3);  // recent, recent_discard, late_end
  EXPECT_EQ(shorter->runs, 2);
}

TEST_F(RetentionTest, DeletesTheAuditOlderThanTheRetentionWithTheHistory) {
  Apply({Parse("s"), Parse("t")});  // two audit rows
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kSuspend, Actor{"test"}).ok());
  ASSERT_EQ(Count("WITH u AS (UPDATE audit SET at = " + DaysAgo(31) +
                  " WHERE action = 'apply' RETURNING 1) "
                  "SELECT count(*) FROM u"),
            2);
  ASSERT_EQ(Count("WITH u AS (UPDATE audit SET at = " + DaysAgo(29) +
                  " WHERE action = 'suspend' RETURNING 1) "
                  "SELECT count(*) FROM u"),
            1);

  auto dry = PruneHistory(conn_, 30 * kDay, /*dry_run=*/true);
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_EQ(dry->audit, 2);
  EXPECT_EQ(Count("SELECT count(*) FROM audit"), 3);

  auto done = PruneHistory(conn_, 30 * kDay, /*dry_run=*/false);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->audit, 2);
  EXPECT_EQ(One("SELECT string_agg(action, ',') FROM audit"), "suspend");
  auto again = PruneHistory(conn_, 30 * kDay, false);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->audit, 0);
  // Without jobs at all (the pass ends at its first, empty chunk) the audit is pruned too.
  auto shorter = PruneHistory(conn_, 28 * kDay, false);
  ASSERT_TRUE(shorter.ok());
  EXPECT_EQ(shorter->audit, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM audit"), 0);
}

TEST_F(RetentionTest, KeepsTheRunsAMaxRunsPerPeriodStillCounts) {
  Apply({Parse("s", json{{"max_runs_per", {{"count", 3}, {"period", "60d"}}}}), Parse("other")});
  schedule_ = Id("default/s");
  const int64_t counted = Launched("succeeded", 50, 40);  // in the 60-day period: kept
  const int64_t older = Launched("succeeded", 70, 69);    // before it: deleted
  TimePoint cutoff{}, runs_cutoff{};
  auto r = PruneHistory(conn_, 30 * kDay, false, &cutoff, &runs_cutoff);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(cutoff - runs_cutoff, 30 * kDay);
  EXPECT_EQ(r->runs, 1);
  EXPECT_TRUE(RunExists(counted));
  EXPECT_FALSE(RunExists(older));
  // A suspended schedule's period still counts (a resume makes it apply again).
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kSuspend, Actor{"test"}).ok());
  auto suspended = PruneHistory(conn_, 30 * kDay, false);
  ASSERT_TRUE(suspended.ok());
  EXPECT_EQ(suspended->runs, 0);
  EXPECT_TRUE(RunExists(counted));
  // Once no schedule has the constraint, the retention alone decides.
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kDelete, Actor{"test"}).ok());
  auto deleted = PruneHistory(conn_, 30 * kDay, false);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(deleted->runs, 1);
  EXPECT_FALSE(RunExists(counted));
}

TEST_F(RetentionTest, GoesThroughTheJobsInChunksAndStopsAtTheFirstYoungOne) {
  Apply({Parse("s")});
  schedule_ = Id("default/s");
  for (int i = 0; i < 5; ++i) Launched("succeeded", 41, 40);
  const int64_t young = Job("discarded", 0.5, 0.5);
  const int64_t after_young = Launched("succeeded", 41, 40);  // an id after a young job: not reached
  auto p = HistoryPruner::Start(conn_, 30 * kDay);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  int64_t jobs = 0;
  int steps = 0;
  while (!(*p)->done()) {
    auto t = (*p)->Step(2);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_LE(t->jobs, 2);
    jobs += t->jobs;
    ++steps;
  }
  EXPECT_EQ(jobs, 5);
  EXPECT_EQ(steps, 3);  // 2 + 2 + (1 and the young one)
  EXPECT_TRUE(JobExists(young));
  EXPECT_TRUE(JobExists(after_young));
  auto more = (*p)->Step(2);  // a finished pass does nothing
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(more->jobs, 0);
}

TEST_F(RetentionTest, RefusesARetentionShorterThanADay) {
  auto p = HistoryPruner::Start(conn_, hours(23));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalid);
  EXPECT_EQ(p.status().message(), "retention must be at least 1d, got 23h");
  EXPECT_TRUE(HistoryPruner::Start(conn_, kDay).ok());
}

// A retention whose cutoff (now - keep) would wrap int64 is refused and deletes nothing; the
// longest duration trigd reads is accepted.
TEST_F(RetentionTest, RefusesARetentionLongerThanTheLongestDurationAndDeletesNothing) {
  Apply({Parse("s")});
  schedule_ = Id("default/s");
  const int64_t old_job = Launched("succeeded", 3, 3);
  auto p = PruneHistory(conn_, kMaxDuration + Millis(1), /*dry_run=*/false);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalid);
  EXPECT_EQ(p.status().message(), "retention must be at most 3650d, got 315360000001ms");
  EXPECT_TRUE(JobExists(old_job) && RunExists(old_job));
  auto longest = PruneHistory(conn_, kMaxDuration, /*dry_run=*/false);
  ASSERT_TRUE(longest.ok()) << longest.status().ToString();
  EXPECT_EQ(longest->jobs, 0);
  EXPECT_TRUE(JobExists(old_job) && RunExists(old_job));
}

}  // namespace
}  // namespace trigd
