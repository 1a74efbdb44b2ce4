#include "metrics/metrics.h"

namespace trigd {

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  using prometheus::BuildCounter;
  using prometheus::BuildGauge;
  events_ =
      &BuildCounter().Name("trigd_events_total").Help("Events consumed, by type and outcome").Register(*registry_);
  dead_letters_ = &BuildCounter()
                       .Name("trigd_dead_letters_total")
                       .Help("Events sent to the dead-letter topic, by reason")
                       .Register(*registry_);
  jobs_total_ = &BuildCounter().Name("trigd_jobs_total").Help("Job transitions").Register(*registry_);
  jobs_ = &BuildGauge().Name("trigd_jobs").Help("Jobs by state").Register(*registry_);
  runs_ = &BuildCounter().Name("trigd_runs_total").Help("Run outcomes").Register(*registry_);
  lineages_ = &BuildCounter()
                   .Name("trigd_lineages_total")
                   .Help("Lineages (DAG runs) that ended, by outcome")
                   .Register(*registry_);
  checks_ = &BuildCounter()
                 .Name("trigd_constraint_checks_total")
                 .Help("Constraint checks by constraint and result")
                 .Register(*registry_);
  lag_ = &BuildGauge().Name("trigd_consumer_lag").Help("Messages behind the partition's end").Register(*registry_);
  event_to_launch_ = &prometheus::BuildHistogram()
                          .Name("trigd_event_to_launch_seconds")
                          .Help(
                              "From a job becoming ready (trigger complete: the clock of the transaction that made it "
                              "ready) to the broker's confirmation of its launch request")
                          .Register(*registry_)
                          .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                                           0.25, 0.5, 1, 2.5, 5, 10, 30, 60});
  transaction_retries_ = &BuildCounter()
                              .Name("trigd_transaction_retries_total")
                              .Help("PostgreSQL transactions rerun")
                              .Register(*registry_)
                              .Add({});
  fire_times_skipped_ = &BuildCounter()
                             .Name("trigd_fire_times_skipped_total")
                             .Help(
                                 "Fire times of time triggers passed over by their catchup policy (none, latest, or "
                                 "older than catchup_window)")
                             .Register(*registry_)
                             .Add({});
  ingest_transactions_ = &BuildCounter()
                              .Name("trigd_ingest_transactions_total")
                              .Help("Ingest transactions committed, each one batch of events with its offsets")
                              .Register(*registry_)
                              .Add({});
  pruned_ =
      &BuildCounter()
           .Name("trigd_history_pruned_total")
           .Help("Finished jobs and runs, and audit rows, deleted by the history retention (TRIGD_RETENTION), by table")
           .Register(*registry_);
  for (const char* t : {"jobs", "runs", "audit"}) HistoryPruned(t);
  operator_actions_ = &BuildCounter()
                           .Name("trigd_operator_actions_total")
                           .Help(
                               "What operators did through trigctl: runs started by hand (start), rerun, "
                               "cancelled (cancel), and backfill ticks sent (backfill_tick)")
                           .Register(*registry_);
  for (const char* a : {"start", "rerun", "cancel", "backfill_tick"}) OperatorAction(a);
  // The label sets SPEC §7 names are registered up front so a scrape shows them at zero.
  for (EventType t : kEventTypes)
    for (EventOutcome o : kCountedEventOutcomes) Event(t, o);
  for (const char* t : {"opened", "ready", "launched", "discarded"}) JobTransition(t);
  for (const char* o : {"succeeded", "failed", "killed", "lost", "retried", "cancelled", "timeout"}) RunOutcome(o);
  for (const char* o : {"succeeded", "failed"}) LineageOutcome(o);
  for (DeadLetterReason r : kDeadLetterReasons) DeadLetter(r);
  for (const char* s : {"pending_trigger", "pending_constraint", "pending_launch"}) Jobs(s);
  for (const char* c : {"max_concurrent_runs", "concurrency_group", "delay", "time_window", "min_since_last_run",
                        "max_runs_per", "timeout", "trigger"})
    for (const char* r : {"satisfied", "wait", "skip"}) ConstraintCheck(c, r);
}

Status Metrics::Serve(const std::string& address) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address);
    exposer_->RegisterCollectable(registry_);
    return Status::Ok();
  } catch (const std::exception& e) {
    // prometheus-cpp says "null context when constructing CivetServer. Possible problem binding
    // to port." for both causes.
    return Unavailable(
        "cannot serve metrics on " + address +
        ": not a HOST:PORT this machine can listen on, or the port is in use (--metrics, TRIGD_METRICS)");
  }
}

template <class T>
T& Metrics::Get(prometheus::Family<T>& family, std::map<std::string, T*>& cache,
                const std::map<std::string, std::string>& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string key = family.GetName();
  for (const auto& [k, v] : labels) key += "|" + k + "=" + v;
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  T& handle = family.Add(labels);
  cache.emplace(key, &handle);
  return handle;
}

prometheus::Counter& Metrics::Event(EventType type, EventOutcome outcome) {
  return Get(*events_, counter_cache_, {{"type", EventTypeName(type)}, {"outcome", EventOutcomeName(outcome)}});
}
prometheus::Counter& Metrics::DeadLetter(DeadLetterReason reason) {
  return Get(*dead_letters_, counter_cache_, {{"reason", DeadLetterReasonName(reason)}});
}
prometheus::Counter& Metrics::JobTransition(const std::string& transition) {
  return Get(*jobs_total_, counter_cache_, {{"transition", transition}});
}
prometheus::Gauge& Metrics::Jobs(const std::string& state) { return Get(*jobs_, gauge_cache_, {{"state", state}}); }
prometheus::Counter& Metrics::OperatorAction(const std::string& action) {
  return Get(*operator_actions_, counter_cache_, {{"action", action}});
}

prometheus::Counter& Metrics::LineageOutcome(const std::string& outcome) {
  return Get(*lineages_, counter_cache_, {{"outcome", outcome}});
}

prometheus::Counter& Metrics::RunOutcome(const std::string& outcome) {
  return Get(*runs_, counter_cache_, {{"outcome", outcome}});
}
prometheus::Counter& Metrics::ConstraintCheck(const std::string& constraint, const std::string& result) {
  return Get(*checks_, counter_cache_, {{"constraint", constraint}, {"result", result}});
}
prometheus::Counter& Metrics::HistoryPruned(const std::string& table) {
  return Get(*pruned_, counter_cache_, {{"table", table}});
}
prometheus::Gauge& Metrics::ConsumerLag(const std::string& topic, int partition) {
  return Get(*lag_, gauge_cache_, {{"topic", topic}, {"partition", std::to_string(partition)}});
}

}  // namespace trigd
