// What the engine's loops share (app/engine*.cc only): the wake-ups, the store handle that
// reconnects, the report watch, and the halt flag.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/engine.h"
#include "app/engine_store.h"
#include "common/check.h"
#include "common/log.h"
#include "common/topic_names.h"
#include "core/envelope.h"
#include "core/event_router.h"
#include "core/schedule_index.h"
#include "log/kafka.h"
#include "log/topics.h"
#include "metrics/metrics.h"
#include "store/migrator.h"
#include "store/pg_store.h"
#include "store/retention.h"

namespace trigd::engine_internal {

using Clock = std::chrono::steady_clock;

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

inline void Log(const std::string& what) { LogLine(what); }

// A store connection that reconnects after PostgreSQL went away (restart, failover). While it
// stays away each handle says so when it goes and then every kSayEvery, and once when it is
// back (a line a second from each of trigd's four loops would be 300 lines in a 75 s outage;
// the Kafka adapter says as much for Kafka).
class StoreHandle {
 public:
  StoreHandle(const Config& config, const EngineStoreFactory& factory, const char* name, int shard = 0, int shards = 1)
      : config_(config), factory_(factory), name_(name), shard_(shard), shards_(shards) {}
  EngineStore* Get() {
    if (store_) return store_.get();
    auto s = factory_(EngineStoreOptions{config_.fast_path, shard_, shards_, config_.group});
    if (!s.ok()) {
      Unreachable(s.status().message());
      return nullptr;
    }
    if (unreachable_) Log(std::string(name_) + ": PostgreSQL reachable again");
    unreachable_ = false;
    store_ = std::move(*s);
    return store_.get();
  }
  // Called with a failed status: drops the connection when it is gone.
  void Failed(const Status& s) {
    if (s.code() == StatusCode::kUnavailable) {
      Unreachable(s.ToString());
    } else {
      Log(std::string(name_) + ": " + s.ToString());
    }
    if (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kInternal) store_.reset();
  }

 private:
  static constexpr auto kSayEvery = std::chrono::seconds(30);
  void Unreachable(const std::string& why) {
    const auto now = Clock::now();
    if (!unreachable_ || now - said_ >= kSayEvery) {
      Log(std::string(name_) + ": " + why + "; retrying");
      said_ = now;
    }
    unreachable_ = true;
  }
  const Config& config_;
  const EngineStoreFactory& factory_;
  const char* name_;
  int shard_, shards_;
  std::unique_ptr<EngineStore> store_;
  bool unreachable_ = false;
  Clock::time_point said_{};
};

// The program topic's partitions as the ingest thread read their ends from the broker, for
// the sweep to tell how far trigd has read workers' reports (PgStore::MarkCaughtUp). An
// observation is used once it is kReportsSettle old: by then a healthy ingest has committed up
// to those ends, and one still behind them has not, so the mark waits for a later one.
class ReportWatch {
 public:
  static constexpr auto kReportsSettle = std::chrono::seconds(1);
  struct Observation {
    Clock::time_point at;
    std::vector<PartitionRange> ranges;
  };
  void Add(Observation o) {
    std::lock_guard<std::mutex> l(mu_);
    observations_.push_back(std::move(o));
    if (observations_.size() > 16) observations_.pop_front();
  }
  // The newest observation at least kReportsSettle old (older ones are dropped), if any.
  std::optional<Observation> TakeSettled(Clock::time_point now) {
    std::lock_guard<std::mutex> l(mu_);
    std::optional<Observation> out;
    while (!observations_.empty() && now - observations_.front().at >= kReportsSettle) {
      out = std::move(observations_.front());
      observations_.pop_front();
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::deque<Observation> observations_;
};

struct Shared {
  const Config& config;
  const std::atomic<bool>& stop;  // set by a signal
  Metrics& metrics;
  // Opens each loop's store connection (PgEngineStoreFactory; a fake in tests/app).
  EngineStoreFactory store_factory;
  Waker checker_wake;
  Waker relay_wake;
  ReportWatch report_watch;
  // Set by a loop that cannot go on (Halt): every loop stops, and RunEngine returns `why`.
  std::atomic<bool> halted{false};
  std::mutex why_mu;
  Status why;

  bool Stopping() const { return stop.load() || halted.load(); }
  void Halt(Status s) {
    {
      std::lock_guard<std::mutex> lock(why_mu);
      if (why.ok()) why = std::move(s);
    }
    halted = true;
    checker_wake.Wake();
    relay_wake.Wake();
  }
};

inline void RecordChecks(Shared& sh, const CheckerResult& r) {
  for (const auto& [key, n] : r.checks) sh.metrics.ConstraintCheck(key.first, key.second).Increment(n);
  sh.metrics.JobTransition("discarded").Increment(r.discarded);
  // Runs cancelled by max_concurrent_runs on_unmet cancel_oldest (reason overlap).
  sh.metrics.RunOutcome("cancelled").Increment(r.cancelled);
  for (const auto& [outcome, n] : r.lineage_outcomes) sh.metrics.LineageOutcome(outcome).Increment(n);
  if (r.launched > 0 || r.cancelled > 0) sh.relay_wake.Wake();
}

// After a committed ingest batch or tick: metrics, and the loops that have work because of it.
inline void RecordApplied(Shared& sh, const IngestResult& r) {
  sh.metrics.JobTransition("opened").Increment(r.jobs_opened);
  sh.metrics.JobTransition("ready").Increment(r.jobs_ready);
  sh.metrics.JobTransition("discarded").Increment(r.jobs_discarded);
  for (const auto& [outcome, n] : r.run_outcomes) sh.metrics.RunOutcome(outcome).Increment(n);
  for (const auto& [outcome, n] : r.lineage_outcomes) sh.metrics.LineageOutcome(outcome).Increment(n);
  RecordChecks(sh, r.checker);
  // The fast path decided at most kFastPathLimit jobs; anything it left (still waiting, or
  // more than it took) is the checker loop's.
  if (r.jobs_ready > r.checker.launched + r.checker.discarded || !r.run_outcomes.empty()) sh.checker_wake.Wake();
  if (r.published > 0) sh.relay_wake.Wake();
}

// The loops, one file each.
void IngestLoop(Shared& sh);
void CheckerLoop(Shared& sh, int index);
void RetentionLoop(Shared& sh);
void RelayLoop(Shared& sh);

}  // namespace trigd::engine_internal
