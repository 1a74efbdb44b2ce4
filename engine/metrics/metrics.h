// trigd's Prometheus metrics (SPEC §7). Every handle is created once at start-up; the hot
// path only increments. Thread-safe (prometheus-cpp's counters are atomic; the handle caches
// are guarded by a mutex).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "common/status.h"
#include "model/event.h"

namespace trigd {

class Metrics {
 public:
  Metrics();
  // Serves /metrics on `address` ("127.0.0.1:9464"). kUnavailable when it cannot bind.
  Status Serve(const std::string& address);

  prometheus::Counter& Event(EventType type, EventOutcome outcome);
  prometheus::Counter& DeadLetter(DeadLetterReason reason);
  prometheus::Counter& JobTransition(const std::string& transition);
  prometheus::Gauge& Jobs(const std::string& state);
  prometheus::Counter& RunOutcome(const std::string& outcome);
  // trigd_lineages_total{outcome}: lineages that ended, succeeded or failed (SPEC §10).
  prometheus::Counter& LineageOutcome(const std::string& outcome);
  prometheus::Counter& ConstraintCheck(const std::string& constraint, const std::string& result);
  prometheus::Histogram& EventToLaunch() { return *event_to_launch_; }
  prometheus::Gauge& ConsumerLag(const std::string& topic, int partition);
  prometheus::Counter& TransactionRetries() { return *transaction_retries_; }
  // Ingest transactions committed (each applies one batch of events with its offsets).
  prometheus::Counter& IngestTransactions() { return *ingest_transactions_; }
  prometheus::Counter& FireTimesSkipped() { return *fire_times_skipped_; }
  // Rows deleted by the history retention (TRIGD_RETENTION), by table: "jobs" or "runs".
  prometheus::Counter& HistoryPruned(const std::string& table);
  // trigctl's operator actions (store/operate.h TakeOperatorActions): start, rerun, cancel,
  // backfill_tick.
  prometheus::Counter& OperatorAction(const std::string& action);

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  template <class T>
  T& Get(prometheus::Family<T>& family, std::map<std::string, T*>& cache,
         const std::map<std::string, std::string>& labels);

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  prometheus::Family<prometheus::Counter>* events_;
  prometheus::Family<prometheus::Counter>* dead_letters_;
  prometheus::Family<prometheus::Counter>* jobs_total_;
  prometheus::Family<prometheus::Gauge>* jobs_;
  prometheus::Family<prometheus::Counter>* runs_;
  prometheus::Family<prometheus::Counter>* operator_actions_;
  prometheus::Family<prometheus::Counter>* lineages_;
  prometheus::Family<prometheus::Counter>* checks_;
  prometheus::Family<prometheus::Gauge>* lag_;
  prometheus::Histogram* event_to_launch_;
  prometheus::Counter* transaction_retries_;
  prometheus::Counter* ingest_transactions_;
  prometheus::Counter* fire_times_skipped_;
  prometheus::Family<prometheus::Counter>* pruned_;
  std::mutex mu_;  // guards the caches (several engine threads look handles up)
  std::map<std::string, prometheus::Counter*> counter_cache_;
  std::map<std::string, prometheus::Gauge*> gauge_cache_;
};

}  // namespace trigd
