// trigctl lineages (SPEC §10) on a long history: the list reads lineages newest first through
// their primary key and each one's runs and jobs through runs_by_lineage and
// jobs_active_by_lineage, never a scan of runs or jobs; states and the tree of one lineage.
#include "store/lineages.h"

#include <string>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "source_paths.h"
#include "store/lineage_store.h"
#include "store/migrator.h"
#include "store/pg_store_parts.h"
#include "store/test_pg.h"

namespace trigd {
namespace {

using nlohmann::json;

constexpr const char* kDb = "trigd_lineages_test";

class LineagesTest : public ::testing::Test {
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
  std::string Explain(const ListStatement& st) {
    pqxx::connection c(conn_);
    pqxx::nontransaction tx(c);
    std::string plan;
    for (const auto& row : tx.exec_params("EXPLAIN " + st.sql, pqxx::prepare::make_dynamic_params(st.params)))
      plan += row[0].as<std::string>() + "\n";
    return plan;
  }
  // Lineages l<n> of three runs each: root r<n>-1, then r<n>-2 and r<n>-3 triggered by the root.
  // `state_of`: SQL of the third run's state from n.
  void History(int lineages, const std::string& state_of) {
    Exec(
        "INSERT INTO lineages (id, started_at) SELECT 'l' || lpad(g::text, 7, '0'), "
        "timestamptz '2026-01-01 00:00:00+00' + interval '1 second' * g FROM generate_series(1, " +
        std::to_string(lineages) + ") g");
    Exec(
        "INSERT INTO runs (run_id, job_id, schedule_id, schedule_name, program, target, state, heartbeat_timeout_ms, "
        "launched_at, last_seen_at, request, lineage, worker) "
        "SELECT 'r' || lpad(g::text, 7, '0') || '-' || k, g * 3 + k, k, 'default/s' || k, 'p' || k, 'default', "
        "CASE WHEN k = 3 THEN " +
        state_of +
        " ELSE 'succeeded' END, 60000, "
        "timestamptz '2026-01-01 00:00:00+00' + interval '1 second' * g + interval '1 ms' * k, now(), "
        "CASE WHEN k = 1 THEN '{\"triggered_by\":[]}' ELSE '{\"triggered_by\":[{\"id\":\"e\",\"type\":\"program\","
        "\"payload\":{\"run_id\":\"r' || lpad(g::text, 7, '0') || '-1\"}}]}' END, "
        "'l' || lpad(g::text, 7, '0'), 'host:' || k FROM generate_series(1, " +
        std::to_string(lineages) + ") g CROSS JOIN generate_series(1, 3) k");
    // Their launched jobs (jobs_active_by_lineage holds none of them).
    Exec(
        "INSERT INTO jobs (schedule_id, schedule_name, schedule_version, state, trigger_state, opened_at, lineage) "
        "SELECT k, 'default/s' || k, 1, 'launched', '{}', now(), 'l' || lpad(g::text, 7, '0') FROM "
        "generate_series(1, " +
        std::to_string(lineages) + ") g CROSS JOIN generate_series(1, 3) k");
    // Jobs still collecting, of schedules without correlation (no lineage yet), as a live
    // system has many of: the list must not read them through jobs_by_state per lineage.
    Exec(
        "INSERT INTO jobs (schedule_id, schedule_name, schedule_version, state, trigger_state, opened_at, lineage) "
        "SELECT 100 + g, 'default/c' || g, 1, 'pending_trigger', '{}', now(), '' FROM generate_series(1, " +
        std::to_string(lineages / 2) + ") g");
    Exec("ANALYZE");
  }
  std::string conn_;
};

// One check launches several runs of a lineage (a fan-out), one batch fails a lineage for a
// schedule twice: each is one row, written by one statement that names it once.
TEST_F(LineagesTest, ALineageNamedTwiceInOneTransactionIsOneRow) {
  pqxx::connection c(conn_);
  pqxx::work tx(c);
  // The checker's writes with launched runs' lineages only (every other part empty).
  for (const auto& [name, sql] : pg_internal::PreparedStatements()) {
    if (name == "checker_writes") c.prepare(name, sql);
  }
  std::vector<std::string> params(12, "{}");
  params.push_back("{l3}");        // started by a run
  params.push_back("{l2,l1,l2}");  // inherited
  params.insert(params.end(),
                pg_internal::kDecidedJobs.columns.size() + pg_internal::kRuns.columns.size() +
                    pg_internal::kOutbox.columns.size(),
                "{}");
  tx.exec_prepared("checker_writes", pqxx::prepare::make_dynamic_params(params));
  const TimePoint t = TimePoint(Millis(1800000000000));
  pg_internal::StoreFailedLineages(tx, {{1, "l1", t}, {1, "l1", t + Millis(5)}, {2, "l1", t}});
  tx.commit();
  pqxx::nontransaction q(c);
  EXPECT_EQ(q.exec1("SELECT count(*) FROM lineages")[0].as<int>(), 3);
  EXPECT_EQ(q.exec1("SELECT count(*) FROM failed_lineages")[0].as<int>(), 2);
  EXPECT_EQ(q.exec1("SELECT (extract(epoch FROM expires_at) * 1000)::bigint FROM failed_lineages "
                    "WHERE schedule_id = 1")[0]
                .as<int64_t>(),
            1800000000005);
}

TEST_F(LineagesTest, TheListReadsThroughIndexesOnALongHistory) {
  // 40,000 lineages, 120,000 runs; every 50th lineage failed, every 1000th still running.
  History(40000, "CASE WHEN g % 1000 = 0 THEN 'running' WHEN g % 50 = 0 THEN 'failed' ELSE 'succeeded' END");
  for (std::optional<LineageState> state :
       {std::optional<LineageState>(), std::optional(LineageState::kFailed), std::optional(LineageState::kRunning)}) {
    const ListStatement st = LineagesListStatement(state, 100);
    const std::string plan = Explain(st);
    EXPECT_NE(plan.find("Index Scan Backward using lineages_pkey"), std::string::npos) << st.sql << "\n" << plan;
    EXPECT_NE(plan.find("runs_by_lineage"), std::string::npos) << plan;
    EXPECT_NE(plan.find("jobs_active_by_lineage"), std::string::npos) << plan;
    EXPECT_EQ(plan.find("Seq Scan on runs"), std::string::npos) << plan;
    EXPECT_EQ(plan.find("Seq Scan on jobs"), std::string::npos) << plan;
    EXPECT_EQ(plan.find("Sort"), std::string::npos) << plan;
  }
  auto failed = QueryLineages(conn_, LineageState::kFailed, 3);
  ASSERT_TRUE(failed.ok()) << failed.status().ToString();
  ASSERT_EQ(failed->size(), 3u);
  EXPECT_EQ((*failed)[0]["lineage"], "l0039950");  // newest first; 40000 is running
  EXPECT_EQ((*failed)[0]["failed_runs"], 1);
  auto running = QueryLineages(conn_, LineageState::kRunning, 100);
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->size(), 40u);
  auto all = QueryLineages(conn_, std::nullopt, 2);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0]["state"], "running");
  EXPECT_EQ((*all)[1]["state"], "succeeded");
}

TEST_F(LineagesTest, ALineageIsShownByItsIdOrAnyRunOfItAsATree) {
  History(3, "CASE WHEN g = 2 THEN 'killed' ELSE 'succeeded' END");
  // An open job of lineage l0000003 keeps it running.
  Exec(
      "INSERT INTO jobs (schedule_id, schedule_name, schedule_version, state, trigger_state, opened_at, lineage) "
      "VALUES (9, 'default/join', 1, 'pending_trigger', '{}', now(), 'l0000003')");
  for (const std::string id : {"l0000002", "r0000002-3"}) {
    auto l = QueryLineage(conn_, id);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    EXPECT_EQ((*l)["lineage"], "l0000002");
    EXPECT_EQ((*l)["state"], "failed");
    ASSERT_EQ((*l)["runs"].size(), 3u);
    EXPECT_EQ((*l)["runs"][0]["run_id"], "r0000002-1");
    EXPECT_EQ((*l)["runs"][0]["depth"], 0);
    EXPECT_EQ((*l)["runs"][1]["depth"], 1);
    EXPECT_EQ((*l)["runs"][2]["worker"], "host:3");
    EXPECT_EQ((*l)["runs"][2]["upstream"], json::array({"r0000002-1"}));
  }
  auto open = QueryLineage(conn_, "l0000003");
  ASSERT_TRUE(open.ok());
  EXPECT_EQ((*open)["state"], "running");
  EXPECT_EQ((*open)["jobs"].size(), 1u);
  auto ok = QueryLineage(conn_, "l0000001");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)["state"], "succeeded");
  auto none = QueryLineage(conn_, "nope");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace trigd
