// The checker's claim of due jobs (schema/004_claim_by_due_time.sql, PgStore::CheckDueJobs):
// next_check_at is set only on pending jobs, and with a large history of finished jobs the
// claim still walks its priority-ordered index instead of sorting every due job per claim.
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "source_paths.h"
#include "store/migrator.h"
#include "store/test_pg.h"

namespace trigd {
namespace {

using test::Pg;

class ClaimPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = "trigd_claim_plan_test_" + std::to_string(getpid());
    pqxx::connection admin(Pg());
    pqxx::nontransaction tx(admin);
    tx.exec("DROP DATABASE IF EXISTS " + db_ + " WITH (FORCE)");
    tx.exec("CREATE DATABASE " + db_);
    ASSERT_TRUE(ApplyMigrations(Conn(), TRIGD_SOURCE_DIR "/schema", nullptr).ok());
  }
  void TearDown() override {
    pqxx::connection admin(Pg());
    pqxx::nontransaction tx(admin);
    tx.exec("DROP DATABASE IF EXISTS " + db_ + " WITH (FORCE)");
  }
  std::string Conn() const { return Pg() + " dbname=" + db_; }
  // The plan PostgreSQL would take for `sql`, one line per node.
  static std::string Explain(pqxx::nontransaction& tx, const std::string& sql) {
    std::string plan;
    for (const auto& r : tx.exec("EXPLAIN " + sql)) plan += r[0].as<std::string>() + "\n";
    return plan;
  }
  std::string db_;
};

TEST_F(ClaimPlanTest, OnlyPendingJobsHaveANextCheck) {
  pqxx::connection c(Conn());
  pqxx::nontransaction tx(c);
  tx.exec(
      "INSERT INTO jobs (schedule_id, schedule_name, schedule_version, state, trigger_state, opened_at, "
      "next_check_at) VALUES (1, 'a/b', 1, 'pending_constraint', '{}', now(), now())");
  EXPECT_THROW(tx.exec("INSERT INTO jobs (schedule_id, schedule_name, schedule_version, state, trigger_state, "
                       "opened_at, next_check_at) VALUES (1, 'a/b', 1, 'launched', '{}', now(), now())"),
               pqxx::check_violation);
  EXPECT_THROW(tx.exec("UPDATE jobs SET state = 'launched'"), pqxx::check_violation);
  tx.exec("UPDATE jobs SET state = 'launched', next_check_at = NULL");
}

TEST_F(ClaimPlanTest, ClaimWalksThePriorityIndexWhenHistoryDwarfsTheDueJobs) {
  pqxx::connection c(Conn());
  pqxx::nontransaction tx(c);
  tx.exec(
      "INSERT INTO jobs (schedule_id, schedule_name, schedule_version, state, trigger_state, opened_at, "
      "finished_at) SELECT g % 100, 'a/b', 1, 'launched', '{}', now(), now() FROM generate_series(1, 100000) g");
  tx.exec(
      "INSERT INTO jobs (schedule_id, schedule_name, schedule_version, state, trigger_state, opened_at, ready_at, "
      "next_check_at) SELECT g % 100, 'a/b', 1, 'pending_constraint', '{}', now(), now(), "
      "now() - interval '1 second' FROM generate_series(1, 10000) g");
  tx.exec("ANALYZE jobs");
  // The claim query of PgStore::CheckDueJobs.
  const std::string plan = Explain(tx,
                                   "SELECT id FROM jobs WHERE next_check_at <= now() "
                                   "ORDER BY priority DESC, ready_at NULLS LAST, id LIMIT 1000 FOR UPDATE SKIP LOCKED");
  EXPECT_NE(plan.find("jobs_claim"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("Sort"), std::string::npos) << plan;
}

// The sweep's look for runs past their schedule's run_timeout (PgStore::SweepRuns) starts from
// the schedules that set one, through their partial index (schema/022): a sequential scan of
// every schedule took 75 ms at 100,000 schedules on every sweep, none of them setting a
// run_timeout (docs/adr/0157-sweep-reads-only-schedules-with-a-run-timeout.md).
TEST_F(ClaimPlanTest, SweepReadsOnlyTheSchedulesWithARunTimeout) {
  pqxx::connection c(Conn());
  pqxx::nontransaction tx(c);
  tx.exec(
      "INSERT INTO schedules (name, version, doc_hash, document, run_timeout_ms) SELECT 'a/s' || g, 1, 'h', '{}', "
      "CASE WHEN g % 10000 = 0 THEN 60000 END FROM generate_series(1, 50000) g");
  tx.exec("ANALYZE schedules");
  // The run_timeout part of the sweep's query, as PgStore::SweepRuns has it.
  const std::string plan =
      Explain(tx,
              "SELECT r.run_id FROM schedules s JOIN runs r ON r.schedule_id = s.id "
              "AND r.state IN ('launched', 'running') WHERE s.run_timeout_ms IS NOT NULL "
              "AND r.attempt_launched_at <= now() - make_interval(secs => s.run_timeout_ms / 1000.0)");
  EXPECT_EQ(plan.find("Seq Scan on schedules"), std::string::npos) << plan;
  EXPECT_NE(plan.find("schedules_with_run_timeout"), std::string::npos) << plan;
}

}  // namespace
}  // namespace trigd
