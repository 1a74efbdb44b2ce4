// The launch path shared by the launch and history benchmarks: ready jobs made through the
// append path and kept as a seed, the engine's checker and relay loops driven to completion,
// and the bare claim SQL that is their baseline.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
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
    tx.exec("TRUNCATE outbox, schedule_runtime, group_runtime");
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

// trigd's checker loops (as many as trigd runs: TRIGD_CHECKERS, default 2) and relay loop
// (engine/app/engine.cc) on their own threads, each with its own PgStore: CheckDueJobs(limit)
// until nothing is due (each launch: run + outbox row in one
// transaction), and ClaimOutbox(5000) + Producer::ProduceAndWait + CompleteOutbox until
// `expected` launch requests are confirmed by Kafka and deleted from the outbox. The checker
// wakes the relay after each commit, as in trigd.
// `first_id`: the first job id of this round's ready jobs (AddReadyJobs).
inline LaunchFigures LaunchThroughEngine(Run& run, int64_t expected, size_t limit, int64_t first_id) {
  LaunchFigures f;
  std::mutex mu;
  std::condition_variable cv;
  bool woken = false, checker_done = false;
  auto producer = trigd::Producer::Create(run.kafka);
  if (!producer.ok()) run.Fail(producer.status().ToString());
  f.checkers = trigd::LoadConfig().checkers;
  std::vector<std::unique_ptr<trigd::PgStore>> checker_stores;
  std::vector<pid_t> checker_backends;
  for (int i = 0; i < f.checkers; ++i) {
    const std::string name = "bench-checker-" + std::to_string(i);
    auto s = trigd::PgStore::Connect(run.pg + " application_name=" + name, run.prefix);
    if (!s.ok()) run.Fail("cannot connect to PostgreSQL");
    (*s)->SetCheckerShard(i, f.checkers);
    checker_stores.push_back(std::move(*s));
    checker_backends.push_back(BackendPid(run, name));
  }
  auto relay_store = trigd::PgStore::Connect(run.pg + " application_name=bench-relay", run.prefix);
  if (!relay_store.ok()) run.Fail("cannot connect to PostgreSQL");
  const pid_t relay_backend = BackendPid(run, "bench-relay");
  auto checkers_cpu = [&] {
    double sum = 0;
    for (pid_t p : checker_backends) sum += ProcessCpuSeconds(p);
    return sum;
  };
  const double checker_cpu0 = checkers_cpu(), relay_cpu0 = ProcessCpuSeconds(relay_backend),
               client_cpu0 = ProcessCpuSeconds(getpid());
  std::string failure;
  int checkers_running = f.checkers;
  auto start = Clock::now();
  std::vector<std::thread> checkers;
  for (int i = 0; i < f.checkers; ++i) {
    checkers.emplace_back([&, i] {
      double inside = 0;
      while (true) {
        auto t = Clock::now();
        auto r = checker_stores[i]->CheckDueJobs(limit);
        inside += SecondsSince(t);
        if (!r.ok()) {
          if (r.status().code() == trigd::StatusCode::kAborted) continue;
          std::lock_guard<std::mutex> l(mu);
          failure = "CheckDueJobs: " + r.status().ToString();
          break;
        }
        {
          std::lock_guard<std::mutex> l(mu);
          woken = true;
        }
        cv.notify_one();
        if (r->checked == 0) break;
      }
      std::lock_guard<std::mutex> l(mu);
      f.check_seconds += inside / f.checkers;
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
    auto rows = (*relay_store)->ClaimOutbox(5000);
    f.claim_seconds += SecondsSince(t);
    if (!rows.ok()) run.Fail("ClaimOutbox: " + rows.status().ToString());
    if (rows->empty()) {
      std::unique_lock<std::mutex> l(mu);
      if (checker_done && !woken) break;
      cv.wait_for(l, std::chrono::milliseconds(50), [&] { return woken; });
      woken = false;
      continue;
    }
    std::vector<trigd::OutMessage> out;
    out.reserve(rows->size());
    for (const auto& row : *rows) out.push_back({row.topic, row.key, row.payload});
    t = Clock::now();
    std::vector<bool> ok = (*producer)->ProduceAndWait(out, 10000);
    f.produce_seconds += SecondsSince(t);
    std::vector<int64_t> confirmed;
    for (size_t i = 0; i < rows->size(); ++i) {
      if (ok[i]) confirmed.push_back((*rows)[i].id);
    }
    t = Clock::now();
    auto done = (*relay_store)->CompleteOutbox(confirmed);
    f.complete_seconds += SecondsSince(t);
    if (!done.ok()) run.Fail("CompleteOutbox: " + done.status().ToString());
    confirmed_jobs += static_cast<int64_t>(done->size());
  }
  f.seconds = SecondsSince(start);
  for (std::thread& t : checkers) t.join();
  f.checker_server_cpu = checkers_cpu() - checker_cpu0;
  f.relay_server_cpu = ProcessCpuSeconds(relay_backend) - relay_cpu0;
  f.client_cpu = ProcessCpuSeconds(getpid()) - client_cpu0;
  if (!failure.empty()) run.Fail(failure);
  f.launched = confirmed_jobs;
  if (f.launched != expected) {
    run.Fail("expected " + std::to_string(expected) + " launches, got " + std::to_string(f.launched));
  }
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
