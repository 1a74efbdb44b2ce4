// The launch path shared by the launch and history benchmarks: ready jobs made through the
// append path and kept as a seed, the engine's checker and relay loops driven to completion,
// and the bare claim SQL that is their baseline.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "app/cli.h"
#include "bench_util.h"
#include "core/envelope.h"
#include "core/schedule_index.h"
#include "log/kafka.h"
#include "store/pg_store.h"

namespace bench {

// Applies `schedules` schedules (one partition trigger each, no constraints: a ready job
// launches at once), opens `jobs` ready jobs through PgStore::ApplyBatch (the real rows, with
// their trigger state and triggering event), and keeps them in jobs_seed (out of jobs), which
// AddReadyJobs copies for each round.
inline void MakeReadyJobs(Run& run, int64_t schedules, int64_t jobs) {
  std::vector<nlohmann::json> docs;
  for (int64_t k = 0; k < schedules; ++k) {
    docs.push_back({{"namespace", "bench"},
                    {"name", "s" + std::to_string(k)},
                    {"program", {{"name", "p" + std::to_string(k)}}},
                    {"trigger", {{"partition", {{"dataset", "d" + std::to_string(k)}}}}}});
  }
  ApplyScheduleDocs(run, docs);
  auto store = trigd::PgStore::Connect(run.pg, run.prefix);
  if (!store.ok()) run.Fail(store.status().ToString());
  // The jobs must stay ready for the launch path under test (no fast path launch here).
  (*store)->SetFastPath(false);
  trigd::ScheduleIndex index;
  auto changes = (*store)->LoadScheduleChanges(0);
  if (!changes.ok()) run.Fail(changes.status().ToString());
  for (const auto& k : changes->schedules) index.Put(k.id, k.event_keys);
  const int64_t batch = 5000;
  for (int64_t first = 0; first < jobs; first += batch) {
    trigd::IngestBatch in;
    in.group = run.group;
    int64_t end = std::min(jobs, first + batch);
    in.positions.push_back({trigd::TopicNames(run.prefix).events_data, 0, first, end});
    for (int64_t i = first; i < end; ++i) {
      auto e = trigd::ParseEnvelope(PartitionEvent("seed-" + std::to_string(i), "d" + std::to_string(i % schedules),
                                                   "dt=2026-11-22/h=" + std::to_string(i)));
      if (!e.ok()) run.Fail(e.status().ToString());
      auto ids = index.Lookup(e->EventKey());
      in.schedule_ids.emplace_back(ids.begin(), ids.end());
      in.events.push_back(std::move(*e));
    }
    auto r = (*store)->ApplyBatch(in);
    if (!r.ok() || r->jobs_ready != end - first) run.Fail("could not open the ready jobs");
  }
  pqxx::connection c(run.pg);
  pqxx::work tx(c);
  tx.exec("CREATE TABLE jobs_seed AS SELECT * FROM jobs");
  tx.exec("DELETE FROM jobs");
  tx.exec("TRUNCATE seen_events, consumer_offsets");
  tx.commit();
}

// Adds a fresh copy of the seed's ready jobs (new ids, due now) for a round and returns the
// first new id; empties the outbox and the run counters, vacuums and checkpoints, so every round
// starts alike. Earlier rounds' jobs and runs stay (finished rows are history, which the hot
// path does not read), so a round never waits for the deletion and vacuum of millions of rows.
inline int64_t AddReadyJobs(Run& run) {
  pqxx::connection c(run.pg);
  int64_t first = 0;
  {
    pqxx::work tx(c);
    const std::string columns =
        tx.exec1(
              "SELECT string_agg(column_name, ', ' ORDER BY ordinal_position) FROM information_schema.columns "
              "WHERE table_schema = 'public' AND table_name = 'jobs' AND column_name <> 'id'")[0]
            .as<std::string>();
    tx.exec("TRUNCATE outbox, group_runtime");
    // The run counters back to none active, as trigd keeps them from apply on (docs/adr/0174).
    tx.exec("UPDATE schedule_runtime SET active_runs = 0, last_launch_at = NULL");
    first = tx.exec1("WITH added AS (INSERT INTO jobs (" + columns + ") SELECT " + columns +
                     " FROM jobs_seed ORDER BY id RETURNING id) SELECT min(id) FROM added")[0]
                .as<int64_t>();
    tx.exec_params("UPDATE jobs SET next_check_at = now() WHERE id >= $1", first);
    tx.commit();
  }
  pqxx::nontransaction tx(c);
  tx.exec("VACUUM ANALYZE jobs");
  tx.exec("VACUUM ANALYZE runs");
  tx.exec("VACUUM ANALYZE outbox");
  tx.exec("VACUUM ANALYZE schedule_runtime");
  tx.exec("CHECKPOINT");
  return first;
}

struct LaunchFigures {
  double seconds = 0;
  int64_t launched = 0;
  int checkers = 1;
  double check_seconds = 0;     // inside CheckDueJobs (per checker: the checkers' sum / checkers)
  double claim_seconds = 0;     // inside ClaimOutbox
  double produce_seconds = 0;   // inside ProduceAndWait
  double complete_seconds = 0;  // inside CompleteOutbox
  // CPU seconds used meanwhile (what the work costs, whatever else the shared machine runs):
  // the PostgreSQL backends of the checker's and the relay's connections, and this process
  // (both loops, JSON, librdkafka's threads).
  double checker_server_cpu = 0;
  double relay_server_cpu = 0;
  double client_cpu = 0;
};

// The PostgreSQL backend process serving the connection named `application_name` in the run's
// database (0 if there is none). The benchmarks run on the same machine as PostgreSQL, so its
// CPU time can be read from /proc.
inline pid_t BackendPid(Run& run, const std::string& application_name) {
  pqxx::connection c(run.pg);
  pqxx::work tx(c);
  auto r = tx.exec_params(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
      "AND application_name = $1",
      application_name);
  return r.empty() ? 0 : static_cast<pid_t>(r[0][0].as<int>());
}

// The shape of trigd's launch path (engine/app/engine.cc), driven to completion for the engine
// and for the limit baseline alike: `checkers` checker threads, each calling check(i) until it
// returns 0 (nothing due; nullopt: retry after a serialization failure), and the relay loop on
// this thread: claim() up to 5000 launch requests, Producer::ProduceAndWait to the real broker
// with trigd's producer settings, complete(confirmed ids) -> how many were completed, until
// `expected` requests are confirmed. A checker wakes the relay after each commit, as in trigd.
// Fills the timings of `f` (seconds, check/claim/produce/complete seconds, launched).
template <class Check, class Claim, class Complete>
void DriveLaunch(Run& run, int64_t expected, int checkers, Check check, Claim claim, Complete complete,
                 LaunchFigures& f) {
  std::mutex mu;
  std::condition_variable cv;
  bool woken = false, checker_done = false;
  auto producer = trigd::Producer::Create(run.kafka);
  if (!producer.ok()) run.Fail(producer.status().ToString());
  f.checkers = checkers;
  std::string failure;
  int checkers_running = checkers;
  auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < checkers; ++i) {
    threads.emplace_back([&, i] {
      double inside = 0;
      while (true) {
        auto t = Clock::now();
        std::optional<int64_t> checked;
        try {
          checked = check(i);
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> l(mu);
          failure = e.what();
          break;
        }
        inside += SecondsSince(t);
        if (!checked) continue;
        {
          std::lock_guard<std::mutex> l(mu);
          woken = true;
        }
        cv.notify_one();
        if (*checked == 0) break;
      }
      std::lock_guard<std::mutex> l(mu);
      f.check_seconds += inside / checkers;
      checker_done = --checkers_running == 0;
      cv.notify_one();
    });
  }
  int64_t confirmed_jobs = 0;
  auto failed = [&] {
    std::lock_guard<std::mutex> l(mu);
    return !failure.empty();
  };
  while (confirmed_jobs < expected && !failed()) {
    auto t = Clock::now();
    std::vector<trigd::OutboxRow> rows = claim();
    f.claim_seconds += SecondsSince(t);
    if (rows.empty()) {
      std::unique_lock<std::mutex> l(mu);
      if (checker_done && !woken) break;
      cv.wait_for(l, std::chrono::milliseconds(50), [&] { return woken; });
      woken = false;
      continue;
    }
    std::vector<trigd::OutMessage> out;
    out.reserve(rows.size());
    for (auto& row : rows) out.push_back({std::move(row.topic), std::move(row.key), std::move(row.payload)});
    t = Clock::now();
    std::vector<bool> ok = (*producer)->ProduceAndWait(out, 10000);
    f.produce_seconds += SecondsSince(t);
    std::vector<int64_t> confirmed;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (ok[i]) confirmed.push_back(rows[i].id);
    }
    t = Clock::now();
    confirmed_jobs += complete(confirmed);
    f.complete_seconds += SecondsSince(t);
  }
  f.seconds = SecondsSince(start);
  for (std::thread& t : threads) t.join();
  if (!failure.empty()) run.Fail(failure);
  f.launched = confirmed_jobs;
  if (f.launched != expected) {
    run.Fail("expected " + std::to_string(expected) + " launches, got " + std::to_string(f.launched));
  }
}

// PostgreSQL backends by application name, and the CPU they and this process use.
struct CpuMeter {
  CpuMeter(Run& run, std::vector<std::string> checker_names, const std::string& relay_name) {
    for (const auto& n : checker_names) checkers.push_back(BackendPid(run, n));
    relay = BackendPid(run, relay_name);
    checker0 = CheckersCpu();
    relay0 = ProcessCpuSeconds(relay);
    client0 = ProcessCpuSeconds(getpid());
  }
  double CheckersCpu() const {
    double sum = 0;
    for (pid_t p : checkers) sum += ProcessCpuSeconds(p);
    return sum;
  }
  void Fill(LaunchFigures& f) const {
    f.checker_server_cpu = CheckersCpu() - checker0;
    f.relay_server_cpu = ProcessCpuSeconds(relay) - relay0;
    f.client_cpu = ProcessCpuSeconds(getpid()) - client0;
  }
  std::vector<pid_t> checkers;
  pid_t relay = 0;
  double checker0 = 0, relay0 = 0, client0 = 0;
};

// trigd's checker loops (as many as trigd runs: TRIGD_CHECKERS, default 2) and relay loop, each
// with its own PgStore: CheckDueJobs(limit) until nothing is due (each launch: run + outbox row
// in one transaction), and ClaimOutbox(5000) + ProduceAndWait + CompleteOutbox (DriveLaunch).
// `first_id`: the first job id of this round's ready jobs (AddReadyJobs).
inline LaunchFigures LaunchThroughEngine(Run& run, int64_t expected, size_t limit, int64_t first_id) {
  LaunchFigures f;
  const int checkers = trigd::LoadConfig().checkers;
  std::vector<std::unique_ptr<trigd::PgStore>> checker_stores;
  std::vector<std::string> names;
  for (int i = 0; i < checkers; ++i) {
    names.push_back("bench-checker-" + std::to_string(i));
    auto s = trigd::PgStore::Connect(run.pg + " application_name=" + names.back(), run.prefix);
    if (!s.ok()) run.Fail("cannot connect to PostgreSQL");
    (*s)->SetCheckerShard(i, checkers);
    checker_stores.push_back(std::move(*s));
  }
  auto relay_store = trigd::PgStore::Connect(run.pg + " application_name=bench-relay", run.prefix);
  if (!relay_store.ok()) run.Fail("cannot connect to PostgreSQL");
  CpuMeter cpu(run, names, "bench-relay");
  DriveLaunch(
      run, expected, checkers,
      [&](int i) -> std::optional<int64_t> {
        auto r = checker_stores[i]->CheckDueJobs(limit);
        if (!r.ok() && r.status().code() == trigd::StatusCode::kAborted) return std::nullopt;
        if (!r.ok()) throw std::runtime_error("CheckDueJobs: " + r.status().ToString());
        return static_cast<int64_t>(r->checked);
      },
      [&] {
        auto claim = (*relay_store)->ClaimOutbox(5000);
        if (!claim.ok()) run.Fail("ClaimOutbox: " + claim.status().ToString());
        return std::move(claim->messages);
      },
      [&](const std::vector<int64_t>& confirmed) {
        auto done = (*relay_store)->CompleteOutbox(confirmed);
        if (!done.ok()) run.Fail("CompleteOutbox: " + done.status().ToString());
        return static_cast<int64_t>(done->size());
      },
      f);
  cpu.Fill(f);
  pqxx::connection c(run.pg);
  pqxx::work tx(c);
  int64_t runs = tx.exec_params1("SELECT count(*) FROM runs WHERE job_id >= $1", first_id)[0].as<int64_t>();
  int64_t launched =
      tx.exec_params1("SELECT count(*) FROM jobs WHERE state = 'launched' AND id >= $1", first_id)[0].as<int64_t>();
  if (runs != expected || launched != expected) {
    run.Fail("after the engine: " + std::to_string(runs) + " runs, " + std::to_string(launched) + " jobs launched");
  }
  return f;
}

// The limit baseline's tables: runs and outbox as trigd's (same columns, types, storage), with
// only the indexes that a query of trigd needs on a run row (kLimitRunIndexes) and the outbox's
// primary key. Created once per run; like trigd's, earlier rounds' runs stay.
inline constexpr const char* kLimitRunIndexes =
    "run_id (primary key: the worker's reports, runs show), job_id (unique: one run per job; jobs "
    "show, retention), (schedule_id, launched_at) (runs list, max_runs_per), last_seen_at of "
    "launched runs (the sweep of queued runs)";
inline void CreateLimitTables(Run& run) {
  pqxx::connection c(run.pg);
  pqxx::work tx(c);
  tx.exec("CREATE TABLE limit_runs (LIKE runs INCLUDING DEFAULTS INCLUDING STORAGE)");
  tx.exec("ALTER TABLE limit_runs ADD PRIMARY KEY (run_id), ADD UNIQUE (job_id)");
  tx.exec("CREATE INDEX ON limit_runs (schedule_id, launched_at)");
  tx.exec("CREATE INDEX ON limit_runs (last_seen_at) WHERE state = 'launched'");
  tx.exec("CREATE TABLE limit_outbox (LIKE outbox INCLUDING DEFAULTS INCLUDING STORAGE INCLUDING IDENTITY)");
  tx.exec("CREATE SEQUENCE limit_outbox_id");
  tx.exec("ALTER TABLE limit_outbox ALTER COLUMN id SET DEFAULT nextval('limit_outbox_id'), ADD PRIMARY KEY (id)");
  tx.commit();
}

// The limit of a launch in raw SQL (DriveLaunch, the same threads, shards, batch size and
// producer as the engine): per checker transaction one statement that claims `limit` due jobs
// in the checker's order and shard, sets each job launched (finished_at, last decision, a
// history entry appended), inserts its run (its launch request and first history entry) into
// limit_runs and its launch request into limit_outbox; the relay claims up to 5000 requests
// (FOR UPDATE SKIP LOCKED), publishes them and deletes the confirmed ones (synchronous_commit
// off, as trigd's relay). What trigd does beyond this is its own cost: reading the schedules,
// share-locking them, the run counters, its decisions.
inline LaunchFigures LaunchLimit(Run& run, int64_t expected, size_t limit, int checkers, int64_t first_id) {
  LaunchFigures f;
  const std::string launch_topic = trigd::TopicNames(run.prefix).Launch("default");
  std::vector<std::unique_ptr<pqxx::connection>> conns;
  std::vector<std::string> names;
  for (int i = 0; i < checkers; ++i) {
    names.push_back("bench-limit-checker-" + std::to_string(i));
    conns.push_back(std::make_unique<pqxx::connection>(run.pg + " application_name=" + names.back()));
    conns.back()->prepare(
        "launch",
        "WITH due AS (SELECT id FROM jobs WHERE next_check_at <= now() AND schedule_id % $2 = $3 "
        "ORDER BY priority DESC, ready_at NULLS LAST, id LIMIT $1 FOR UPDATE SKIP LOCKED), "
        "job AS (UPDATE jobs j SET state = 'launched', next_check_at = NULL, finished_at = now(), "
        "last_decision = 'launched', history = trigd_append_history(j.history, jsonb_build_array(jsonb_build_object("
        "'at', now(), 'status', 'launched', 'run_id', 'r-' || j.id))) FROM due WHERE j.id = due.id "
        "RETURNING j.id, j.schedule_id, j.schedule_name, j.triggered_by::text AS triggered_by, "
        "coalesce(j.ready_at, j.opened_at) AS ready_at), "
        "request AS (SELECT job.*, 'r-' || to_hex((extract(epoch FROM now()) * 1e6)::bigint) || '-' || job.id AS "
        "run_id, "
        "'{\"run_id\":\"r-' || job.id || '\",\"job_id\":' || job.id || ',\"schedule\":\"' || job.schedule_name || "
        "'\",\"program\":\"p\",\"target\":\"default\",\"triggered_by\":' || job.triggered_by || '}' AS payload "
        "FROM job), "
        "new_runs AS (INSERT INTO limit_runs (run_id, job_id, schedule_id, schedule_name, program, target, state, "
        "heartbeat_timeout_ms, launched_at, last_seen_at, attempt_launched_at, request, history) "
        "SELECT run_id, id, schedule_id, schedule_name, 'p', 'default', 'launched', 60000, now(), now(), now(), "
        "payload, jsonb_build_array(jsonb_build_object('at', now(), 'status', 'launched', 'attempt', 1)) "
        "FROM request) "
        "INSERT INTO limit_outbox (topic, key, payload, job_id, ready_at, attempt, launched_at, heartbeat_timeout_ms) "
        "SELECT $4, schedule_name, payload, id, ready_at, 1, now(), 60000 FROM request");
  }
  pqxx::connection relay(run.pg + " application_name=bench-limit-relay");
  relay.prepare("claim",
                "SELECT id, topic, key, payload FROM limit_outbox ORDER BY id LIMIT 5000 FOR UPDATE SKIP LOCKED");
  std::unique_ptr<pqxx::work> claim_tx;
  CpuMeter cpu(run, names, "bench-limit-relay");
  DriveLaunch(
      run, expected, checkers,
      [&](int i) -> std::optional<int64_t> {
        try {
          pqxx::work tx(*conns[i]);
          auto r = tx.exec_prepared("launch", static_cast<int64_t>(limit), checkers, i, launch_topic);
          tx.commit();
          return static_cast<int64_t>(r.affected_rows());
        } catch (const pqxx::serialization_failure&) {
          return std::nullopt;
        }
      },
      [&] {
        claim_tx = std::make_unique<pqxx::work>(relay);
        std::vector<trigd::OutboxRow> rows;
        for (const auto& r : claim_tx->exec_prepared("claim")) {
          rows.push_back({r[0].as<int64_t>(), r[1].as<std::string>(), r[2].as<std::string>(), r[3].as<std::string>()});
        }
        if (rows.empty()) claim_tx.reset();
        return rows;
      },
      [&](const std::vector<int64_t>& confirmed) -> int64_t {
        if (!claim_tx) return 0;
        claim_tx->exec("SET LOCAL synchronous_commit = off");
        std::string ids = "{";
        for (int64_t id : confirmed) ids += (ids.size() > 1 ? "," : "") + std::to_string(id);
        auto r = claim_tx->exec_params("DELETE FROM limit_outbox WHERE id = ANY($1::bigint[])", ids + "}");
        claim_tx->commit();
        claim_tx.reset();
        return static_cast<int64_t>(r.affected_rows());
      },
      f);
  cpu.Fill(f);
  pqxx::connection c(run.pg);
  pqxx::work tx(c);
  int64_t runs = tx.exec_params1("SELECT count(*) FROM limit_runs WHERE job_id >= $1", first_id)[0].as<int64_t>();
  if (runs != expected) run.Fail("after the limit baseline: " + std::to_string(runs) + " runs");
  return f;
}

// The baseline: the bare claim statement in a loop, one transaction each, `limit` rows at a
// time in the checker's order and by the checker's condition, until nothing is due (a claimed
// job leaves the due set as in the checker: next_check_at cleared). Returns seconds; if
// server_cpu is given, the CPU seconds its PostgreSQL backend used meanwhile.
inline double ClaimLoop(Run& run, int64_t expected, size_t limit, double* server_cpu = nullptr) {
  pqxx::connection c(run.pg);
  const pid_t backend = static_cast<pid_t>(c.backendpid());
  const double cpu0 = ProcessCpuSeconds(backend);
  c.prepare("claim",
            "UPDATE jobs SET state = 'claimed', next_check_at = NULL WHERE id IN (SELECT id FROM jobs "
            "WHERE next_check_at <= now() "
            "ORDER BY priority DESC, ready_at NULLS LAST, id LIMIT $1 FOR UPDATE SKIP LOCKED)");
  int64_t claimed = 0;
  auto start = Clock::now();
  while (true) {
    pqxx::work tx(c);
    auto r = tx.exec_prepared("claim", static_cast<int64_t>(limit));
    tx.commit();
    if (r.affected_rows() == 0) break;
    claimed += r.affected_rows();
  }
  double s = SecondsSince(start);
  if (server_cpu) *server_cpu = ProcessCpuSeconds(backend) - cpu0;
  if (claimed != expected)
    run.Fail("claim loop claimed " + std::to_string(claimed) + ", expected " + std::to_string(expected));
  // Claimed jobs that nothing will launch: out of the way of later rounds.
  pqxx::work tx(c);
  tx.exec("DELETE FROM jobs WHERE state = 'claimed'");
  tx.commit();
  return s;
}

}  // namespace bench
