#include "app/engine.h"

#include <chrono>
#include <condition_variable>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/envelope.h"
#include "core/schedule_index.h"
#include "log/kafka.h"
#include "log/topics.h"
#include "metrics/metrics.h"
#include "store/migrator.h"
#include "store/pg_store.h"

namespace trigd {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// Lets one loop wake another early (a committed batch with ready jobs wakes the checker; a
// committed launch wakes the relay) instead of waiting for its next poll.
class Waker {
 public:
  void Wake() {
    {
      std::lock_guard<std::mutex> l(mu_);
      woken_ = true;
    }
    cv_.notify_one();
  }
  void Wait(std::chrono::milliseconds at_most) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, at_most, [&] { return woken_; });
    woken_ = false;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;
};

void Log(const std::string& what) { std::cerr << "trigd: " << what << std::endl; }

// A store connection that reconnects after PostgreSQL went away (restart, failover).
class StoreHandle {
 public:
  StoreHandle(const Config& config, const char* name) : config_(config), name_(name) {}
  PgStore* Get() {
    if (store_) return store_.get();
    auto s = PgStore::Connect(config_.pg, config_.topic_prefix);
    if (!s.ok()) {
      Log(std::string(name_) + ": " + s.status().message());
      return nullptr;
    }
    store_ = std::move(*s);
    store_->SetFastPath(config_.fast_path);
    return store_.get();
  }
  // Called with a failed status: drops the connection when it is gone.
  void Failed(const Status& s) {
    Log(std::string(name_) + ": " + s.ToString());
    if (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kInternal) store_.reset();
  }

 private:
  const Config& config_;
  const char* name_;
  std::unique_ptr<PgStore> store_;
};

struct Shared {
  const Config& config;
  const std::atomic<bool>& stop;
  Metrics& metrics;
  Waker checker_wake;
  Waker relay_wake;
};

void RecordChecks(Shared& sh, const CheckerResult& r) {
  for (const auto& [key, n] : r.checks) sh.metrics.ConstraintCheck(key.first, key.second).Increment(n);
  sh.metrics.JobTransition("discarded").Increment(r.discarded);
  if (r.launched > 0) sh.relay_wake.Wake();
}

// After a committed ingest batch or tick: metrics, and the loops that have work because of it.
void RecordApplied(Shared& sh, const IngestResult& r) {
  sh.metrics.JobTransition("opened").Increment(r.jobs_opened);
  sh.metrics.JobTransition("ready").Increment(r.jobs_ready);
  sh.metrics.JobTransition("discarded").Increment(r.jobs_discarded);
  for (const auto& [outcome, n] : r.run_outcomes) sh.metrics.RunOutcome(outcome).Increment(n);
  RecordChecks(sh, r.checker);
  // The fast path decided at most kFastPathLimit jobs; anything it left (still waiting, or
  // more than it took) is the checker loop's.
  if (r.jobs_ready > r.checker.launched + r.checker.discarded || !r.run_outcomes.empty()) sh.checker_wake.Wake();
  if (r.published > 0) sh.relay_wake.Wake();
}

// The consumer loop: event topics -> jobs, in one transaction per batch with the offsets.
void IngestLoop(Shared& sh) {
  StoreHandle store(sh.config, "ingest");
  ScheduleIndex index;
  int64_t index_seq = 0;
  bool index_loaded = false;
  std::unique_ptr<Consumer> consumer;
  const std::string data = sh.config.topic_prefix + "events.data";
  const std::string program = sh.config.topic_prefix + "events.program";
  const std::string time = sh.config.topic_prefix + "events.time";
  auto last_refresh = Clock::time_point{};
  auto last_lag = Clock::time_point{};
  // Handles looked up once (prometheus-cpp: keep the Counter&).
  std::map<std::pair<std::string, std::string>, prometheus::Counter*> event_counters;
  auto count_event = [&](const std::string& type, const std::string& outcome) {
    auto& c = event_counters[{type, outcome}];
    if (!c) c = &sh.metrics.Event(type, outcome);
    c->Increment();
  };
  while (!sh.stop.load()) {
    PgStore* pg = store.Get();
    if (!pg) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    // The reverse index follows the schedule change log (apply, update, delete, suspend).
    if (!index_loaded || Clock::now() - last_refresh > std::chrono::milliseconds(200)) {
      auto changes = pg->LoadScheduleChanges(index_loaded ? index_seq : 0);
      if (!changes.ok()) {
        store.Failed(changes.status());
        continue;
      }
      for (const ScheduleKeys& k : changes->schedules) {
        if (k.active) index.Put(k.id, k.event_keys);
        else index.Remove(k.id);
      }
      if (!index_loaded) Log("reverse index loaded: " + std::to_string(index.schedule_count()) + " schedules");
      index_seq = changes->last_seq;
      index_loaded = true;
      last_refresh = Clock::now();
    }
    if (!consumer) {
      auto c = Consumer::Create(sh.config.kafka, sh.config.group, {data, program, time},
                                [&](const std::vector<std::pair<std::string, int>>& parts) {
                                  // Positions come from PostgreSQL, where they are committed with the jobs.
                                  for (int attempt = 0; attempt < 30 && !sh.stop.load(); ++attempt) {
                                    if (PgStore* p = store.Get()) {
                                      auto r = p->LoadOffsets(sh.config.group, parts);
                                      if (r.ok()) return *r;
                                      store.Failed(r.status());
                                    }
                                    std::this_thread::sleep_for(std::chrono::seconds(1));
                                  }
                                  std::abort();  // cannot position safely: let the supervisor restart us
                                });
      if (!c.ok()) {
        Log("consumer: " + c.status().ToString());
        std::this_thread::sleep_for(std::chrono::seconds(1));
        continue;
      }
      consumer = std::move(*c);
    }
    std::vector<Message> batch = consumer->Poll(5000, 100, 2);
    if (Clock::now() - last_lag > std::chrono::seconds(2)) {
      for (const PartitionLag& l : consumer->Lag()) sh.metrics.ConsumerLag(l.topic, l.partition).Set(static_cast<double>(l.lag));
      last_lag = Clock::now();
    }
    if (batch.empty()) continue;
    IngestBatch in;
    in.group = sh.config.group;
    std::map<std::pair<std::string, int>, ConsumedPosition> positions;
    std::vector<std::string> dead_reasons;
    for (const Message& m : batch) {
      auto& pos = positions[{m.topic, m.partition}];
      if (pos.topic.empty()) pos = {m.topic, m.partition, m.offset, m.offset + 1};
      pos.next_offset = m.offset + 1;
      Result<Event> e = ParseEnvelope(m.value);
      if (!e.ok()) {
        std::string reason = DeadLetterReason(e.status());
        dead_reasons.push_back(reason);
        in.dead.push_back({m.key, json{{"reason", e.status().message()}, {"topic", m.topic},
                                       {"partition", m.partition}, {"offset", m.offset},
                                       {"original", m.value}}
                                      .dump(-1, ' ', false, json::error_handler_t::replace)});
        continue;
      }
      std::span<const int64_t> ids = index.Lookup(e->EventKey());
      in.schedule_ids.emplace_back(ids.begin(), ids.end());
      in.events.push_back(std::move(*e));
    }
    for (auto& [k, v] : positions) in.positions.push_back(v);
    Result<IngestResult> r = Aborted("not run");
    for (int attempt = 0; attempt < 20 && !sh.stop.load(); ++attempt) {
      r = pg->ApplyBatch(in);
      if (r.ok() || r.status().code() != StatusCode::kAborted) break;
      // A race with another instance (same schedule's open job, deadlock): rerun as is.
      sh.metrics.TransactionRetries().Increment();
      std::this_thread::sleep_for(std::chrono::milliseconds(5 * (attempt + 1)));
    }
    if (!r.ok()) {
      store.Failed(r.status());
      consumer->Rewind();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    if (r->fenced) {
      Log("batch refused: another consumer moved a position first; re-reading from PostgreSQL");
      consumer->Rewind();
      continue;
    }
    sh.metrics.IngestTransactions().Increment();
    consumer->CommitKafka(batch);
    for (const std::string& reason : dead_reasons) sh.metrics.DeadLetter(reason).Increment();
    for (size_t i = 0; i < in.events.size(); ++i) count_event(EventTypeName(in.events[i].type), r->outcome[i]);
    RecordApplied(sh, *r);
    if (!in.dead.empty()) sh.relay_wake.Wake();
  }
}

// The control loop: constraint checks, lost runs and retries, time ticks, gauges.
void CheckerLoop(Shared& sh) {
  StoreHandle store(sh.config, "checker");
  auto last_sweep = Clock::time_point{}, last_gauge = Clock::time_point{}, last_prune = Clock::now();
  // As many ticks per transaction as its fast path launches.
  constexpr size_t kTickBatch = PgStore::kFastPathLimit;
  bool ticks_pending = false;
  while (!sh.stop.load()) {
    PgStore* pg = store.Get();
    if (!pg) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    bool more = false;
    auto r = pg->CheckDueJobs(1000);
    if (!r.ok()) {
      if (r.status().code() == StatusCode::kAborted) sh.metrics.TransactionRetries().Increment();
      store.Failed(r.status());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    RecordChecks(sh, *r);
    more = r->checked == 1000;
    const bool sweep_due = Clock::now() - last_sweep > std::chrono::milliseconds(500);
    if (sweep_due) last_sweep = Clock::now();
    // A full batch of ticks means more are due now (a storm of schedules due in the same
    // second): produce the next batch at once instead of 500 ms later.
    if (sweep_due || ticks_pending) {
      auto t = pg->TickTimeTriggers(kTickBatch);
      if (t.ok()) {
        if (t->produced > 0) sh.relay_wake.Wake();
        RecordApplied(sh, t->applied);
        for (size_t i = 0; i < t->applied.outcome.size(); ++i) sh.metrics.Event("tick", t->applied.outcome[i]).Increment();
        ticks_pending = t->produced >= static_cast<int>(kTickBatch);
        more = more || ticks_pending;
      } else {
        ticks_pending = false;  // retried at the next sweep, not in a tight loop
        store.Failed(t.status());
        continue;
      }
    }
    if (sweep_due) {
      auto sw = pg->SweepRuns();
      if (sw.ok()) {
        sh.metrics.RunOutcome("lost").Increment(sw->lost);
        sh.metrics.RunOutcome("retried").Increment(sw->retried);
        sh.metrics.RunOutcome("failed").Increment(sw->failed);
        if (sw->retried > 0 || sw->failed > 0) sh.relay_wake.Wake();
      } else {
        store.Failed(sw.status());
        continue;
      }
    }
    if (Clock::now() - last_gauge > std::chrono::seconds(2)) {
      last_gauge = Clock::now();
      if (auto c = pg->CountJobs(); c.ok()) {
        for (const auto& [state, n] : *c) sh.metrics.Jobs(state).Set(static_cast<double>(n));
      }
    }
    if (Clock::now() - last_prune > std::chrono::hours(1)) {
      last_prune = Clock::now();
      // Event ids are kept longer than the event topics' retention (7 days).
      if (Status s = pg->Prune(std::chrono::hours(24 * 8)); !s.ok()) store.Failed(s);
    }
    if (!more) sh.checker_wake.Wait(std::chrono::milliseconds(100));
  }
}

// The relay: publishes what committed transactions decided, deletes a row only once the
// broker confirmed it (a crash in between re-sends it: same run id).
void RelayLoop(Shared& sh) {
  StoreHandle store(sh.config, "relay");
  std::unique_ptr<Producer> producer;
  std::set<std::string> known_topics;
  while (!sh.stop.load()) {
    if (!producer) {
      auto p = Producer::Create(sh.config.kafka);
      if (!p.ok()) {
        Log("relay: " + p.status().ToString());
        std::this_thread::sleep_for(std::chrono::seconds(1));
        continue;
      }
      producer = std::move(*p);
    }
    PgStore* pg = store.Get();
    if (!pg) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    auto rows = pg->ClaimOutbox(5000);
    if (!rows.ok()) {
      store.Failed(rows.status());
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    if (rows->empty()) {
      sh.relay_wake.Wait(std::chrono::milliseconds(50));
      continue;
    }
    // A launch topic for a new target is created on first use (trigd.launch.<target>).
    std::vector<TopicSpec> missing;
    for (const auto& row : *rows) {
      if (known_topics.insert(row.topic).second) missing.push_back({row.topic, 4, {{"retention.ms", "604800000"}}});
    }
    if (!missing.empty()) {
      if (auto c = CreateTopics(sh.config.kafka, missing); !c.ok()) {
        Log("relay: creating topics: " + c.status().ToString());
        for (const auto& t : missing) known_topics.erase(t.name);
      }
    }
    std::vector<OutMessage> out;
    out.reserve(rows->size());
    for (const auto& row : *rows) out.push_back({row.topic, row.key, row.payload});
    std::vector<bool> ok = producer->ProduceAndWait(out, 10000);
    std::vector<int64_t> confirmed, jobs;
    for (size_t i = 0; i < rows->size(); ++i) {
      if (!ok[i]) continue;
      confirmed.push_back((*rows)[i].id);
      if ((*rows)[i].job_id) jobs.push_back(*(*rows)[i].job_id);
    }
    auto done = pg->CompleteOutbox(confirmed, jobs);
    if (!done.ok()) {
      store.Failed(done.status());
      continue;
    }
    sh.metrics.JobTransition("launched").Increment(static_cast<double>(done->size()));
    for (double s : *done) sh.metrics.EventToLaunch().Observe(s);
    if (confirmed.size() < rows->size()) {
      Log("relay: " + std::to_string(rows->size() - confirmed.size()) + " messages not confirmed by Kafka (" +
          producer->LastError() + "); will re-send with a new producer");
      // A fresh producer: an idempotent producer can be left fenced or fatal after a broker
      // restart; the rows stay in the outbox and go again, with the same run ids.
      producer.reset();
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
}

}  // namespace

Status RunEngine(const Config& config, const std::atomic<bool>& stop) {
  if (Status s = ApplyMigrations(config.pg, DefaultSchemaDir(), nullptr); !s.ok()) return s;
  Metrics metrics;
  if (Status s = metrics.Serve(config.metrics); !s.ok()) return s;
  Shared shared{config, stop, metrics, {}, {}};
  Log("running: kafka " + config.kafka + ", group " + config.group + ", topics " + config.topic_prefix +
      "*, metrics http://" + config.metrics + "/metrics");
  std::thread ingest([&] { IngestLoop(shared); });
  std::thread checker([&] { CheckerLoop(shared); });
  std::thread relay([&] { RelayLoop(shared); });
  ingest.join();
  shared.checker_wake.Wake();
  shared.relay_wake.Wake();
  checker.join();
  relay.join();
  return Status::Ok();
}

}  // namespace trigd
