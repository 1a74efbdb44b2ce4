// History: launch throughput with 10M historic runs (and their jobs) in the tables vs with an empty history.
//
// The launch path of the launch benchmark (trigd's checker and relay loops: CheckDueJobs, run +
// launch request, ClaimOutbox, Producer::ProduceAndWait to Kafka, CompleteOutbox) over --jobs
// ready jobs, in two private databases: one with empty jobs and runs tables, one holding
// --history finished jobs and succeeded runs spread over the past 180 days (the seed expects
// 180M run records over six months: a 10M history is about ten days of it). Rounds alternate
// between the two (which one goes first alternates too), so a change in the machine's load
// falls on both; figures are medians over --rounds; the ratio is history / empty.
//
// How history is kept: finished jobs and runs stay in the same tables, and the hot path never
// scans them. Every query the ingest, checker and relay loops run either goes through an index
// that is partial on the active states (jobs_claim, jobs_due: next_check_at set, which only
// pending jobs have; jobs_one_open, jobs_by_state, jobs_waiting_*; runs_active_*,
// runs_heartbeat, runs_retry: launched / running / retry_wait), so finished rows are not in it
// at all, or looks rows up by key (primary keys, runs.job_id, jobs_by_schedule), where history
// only adds B-tree depth (log n). Inserts enter the full indexes at their right edge: job ids
// grow, run ids are UUIDv7 (time first), launched_at grows; so the pages a launch touches do
// not depend on how many finished rows there are. The history is generated with the full
// indexes dropped and rebuilt (as a restore would), then vacuumed.
//
// Usage: trigd-bench-history [--history=10000000] [--jobs=20000] [--schedules=1000] [--limit=1000] [--rounds=5]
#include <cstdio>

#include "app/huge_pages.h"
#include "launch_util.h"

namespace {

using bench::Clock;

struct Index {
  std::string table, name, definition;
  bool constraint = false;  // definition is a constraint's (ALTER TABLE ADD CONSTRAINT)
};

// Drops every non-partial index of jobs and runs (constraints first), returning what it took
// to recreate them exactly.
std::vector<Index> DropFullIndexes(pqxx::work& tx) {
  std::vector<Index> dropped;
  for (const std::string table : {"jobs", "runs"}) {
    for (const auto& r : tx.exec_params("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
                                        "WHERE conrelid = $1::regclass AND contype IN ('p', 'u')",
                                        table)) {
      dropped.push_back({table, r[0].as<std::string>(), r[1].as<std::string>(), true});
      tx.exec("ALTER TABLE " + table + " DROP CONSTRAINT " + r[0].as<std::string>());
    }
    for (const auto& r : tx.exec_params("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = $1 "
                                        "AND indexdef NOT LIKE '% WHERE %'",
                                        table)) {
      dropped.push_back({table, r[0].as<std::string>(), r[1].as<std::string>(), false});
      tx.exec("DROP INDEX " + r[0].as<std::string>());
    }
  }
  return dropped;
}

void Recreate(pqxx::work& tx, const std::vector<Index>& dropped) {
  for (const Index& i : dropped) {
    if (i.constraint) {
      tx.exec("ALTER TABLE " + i.table + " ADD CONSTRAINT " + i.name + " " + i.definition);
    } else {
      tx.exec(i.definition);
    }
  }
}

// `count` finished jobs (negative ids, below every live job's) and their succeeded runs,
// launched over the past 180 days, oldest first. Their JSON columns are left empty: the hot
// path never reads a historic row, so what history costs it is the size of the indexes (the
// same whatever the rows hold), and lean rows make 10M of them quicker to generate.
void GenerateHistory(bench::Run& run, int64_t count) {
  pqxx::connection c(run.pg);
  {
    pqxx::work tx(c);
    tx.exec("SET LOCAL maintenance_work_mem = '512MB'");
    std::vector<Index> dropped = DropFullIndexes(tx);
    const int64_t chunk = 1000000;
    for (int64_t first = 1; first <= count; first += chunk) {
      int64_t last = std::min(count, first + chunk - 1);
      // g runs from 1 (oldest) to count (newest); job id = g - count - 1 < 0.
      // One pass: the jobs, then their runs from what the insert returned.
      tx.exec_params(
          "WITH j AS (INSERT INTO jobs (id, schedule_id, schedule_name, schedule_version, state, priority, "
          "trigger_state, triggered_by, history, opened_at, first_event_at, ready_at, finished_at) "
          "SELECT g - $3 - 1, s.ids[w.k], s.names[w.k], 1, 'launched', 0, '{}', '[]', '[]', "
          "w.at, w.at, w.at, w.at + interval '1 second' "
          "FROM generate_series($1::bigint, $2::bigint) g "
          "CROSS JOIN (SELECT array_agg(id ORDER BY id) AS ids, array_agg(name ORDER BY id) AS names FROM schedules) s "
          "CROSS JOIN LATERAL (SELECT now() - interval '180 days' * (1 - g::float8 / $3) AS at, "
          "1 + (g % cardinality(s.ids))::int AS k) w "
          "RETURNING id, schedule_id, schedule_name, opened_at) "
          "INSERT INTO runs (run_id, job_id, schedule_id, schedule_name, program, target, state, attempt, "
          "max_attempts, "
          "heartbeat_timeout_ms, launched_at, last_seen_at, attempt_started_at, finished_at, reason, request, history) "
          "SELECT gen_random_uuid()::text, j.id, j.schedule_id, j.schedule_name, 'p' || (j.schedule_id % 1000), "
          "'default', 'succeeded', 1, 1, 300000, j.opened_at, j.opened_at + interval '1 minute', j.opened_at, "
          "j.opened_at + interval '1 minute', 'succeeded', '{}', '[]' FROM j",
          first, last, count);
      std::printf("  history: %lld of %lld\n", static_cast<long long>(last), static_cast<long long>(count));
      std::fflush(stdout);
    }
    Recreate(tx, dropped);
    int64_t made = tx.exec1("SELECT count(*) FROM runs WHERE job_id < 0")[0].as<int64_t>();
    if (made != count) run.Fail(bench::Cat("generated ", made, " historic runs, expected ", count));
    tx.commit();
  }
  pqxx::nontransaction tx(c);
  tx.exec("VACUUM ANALYZE jobs");
  tx.exec("VACUUM ANALYZE runs");
  tx.exec("CHECKPOINT");
}

// One round of the launch path in the database `pg`: launches per second.
double Round(bench::Run& run, const std::string& pg, const char* label, int round, int64_t jobs, size_t limit) {
  run.pg = pg;
  const int64_t first = bench::AddReadyJobs(run);
  bench::LaunchFigures f = bench::LaunchThroughEngine(run, jobs, limit, first);
  double rate = static_cast<double>(jobs) / f.seconds;
  std::printf("%-16s %6d %16.0f   %.2f / %.2f / %.2f / %.2f of %.2f\n", label, round + 1, rate, f.check_seconds,
              f.claim_seconds, f.produce_seconds, f.complete_seconds, f.seconds);
  std::fflush(stdout);
  return rate;
}

std::string Size(pqxx::connection& c, const std::string& what) {
  pqxx::nontransaction tx(c);
  return tx.exec1("SELECT pg_size_pretty(" + what + ")")[0].as<std::string>();
}

}  // namespace

int main(int argc, char** argv) {
  trigd::UseHugePagesForScheduleIndex();  // as trigd runs
  bench::Flags flags(
      argc, argv,
      "trigd-bench-history [--history=10000000] [--jobs=20000] [--schedules=1000] [--limit=1000] [--rounds=5]");
  const int64_t history = flags.Int("history", 10000000);
  const int64_t jobs = flags.Int("jobs", 20000);
  const int64_t schedules = flags.Int("schedules", 1000);
  const int64_t limit = flags.Int("limit", 1000);
  const int rounds = static_cast<int>(flags.Int("rounds", 5));
  flags.Check();
  bench::Run& run = bench::Run::Start("history");
  const double load_before = bench::LoadAverage();
  std::printf(
      "history benchmark: launching %lld ready jobs with an empty history and with %lld historic runs "
      "(and jobs), %d rounds each, alternating (load %.1f)\n",
      static_cast<long long>(jobs), static_cast<long long>(history), rounds, load_before);
  auto t = Clock::now();
  const std::string history_pg = run.pg;
  const std::string empty_pg = run.AddDatabase("empty");
  for (const std::string& pg : {empty_pg, history_pg}) {
    run.pg = pg;
    bench::MakeReadyJobs(run, schedules, jobs);
  }
  std::printf("setup (schedules + ready jobs through the append path, in both databases): %.1f s\n",
              bench::SecondsSince(t));
  t = Clock::now();
  run.pg = history_pg;
  GenerateHistory(run, history);
  const double generate_s = bench::SecondsSince(t);
  {
    pqxx::connection c(history_pg);
    std::printf("generated %lld historic jobs and runs in %.0f s: runs %s (indexes %s), jobs %s (indexes %s)\n",
                static_cast<long long>(history), generate_s, Size(c, "pg_table_size('runs')").c_str(),
                Size(c, "pg_indexes_size('runs')").c_str(), Size(c, "pg_table_size('jobs')").c_str(),
                Size(c, "pg_indexes_size('jobs')").c_str());
  }
  std::printf("\n%-16s %6s %16s   %s\n", "history", "round", "launches/s",
              "time in: check / relay claim / produce+ack / complete (s)");
  const std::string with_label = bench::Cat(std::to_string(history), " runs");
  std::vector<double> empty, with;
  for (int round = 0; round < rounds; ++round) {
    if (round % 2 == 0) {
      empty.push_back(Round(run, empty_pg, "empty", round, jobs, static_cast<size_t>(limit)));
      with.push_back(Round(run, history_pg, with_label.c_str(), round, jobs, static_cast<size_t>(limit)));
    } else {
      with.push_back(Round(run, history_pg, with_label.c_str(), round, jobs, static_cast<size_t>(limit)));
      empty.push_back(Round(run, empty_pg, "empty", round, jobs, static_cast<size_t>(limit)));
    }
  }
  run.pg = history_pg;
  double e = bench::Median(empty), w = bench::Median(with), ratio = w / e;
  std::printf("%-16s %6s %16.0f\n%-16s %6s %16.0f\n", "empty", "median", e, "with history", "median", w);
  std::printf("\nratio with history / empty: %.2f; target >= 0.9 (%s); load average %.1f -> %.1f\n", ratio,
              ratio >= 0.9 ? "met" : "NOT met", load_before, bench::LoadAverage());
  std::printf(
      "history is kept in the same tables; the hot path reaches only active rows through partial indexes "
      "and looks the rest up by key (see the comment at the top of tools/benchmarks/history.cc)\n");
  run.Finish();
  bench::ordered_json j;
  j["scenario"] = "history";
  j["historic_runs"] = history;
  j["launches_per_second_with_history"] = bench::Round(w, 0);
  j["target_ratio"] = 0.9;
  j["history_kept"] = "same tables; hot path uses indexes partial on active states, key lookups otherwise";
  j["baseline"] = "same launch path, empty history";
  j["baseline_launches_per_second"] = bench::Round(e, 0);
  j["ratio"] = bench::Round(ratio, 2);
  j["jobs"] = jobs;
  j["rounds"] = rounds;
  j["load_average"] = bench::Round(bench::LoadAverage(), 1);
  bench::PrintJson(j);
  return 0;
}
