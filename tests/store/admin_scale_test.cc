// trigctl's lists on a long history (kept forever unless a retention prunes it): a schedule name's jobs and
// runs are found by the ids it has had, every incarnation's (a name deleted and applied again is
// a new row, schema/013), and each list is read through an index with its LIMIT, newest first,
// not by a scan and a sort of the whole history.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "core/schedule_parser.h"
#include "source_paths.h"
#include "store/admin.h"
#include "store/migrator.h"
#include "store/test_pg.h"

namespace trigd {
namespace {

using nlohmann::json;

// A database of its own (pg_store_test's is dropped and made again by each of its tests).
constexpr const char* kDb = "trigd_admin_lists_test";

Schedule Parse(const std::string& name, int priority = 0) {
  ParsedSchedule p = ParseSchedule(json{{"name", name},
                                        {"program", {{"name", "prog." + name}}},
                                        {"trigger", {{"partition", {{"dataset", "d." + name}}}}},
                                        {"priority", priority}});
  EXPECT_TRUE(p.ok()) << (p.errors.empty() ? "" : p.errors[0].ToString());
  return p.schedule;
}

class AdminListsTest : public ::testing::Test {
 protected:
  void SetUp() override { conn_ = test::FreshDatabase(kDb); }
  void Migrate(const std::string& dir = TRIGD_SOURCE_DIR "/schema") {
    Status s = ApplyMigrations(conn_, dir, nullptr);
    ASSERT_TRUE(s.ok()) << s.ToString();
    Exec(
        "CREATE OR REPLACE FUNCTION test_run_id(t timestamptz) RETURNS text LANGUAGE sql AS $$ "
        "SELECT substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || substr(r, 1, 3) || '-8' || substr(r, 4, 3) "
        "|| '-' || substr(r, 7, 12) FROM (SELECT lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') AS h, "
        "md5(random()::text) AS r) x $$");
  }
  void Exec(const std::string& sql) {
    pqxx::connection c(conn_);
    pqxx::nontransaction tx(c);
    tx.exec(sql);
  }
  std::string One(const std::string& sql) {
    pqxx::connection c(conn_);
    pqxx::nontransaction tx(c);
    auto r = tx.exec1(sql);
    return r[0].is_null() ? "" : r[0].as<std::string>();
  }
  void Apply(const std::vector<Schedule>& s) {
    auto r = ApplySchedules(conn_, s, Actor{"test"});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  int64_t Id(const std::string& name) {
    return std::stoll(One("SELECT id FROM schedules WHERE name = '" + name + "'"));
  }
  int Version(const std::string& name) {
    return std::stoi(One("SELECT version FROM schedules WHERE name = '" + name + "'"));
  }
  // A launched job of the schedule and its run, `minute` minutes into 2026, with a UUIDv7 run id
  // of that time as trigd makes them. Returns the job id.
  int64_t Launch(int64_t schedule_id, const std::string& name, int version, int minute) {
    const std::string at =
        "(timestamptz '2026-01-01 00:00:00+00' + interval '1 minute' * " + std::to_string(minute) + ")";
    return std::stoll(One(
        "WITH j AS (INSERT INTO jobs (schedule_id, schedule_name, schedule_version, state, trigger_state, opened_at, "
        "finished_at) VALUES (" +
        std::to_string(schedule_id) + ", '" + name + "', " + std::to_string(version) + ", 'launched', '{}', " + at +
        ", " + at +
        ") RETURNING id, opened_at), "
        "r AS (INSERT INTO runs (run_id, job_id, schedule_id, schedule_name, program, target, state, "
        "heartbeat_timeout_ms, launched_at, last_seen_at, request) SELECT test_run_id(opened_at), id, " +
        std::to_string(schedule_id) + ", '" + name +
        "', 'p', 'default', 'succeeded', 60000, opened_at, opened_at, "
        "'{}' FROM j) SELECT id FROM j"));
  }
  std::string Explain(const ListStatement& st) {
    pqxx::connection c(conn_);
    pqxx::nontransaction tx(c);
    std::string plan;
    for (const auto& row : tx.exec_params("EXPLAIN " + st.sql, pqxx::prepare::make_dynamic_params(st.params)))
      plan += row[0].as<std::string>() + "\n";
    return plan;
  }
  std::string conn_;
};

std::vector<int> Versions(const json& rows) {
  std::vector<int> v;
  for (const auto& r : rows) v.push_back(r["version"].get<int>());
  return v;
}

TEST_F(AdminListsTest, ADeletedAndReappliedNameListsTheJobsAndRunsOfEveryIncarnation) {
  Migrate();
  Apply({Parse("s"), Parse("other")});
  const int64_t first = Id("default/s"), other = Id("default/other");
  std::vector<int64_t> jobs;
  for (int m : {1, 2, 3}) jobs.push_back(Launch(first, "default/s", 1, m));
  Launch(other, "default/other", 1, 4);
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kDelete, Actor{"test"}).ok());
  // Deleted and not applied again: the name still lists its history.
  auto gone = QueryJobs(conn_, std::nullopt, "default/s", 100);
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  EXPECT_EQ(gone->size(), 3u);

  Apply({Parse("s", 1)});
  const int64_t second = Id("default/s");
  ASSERT_NE(first, second);
  EXPECT_EQ(Version("default/s"), 2);  // versions go on counting (schema/013)
  for (int m : {5, 6}) jobs.push_back(Launch(second, "default/s", 2, m));
  Launch(other, "default/other", 1, 7);

  auto listed = QueryJobs(conn_, std::nullopt, "default/s", 100);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 5u) << listed->dump();
  EXPECT_EQ(Versions(*listed), (std::vector<int>{2, 2, 1, 1, 1}));
  for (size_t i = 0; i < listed->size(); ++i) {
    EXPECT_EQ((*listed)[i]["id"].get<int64_t>(), jobs[jobs.size() - 1 - i]);  // newest first
    EXPECT_EQ((*listed)[i]["schedule"], "default/s");
    EXPECT_FALSE((*listed)[i]["run_id"].is_null());
  }
  auto runs = QueryRuns(conn_, "default/s", 100);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->size(), 5u) << runs->dump();
  for (size_t i = 0; i < runs->size(); ++i) {
    EXPECT_EQ((*runs)[i]["job_id"].get<int64_t>(), jobs[jobs.size() - 1 - i]);  // newest first
  }
  // The limit takes the newest across incarnations.
  auto three = QueryRuns(conn_, "default/s", 3);
  ASSERT_TRUE(three.ok());
  ASSERT_EQ(three->size(), 3u);
  EXPECT_EQ((*three)[2]["job_id"].get<int64_t>(), jobs[2]);
  auto two = QueryJobs(conn_, std::nullopt, "default/s", 2);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(Versions(*two), (std::vector<int>{2, 2}));
  // A state filter with the name.
  auto launched = QueryJobs(conn_, std::string("launched"), "default/s", 100);
  ASSERT_TRUE(launched.ok());
  EXPECT_EQ(launched->size(), 5u);
  auto pending = QueryJobs(conn_, std::string("pending_trigger"), "default/s", 100);
  ASSERT_TRUE(pending.ok());
  EXPECT_EQ(pending->size(), 0u);

  // A third incarnation: the deletes recorded both earlier ids; the version still counts.
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/s", ScheduleAction::kDelete, Actor{"test"}).ok());
  Apply({Parse("s", 2)});
  EXPECT_EQ(Version("default/s"), 3);
  EXPECT_EQ(One("SELECT ids::text FROM deleted_schedule_versions WHERE name = 'default/s'"),
            "{" + std::to_string(first) + "," + std::to_string(second) + "}");
  auto again = QueryRuns(conn_, "default/s", 100);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->size(), 5u);

  // Every run, newest first (by run id: UUIDv7, the time of the launch).
  auto all = QueryRuns(conn_, std::nullopt, 100);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 7u);
  for (size_t i = 1; i < all->size(); ++i) {
    EXPECT_GT((*all)[i - 1]["launched_at"].get<std::string>(), (*all)[i]["launched_at"].get<std::string>());
  }
  auto newest = QueryRuns(conn_, std::nullopt, 1);
  ASSERT_TRUE(newest.ok());
  ASSERT_EQ(newest->size(), 1u);
  EXPECT_EQ((*newest)[0]["schedule"], "default/other");

  // A name that never was: not found, not an empty list.
  for (const std::string name : {"default/nope", "s"}) {
    auto j = QueryJobs(conn_, std::nullopt, name, 100);
    ASSERT_FALSE(j.ok());
    EXPECT_EQ(j.status().code(), StatusCode::kNotFound);
    EXPECT_EQ(j.status().message(), "no schedule named " + name);
    auto r = QueryRuns(conn_, name, 100);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  }
  // A known name with no jobs: an empty list.
  Apply({Parse("quiet")});
  auto quiet = QueryJobs(conn_, std::nullopt, "default/quiet", 100);
  ASSERT_TRUE(quiet.ok());
  EXPECT_TRUE(quiet->empty());
}

// Names deleted, or deleted and applied again, before schema/013: the migration records the ids
// their jobs name that no schedule has any more.
TEST_F(AdminListsTest, TheMigrationRecordsTheIdsOfNamesDeletedBeforeIt) {
  namespace fs = std::filesystem;
  const fs::path before = fs::temp_directory_path() / ("trigd_admin_lists_before_013_" + std::to_string(::getpid()));
  fs::remove_all(before);
  fs::create_directories(before);
  for (const auto& e : fs::directory_iterator(TRIGD_SOURCE_DIR "/schema")) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".sql" && name < "013") fs::copy_file(e.path(), before / name);
  }
  Migrate(before.string());
  fs::remove_all(before);
  // (ApplySchedules needs schema/013: the row as it would have written it.)
  Exec("INSERT INTO schedules (name, version, doc_hash, document) VALUES ('default/a', 1, 'h', '{}')");
  const int64_t a = Id("default/a");
  // default/a had an earlier incarnation (id 9001, up to version 4); default/gone is deleted.
  const int64_t old_a = Launch(9001, "default/a", 4, 1);
  Launch(9001, "default/a", 3, 2);
  const int64_t new_a = Launch(a, "default/a", 1, 3);
  Launch(9002, "default/gone", 2, 4);
  Launch(9003, "default/gone", 1, 5);
  Migrate();
  EXPECT_EQ(One("SELECT version || ' ' || ids::text FROM deleted_schedule_versions WHERE name = 'default/a'"),
            "4 {9001}");
  EXPECT_EQ(One("SELECT version || ' ' || ids::text FROM deleted_schedule_versions WHERE name = 'default/gone'"),
            "2 {9002,9003}");
  auto jobs = QueryJobs(conn_, std::nullopt, "default/a", 100);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ((*jobs)[0]["id"].get<int64_t>(), new_a);
  EXPECT_EQ((*jobs)[2]["id"].get<int64_t>(), old_a);
  auto gone = QueryRuns(conn_, "default/gone", 100);
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->size(), 2u);
  // Deleted now (at version 1, below the 4 its first incarnation reached) and applied again:
  // the version goes on from the greatest, and the ids add up.
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/a", ScheduleAction::kDelete, Actor{"test"}).ok());
  EXPECT_EQ(One("SELECT version || ' ' || ids::text FROM deleted_schedule_versions WHERE name = 'default/a'"),
            "4 {9001," + std::to_string(a) + "}");
  Apply({Parse("a")});
  EXPECT_EQ(Version("default/a"), 5);
}

// On a history of 120,000 jobs and runs, each list's plan is an index scan with its LIMIT: no
// sequential scan of jobs or runs, and the index that gives the order.
TEST_F(AdminListsTest, ListsReadThroughIndexesOnALongHistory) {
  Migrate();
  std::vector<Schedule> schedules;
  for (int i = 0; i < 300; ++i) schedules.push_back(Parse("p" + std::to_string(i)));
  Apply(schedules);
  ASSERT_TRUE(ChangeSchedule(conn_, "t.", "default/p7", ScheduleAction::kDelete, Actor{"test"}).ok());
  Apply({Parse("p7", 1)});
  // Ids lo .. lo+299, default/p7's first one deleted, its second lo+300: the history has jobs
  // and runs of both.
  const std::string
      lo = One("SELECT min(id) FROM schedules"),
      ids =
          One("SELECT array(SELECT id FROM schedules WHERE name = 'default/p7' UNION "
              "SELECT unnest(ids) FROM deleted_schedule_versions WHERE name = 'default/p7' ORDER BY 1)::text");
  Exec(
      "INSERT INTO jobs (schedule_id, schedule_name, schedule_version, state, trigger_state, opened_at, finished_at, "
      "discard_reason) SELECT s.id, s.name, 1, CASE WHEN g % 10 = 0 THEN 'discarded' ELSE 'launched' END, '{}', t, t, "
      "CASE WHEN g % 10 = 0 THEN 'schedule updated' END FROM generate_series(1, 120000) g "
      "CROSS JOIN LATERAL (SELECT timestamptz '2026-01-01 00:00:00+00' + interval '1 second' * g AS t, " +
      lo + " + g % 301 AS id, 'default/p' || CASE WHEN g % 301 = 300 THEN 7 ELSE g % 301 END AS name) s");
  Exec(
      "INSERT INTO runs (run_id, job_id, schedule_id, schedule_name, program, target, state, heartbeat_timeout_ms, "
      "launched_at, last_seen_at, request) SELECT test_run_id(opened_at), id, schedule_id, schedule_name, 'p', "
      "'default', 'succeeded', 60000, opened_at, opened_at, '{}' FROM jobs WHERE state = 'launched'");
  ASSERT_EQ(ids, "{" + std::to_string(std::stoll(lo) + 7) + "," + std::to_string(std::stoll(lo) + 300) + "}");
  // And the pending jobs of now: one collecting events per schedule, two waiting.
  Exec(
      "INSERT INTO jobs (schedule_id, schedule_name, schedule_version, state, trigger_state, opened_at, next_check_at) "
      "SELECT id, name, version, v.state, '{}', now(), CASE WHEN v.state = 'pending_constraint' THEN now() END "
      "FROM schedules CROSS JOIN (VALUES ('pending_trigger'), ('pending_constraint'), ('pending_constraint')) "
      "v(state)");
  Exec("ANALYZE");
  // Each of `any_of`'s groups names indexes one of which the plan uses.
  auto uses = [&](const ListStatement& st, const std::vector<std::vector<std::string>>& any_of,
                  const std::vector<std::string>& not_used = {}) {
    const std::string plan = Explain(st);
    EXPECT_EQ(plan.find("Seq Scan on jobs"), std::string::npos) << st.sql << "\n" << plan;
    EXPECT_EQ(plan.find("Seq Scan on runs"), std::string::npos) << st.sql << "\n" << plan;
    for (const auto& group : any_of) {
      EXPECT_TRUE(std::any_of(group.begin(), group.end(),
                              [&](const std::string& i) { return plan.find(i) != std::string::npos; }))
          << group[0] << "\n"
          << st.sql << "\n"
          << plan;
    }
    for (const auto& index : not_used) EXPECT_EQ(plan.find(index), std::string::npos) << st.sql << "\n" << plan;
  };
  uses(RunsListStatement(std::nullopt, 100), {{"Index Scan Backward using runs_pkey"}});
  uses(RunsListStatement(ids, 100), {{"Index Scan Backward using runs_by_schedule_time"}});
  uses(JobsListStatement(std::nullopt, std::nullopt, 100),
       {{"Index Scan Backward using jobs_pkey"}, {"runs_job_id_key"}});
  uses(JobsListStatement(std::nullopt, ids, 100),
       {{"Index Scan Backward using jobs_by_schedule"}, {"runs_job_id_key"}});
  uses(JobsListStatement(std::string("launched"), ids, 100), {{"jobs_by_schedule"}});
  // A pending state: its partial indexes, not every job of the schedule.
  uses(JobsListStatement(std::string("pending_trigger"), ids, 100), {{"jobs_one_open", "jobs_by_state"}},
       {"jobs_by_schedule"});
  uses(JobsListStatement(std::string("pending_constraint"), ids, 100), {{"jobs_waiting_by_schedule", "jobs_by_state"}},
       {"jobs_by_schedule"});
  // Newest first through the partial index in id order (schema/021): no sort, no primary key
  // read backwards past every newer job.
  uses(JobsListStatement(std::string("pending_constraint"), std::nullopt, 100),
       {{"Index Scan Backward using jobs_by_state"}}, {"jobs_pkey"});
  uses(SchedulesListStatement(std::nullopt),
       {{"jobs_one_open", "jobs_by_state"}, {"jobs_waiting_by_schedule", "jobs_by_state"}},
       {"jobs_by_schedule", " on runs"});  // active runs: the run counters (docs/adr/0095)
  uses(SchedulesListStatement(10), {{"Limit"}}, {"jobs_by_schedule"});
  // A schedule delete's kill of its runs waiting for a retry (admin.cc): not every run of the
  // schedule's history (docs/adr/0095).
  uses({"SELECT run_id FROM runs WHERE schedule_id = $1 AND state = 'retry_wait'", {lo}}, {{"runs_retry"}});
  // And the lists read what they should from it.
  auto runs = QueryRuns(conn_, "default/p7", 1000);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(std::to_string(runs->size()), One("SELECT count(*) FROM runs WHERE schedule_name = 'default/p7'"));
  EXPECT_EQ(One("SELECT count(DISTINCT schedule_id) FROM runs WHERE schedule_name = 'default/p7'"), "2");
  auto jobs = QueryJobs(conn_, std::nullopt, "default/p7", 1000);
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(std::to_string(jobs->size()), One("SELECT count(*) FROM jobs WHERE schedule_name = 'default/p7'"));
  auto open = QuerySchedules(conn_, 1);
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->size(), 1u);
  EXPECT_EQ((*open)[0]["open_jobs"], 3);
}

// Each index of runs costs every launch about as much as the run row itself: runs has those a
// query needs and no other (docs/adr/0095 names the query of each; runs_by_lineage: the
// lineage lists, docs/adr/0118).
TEST_F(AdminListsTest, RunsHasOnlyTheIndexesAQueryNeeds) {
  Migrate();
  EXPECT_EQ(
      One("SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE tablename = 'runs'"),
      "runs_active_by_group,runs_by_lineage,runs_by_schedule_time,runs_job_id_key,runs_pkey,runs_queued,runs_retry,"
      "runs_running");
}

// The active runs `schedules list` shows are the schedule's run counter.
TEST_F(AdminListsTest, SchedulesListShowsTheRunCounter) {
  Migrate();
  Apply({Parse("a"), Parse("b")});
  // Apply made both counters (docs/adr/0174); a has two runs active.
  Exec(
      "UPDATE schedule_runtime SET active_runs = 2 FROM schedules s WHERE s.id = schedule_id AND s.name = 'default/a'");
  auto all = QuerySchedules(conn_);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0]["active_runs"], 2);
  EXPECT_EQ((*all)[1]["active_runs"], 0);
}

TEST_F(AdminListsTest, SchedulesListIsByNameAndTakesALimit) {
  Migrate();
  Apply({Parse("c"), Parse("a"), Parse("e"), Parse("b"), Parse("d")});
  auto all = QuerySchedules(conn_);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 5u);
  auto three = QuerySchedules(conn_, 3);
  ASSERT_TRUE(three.ok());
  ASSERT_EQ(three->size(), 3u);
  EXPECT_EQ((*three)[0]["name"], "default/a");
  EXPECT_EQ((*three)[1]["name"], "default/b");
  EXPECT_EQ((*three)[2]["name"], "default/c");
  EXPECT_EQ((*three)[0]["open_jobs"], 0);
}

}  // namespace
}  // namespace trigd
