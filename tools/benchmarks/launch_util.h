// The launch path shared by the launch and history benchmarks: ready jobs made through the
// append path and kept as a seed, the engine's checker and relay loops driven to completion,
// and the bare claim SQL that is their baseline.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "core/envelope.h"
#include "core/schedule_index.h"
#include "log/kafka.h"
#include "store/pg_store.h"

namespace bench {

// Applies `schedules` schedules (one partition trigger each, no constraints: a ready job
// launches at once), opens `jobs` ready jobs through PgStore::ApplyBatch (the real rows, with
// their trigger state and triggering event), and keeps a copy of them in jobs_seed, which
// ResetReadyJobs puts back before each round.
inline void MakeReadyJobs(Run& run, int64_t schedules, int64_t jobs) {
  std::vector<nlohmann::json> docs;
  for (int64_t k = 0; k < schedules; ++k) {
    docs.push_back({{"namespace", "bench"}, {"name", "s" + std::to_string(k)},
                    {"program", {{"name", "p" + std::to_string(k)}}},
                    {"trigger", {{"partition", {{"dataset", "d" + std::to_string(k)}}}}}});
  }
  ApplyScheduleDocs(run, docs);
  auto store = trigd::PgStore::Connect(run.pg, run.prefix);
  if (!store.ok()) run.Fail(store.status().ToString());
  trigd::ScheduleIndex index;
  auto changes = (*store)->LoadScheduleChanges(0);
  if (!changes.ok()) run.Fail(changes.status().ToString());
  for (const auto& k : changes->schedules) index.Put(k.id, k.event_keys);
  const int64_t batch = 5000;
  for (int64_t first = 0; first < jobs; first += batch) {
    trigd::IngestBatch in;
    in.group = run.group;
    int64_t end = std::min(jobs, first + batch);
    in.positions.push_back({run.prefix + "events.data", 0, first, end});
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
  tx.commit();
}

// Empties what a round wrote (this round's jobs, runs, outbox, run counters), puts the seed's
// ready jobs back (due now), and vacuums, so each round starts from the same state. Historic
// rows (ids below the seed's) stay.
inline void ResetReadyJobs(Run& run) {
  pqxx::connection c(run.pg);
  {
    pqxx::work tx(c);
    tx.exec("DELETE FROM runs WHERE job_id >= (SELECT min(id) FROM jobs_seed)");
    tx.exec("DELETE FROM jobs WHERE id >= (SELECT min(id) FROM jobs_seed)");
    tx.exec("TRUNCATE outbox, schedule_runtime, group_runtime");
    tx.exec("INSERT INTO jobs SELECT * FROM jobs_seed");
    tx.exec("UPDATE jobs SET next_check_at = now() WHERE id >= (SELECT min(id) FROM jobs_seed)");
    tx.commit();
  }
  pqxx::nontransaction tx(c);
  tx.exec("VACUUM ANALYZE jobs");
  tx.exec("VACUUM ANALYZE runs");
  tx.exec("VACUUM ANALYZE outbox");
  tx.exec("CHECKPOINT");
}

struct LaunchFigures {
  double seconds = 0;
  int64_t launched = 0;
  double check_seconds = 0;     // inside CheckDueJobs
  double claim_seconds = 0;     // inside ClaimOutbox
  double produce_seconds = 0;   // inside ProduceAndWait
  double complete_seconds = 0;  // inside CompleteOutbox
};

// trigd's checker and relay loops (engine/app/engine.cc) on two threads, each with its own
// PgStore: CheckDueJobs(limit) until nothing is due (each launch: run + outbox row in one
// transaction), and ClaimOutbox(5000) + Producer::ProduceAndWait + CompleteOutbox until
// `expected` launches are confirmed by Kafka and marked launched. The checker wakes the relay
// after each commit, as in trigd.
inline LaunchFigures LaunchThroughEngine(Run& run, int64_t expected, size_t limit) {
  LaunchFigures f;
  std::mutex mu;
  std::condition_variable cv;
  bool woken = false, checker_done = false;
  auto producer = trigd::Producer::Create(run.kafka);
  if (!producer.ok()) run.Fail(producer.status().ToString());
  auto checker_store = trigd::PgStore::Connect(run.pg, run.prefix);
  auto relay_store = trigd::PgStore::Connect(run.pg, run.prefix);
  if (!checker_store.ok() || !relay_store.ok()) run.Fail("cannot connect to PostgreSQL");
  std::string failure;
  auto start = Clock::now();
  std::thread checker([&] {
    while (true) {
      auto t = Clock::now();
      auto r = (*checker_store)->CheckDueJobs(limit);
      f.check_seconds += SecondsSince(t);
      if (!r.ok()) {
        if (r.status().code() == trigd::StatusCode::kAborted) continue;
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
    checker_done = true;
    cv.notify_one();
  });
  int64_t confirmed_jobs = 0;
  while (confirmed_jobs < expected && failure.empty()) {
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
    std::vector<int64_t> confirmed, jobs;
    for (size_t i = 0; i < rows->size(); ++i) {
      if (!ok[i]) continue;
      confirmed.push_back((*rows)[i].id);
      if ((*rows)[i].job_id) jobs.push_back(*(*rows)[i].job_id);
    }
    t = Clock::now();
    auto done = (*relay_store)->CompleteOutbox(confirmed, jobs);
    f.complete_seconds += SecondsSince(t);
    if (!done.ok()) run.Fail("CompleteOutbox: " + done.status().ToString());
    confirmed_jobs += static_cast<int64_t>(done->size());
  }
  f.seconds = SecondsSince(start);
  checker.join();
  if (!failure.empty()) run.Fail(failure);
  f.launched = confirmed_jobs;
  if (f.launched != expected) {
    run.Fail("expected " + std::to_string(expected) + " launches, got " + std::to_string(f.launched));
  }
  pqxx::connection c(run.pg);
  pqxx::work tx(c);
  int64_t runs = tx.exec1("SELECT count(*) FROM runs WHERE job_id >= (SELECT min(id) FROM jobs_seed)")[0].as<int64_t>();
  int64_t launched = tx.exec1("SELECT count(*) FROM jobs WHERE state = 'launched' AND id >= (SELECT min(id) FROM jobs_seed)")[0].as<int64_t>();
  if (runs != expected || launched != expected) {
    run.Fail("after the engine: " + std::to_string(runs) + " runs, " + std::to_string(launched) + " jobs launched");
  }
  return f;
}

// The baseline: the bare claim statement in a loop, one transaction each, `limit` rows at a
// time in the checker's order and by the checker's condition, until nothing is due (a claimed
// job leaves the due set as in the checker: next_check_at cleared). Returns seconds.
inline double ClaimLoop(Run& run, int64_t expected, size_t limit) {
  pqxx::connection c(run.pg);
  c.prepare("claim",
            "UPDATE jobs SET state = 'pending_launch', next_check_at = NULL WHERE id IN (SELECT id FROM jobs "
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
  if (claimed != expected) run.Fail("claim loop claimed " + std::to_string(claimed) + ", expected " + std::to_string(expected));
  return s;
}

}  // namespace bench
