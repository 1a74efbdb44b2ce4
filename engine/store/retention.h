// History retention: finished jobs and runs older than a retention period are deleted, a chunk
// (one transaction) at a time, so the tables do not grow forever (Airflow's `db clean`,
// Temporal's namespace retention). Used by trigd (TRIGD_RETENTION, a pass every hour) and by
// `trigctl history prune --older-than D`.
//
// What goes: a discarded job that finished before the cutoff, and a launched job together with
// its run once the run ended (succeeded, failed or killed) before the cutoff. What stays, however
// old: open and waiting jobs, active runs (launched, running, waiting for a retry), a job whose
// launch request is still in the outbox, and runs launched within the longest `max_runs_per`
// period of any schedule (that constraint counts them). Each pass also deletes the audit rows
// (store/audit.h) older than the retention, under the same cutoff as finished jobs, and the
// failed-lineage memory past its expiry (schema/018).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "common/time.h"

namespace trigd {

// The shortest retention accepted. A worker's late duplicate report (a new event id, so past
// the de-duplication of event ids) for a run that is gone would count for program triggers as
// the report of a run trigd did not launch; a day leaves room for any retry of a report.
constexpr Millis kMinRetention = std::chrono::hours(24);

struct PruneTotals {
  int64_t jobs = 0;  // deleted, or for a dry run that would be
  int64_t runs = 0;
  int64_t audit = 0;  // audit rows
};

// One pass over the jobs, oldest id first, with the cutoffs fixed when it starts.
class HistoryPruner {
 public:
  // kInvalid when `keep` is shorter than kMinRetention or longer than kMaxDuration (now - keep
  // must not wrap); kUnavailable without PostgreSQL.
  // `dry_run`: Step counts what it would delete and deletes nothing.
  static Result<std::unique_ptr<HistoryPruner>> Start(const std::string& pg, Millis keep, bool dry_run = false);
  ~HistoryPruner();

  // The next `limit` jobs by id, in one transaction: deletes (or counts) those that may go; the
  // first step also the audit rows older than the cutoff. Once it meets a job opened after the
  // cutoff, the pass is done (ids grow with time).
  Result<PruneTotals> Step(int64_t limit = 2000);
  bool done() const { return done_; }

  // Jobs and runs that finished before this go, and audit rows of changes made before it.
  TimePoint cutoff() const { return cutoff_; }
  // Runs launched after this stay whatever their end (the longest max_runs_per period before
  // the pass started, or the cutoff when that is earlier).
  TimePoint runs_cutoff() const { return runs_cutoff_; }

 private:
  struct Connection;  // the libpqxx connection (retention.cc)
  HistoryPruner();
  std::unique_ptr<Connection> conn_;
  bool dry_run_ = false;
  bool done_ = false;
  int64_t after_id_ = 0;
  TimePoint cutoff_{}, runs_cutoff_{};
};

// A whole pass (trigctl): every chunk until done.
Result<PruneTotals> PruneHistory(const std::string& pg, Millis keep, bool dry_run, TimePoint* cutoff = nullptr,
                                 TimePoint* runs_cutoff = nullptr);

}  // namespace trigd
