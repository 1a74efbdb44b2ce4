#include "store/retention.h"

#include <algorithm>

#include <pqxx/pqxx>

#include "store/pg_internal.h"

namespace trigd {

using pg_internal::FromMillis;
using pg_internal::Guard;
using pg_internal::Sql;
using pg_internal::SqlIn;
using pg_internal::ToMillis;

struct HistoryPruner::Connection {
  std::unique_ptr<pqxx::connection> c;
};

HistoryPruner::HistoryPruner() : conn_(std::make_unique<Connection>()) {}
HistoryPruner::~HistoryPruner() = default;

Result<std::unique_ptr<HistoryPruner>> HistoryPruner::Start(const std::string& pg, Millis keep, bool dry_run) {
  if (keep < kMinRetention) {
    return Invalid("retention must be at least " + FormatDuration(kMinRetention) + ", got " + FormatDuration(keep));
  }
  // now - keep must not wrap: a cutoff in the future would delete every finished job.
  if (keep > kMaxDuration) {
    return Invalid("retention must be at most " + FormatDuration(kMaxDuration) + ", got " + FormatDuration(keep));
  }
  auto conn = pg_internal::Connect(pg);
  if (!conn.ok()) return conn.status();
  std::unique_ptr<HistoryPruner> p(new HistoryPruner());
  p->conn_->c = std::move(*conn);
  p->dry_run_ = dry_run;
  Status s = Guard([&]() -> Result<int> {
               pqxx::read_transaction tx(*p->conn_->c);
               const TimePoint now = FromMillis(tx.exec1("SELECT " TRIGD_MS("now()"))[0].as<int64_t>());
               // The longest max_runs_per period of any schedule, suspended ones included (a resume makes
               // them count again). One read per pass: the documents are read, not parsed.
               Millis longest{0};
               for (const auto& r :
                    tx.exec("SELECT DISTINCT document->'constraints'->'max_runs_per'->>'period' FROM schedules "
                            "WHERE document->'constraints' ? 'max_runs_per'")) {
                 if (r[0].is_null()) continue;
                 auto d = ParseDuration(r[0].as<std::string>());
                 if (!d.ok()) return Internal("a stored max_runs_per period: " + d.status().ToString());
                 longest = std::max(longest, *d);
               }
               p->cutoff_ = now - keep;
               p->runs_cutoff_ = now - std::max(keep, longest);
               return 0;
             }).status();
  if (!s.ok()) return s;
  return p;
}

Result<PruneTotals> HistoryPruner::Step(int64_t limit) {
  if (done_) return PruneTotals{};
  return Guard([&]() -> Result<PruneTotals> {
    pqxx::work tx(*conn_->c);
    // `chunk`: the next jobs by id. `doomed`: those that may go, each with its run if it has one.
    // A job whose launch request waits in the outbox stays (the relay marks nothing on it, but
    // the request's run would be gone when its worker reports).
    const std::string doomed =
        "WITH chunk AS (SELECT id, state, opened_at, finished_at FROM jobs WHERE id > $1 ORDER BY id LIMIT $2), "
        "doomed AS (SELECT c.id, r.run_id FROM chunk c LEFT JOIN runs r ON r.job_id = c.id "
        "  WHERE c.opened_at < to_timestamp($3 / 1000.0) AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.job_id = c.id) "
        "    AND ((c.state = " +
        Sql(JobState::kDiscarded) +
        " AND c.finished_at < to_timestamp($3 / 1000.0) AND r.run_id IS NULL) "
        "      OR (c.state = " +
        Sql(JobState::kLaunched) + " AND r.state IN " +
        SqlIn(RunState::kSucceeded, RunState::kFailed, RunState::kKilled) +
        " "
        "          AND r.finished_at < to_timestamp($3 / 1000.0) AND r.launched_at < to_timestamp($4 / 1000.0))))";
    const std::string tail =
        "(SELECT max(id) FROM chunk), "
        "coalesce((SELECT bool_or(opened_at >= to_timestamp($3 / 1000.0)) FROM chunk), true)";
    const std::string sql = dry_run_
                                ? doomed +
                                      " SELECT (SELECT count(*) FROM doomed), "
                                      "(SELECT count(run_id) FROM doomed), " +
                                      tail
                                : doomed +
                                      ", gone_runs AS (DELETE FROM runs WHERE run_id IN (SELECT run_id FROM doomed "
                                      "WHERE run_id IS NOT NULL) "
                                      "  RETURNING 1), "
                                      "gone_jobs AS (DELETE FROM jobs WHERE id IN (SELECT id FROM doomed) RETURNING 1) "
                                      "SELECT (SELECT count(*) FROM gone_jobs), (SELECT count(*) FROM gone_runs), " +
                                      tail;
    auto row = tx.exec_params1(sql, after_id_, limit, ToMillis(cutoff_), ToMillis(runs_cutoff_));
    PruneTotals t{row[0].as<int64_t>(), row[1].as<int64_t>()};
    if (after_id_ == 0) {
      // Once a pass: the audit as the history, under the same cutoff (audit_by_at); the
      // failed-lineage memory past its expiry (docs/adr/0116) opens nothing any more.
      t.audit = tx.exec_params1(dry_run_ ? "SELECT count(*) FROM audit WHERE at < to_timestamp($1 / 1000.0)"
                                         : "WITH gone AS (DELETE FROM audit WHERE at < to_timestamp($1 / 1000.0) "
                                           "RETURNING 1) SELECT count(*) FROM gone",
                                ToMillis(cutoff_))[0]
                    .as<int64_t>();
      if (!dry_run_) tx.exec("DELETE FROM failed_lineages WHERE expires_at < now()");
    }
    tx.commit();
    if (!row[2].is_null()) after_id_ = row[2].as<int64_t>();
    // An empty chunk (the end of the table) or one that reached jobs opened after the cutoff.
    done_ = row[2].is_null() || row[3].as<bool>();
    return t;
  });
}

Result<PruneTotals> PruneHistory(const std::string& pg, Millis keep, bool dry_run, TimePoint* cutoff,
                                 TimePoint* runs_cutoff) {
  auto p = HistoryPruner::Start(pg, keep, dry_run);
  if (!p.ok()) return p.status();
  if (cutoff) *cutoff = (*p)->cutoff();
  if (runs_cutoff) *runs_cutoff = (*p)->runs_cutoff();
  PruneTotals total;
  while (!(*p)->done()) {
    auto t = (*p)->Step();
    if (!t.ok()) return t.status();
    total.jobs += t->jobs;
    total.runs += t->runs;
    total.audit += t->audit;
  }
  return total;
}

}  // namespace trigd
