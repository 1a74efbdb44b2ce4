// Private to engine/store: what the PgStore files (one per concern) share: the transaction
// context, PgStore's private structs, the tables the checker writes, and helpers.
#pragma once

#include "store/pg_store.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <pqxx/pqxx>
#include <pqxx/tablewriter>

#include "common/check.h"
#include "common/json_text.h"
#include "core/constraint_checker.h"
#include "core/cron.h"
#include "core/envelope.h"
#include "core/launch_request.h"
#include "core/operate.h"
#include "core/run_lifecycle.h"
#include "core/schedule_parser.h"
#include "core/trigger_eval.h"
#include "store/operate.h"
#include "store/outbox_bundle.h"
#include "store/pg_internal.h"
#include "store/sql_array.h"

namespace trigd {

// The transaction's now(), read once: in milliseconds for decisions, and exactly, as text and
// as JSON, for rows copied in (a run launched in the transaction that ended the run before it
// carries the very same instant).
#define TRIGD_CLOCK TRIGD_MS("now()") ", now()::text, to_json(now())::text"

struct PgStore::TxContext {
  TxContext(pqxx::transaction_base& tx, const pqxx::row& clock)
      : tx(tx),
        now(pg_internal::FromMillis(clock[0].as<int64_t>())),
        now_text(clock[1].as<std::string>()),
        now_json(clock[2].as<std::string>()) {}
  pqxx::transaction_base& tx;
  TimePoint now;
  std::string now_text, now_json;
  // Set by a transaction that sends the checker's writes with its COMMIT (one round trip less):
  // CheckJobs leaves checker_writes' arguments here instead of executing it, if they are small.
  std::vector<std::string>* deferred_writes = nullptr;
  // Set by a transaction that commits right after ApplyEvents: what the batch built in memory
  // is left here and freed after the COMMIT (see ApplyEvents).
  std::shared_ptr<void>* free_after_commit = nullptr;
};

// A batch's events that can change something, and of those, the ids to record (`ids`, each
// once, in batch order) and those known to be new (`fresh`: views of the batch's own ids, or of
// `recorded`, the ids an ON CONFLICT insert reported new).
//
// A producer's tick is de-duplicated by its fire time's identity, "tick:<schedule>:<fire_time>"
// (SPEC §5), not by its event id: two ticks for one fire time are one, whatever their ids.
struct PgStore::Relevant {
  std::vector<bool> relevant;
  std::vector<std::string_view> ids;
  std::unordered_set<std::string_view> fresh;
  nlohmann::json recorded;
  // Producer ticks' identities by event index (node-based: `ids` and `fresh` view them).
  std::unordered_map<size_t, std::string> tick_ids;
  // The id event `i` is de-duplicated by.
  std::string_view Key(size_t i, const Event& e) const {
    if (tick_ids.empty()) return e.id;
    auto it = tick_ids.find(i);
    return it == tick_ids.end() ? std::string_view(e.id) : std::string_view(it->second);
  }
  // The ids go in by COPY, which ApplyEvents sends once the batch's schedules are read, so that
  // PostgreSQL inserts them while trigd accumulates the events (7 ms of a 5,000-event batch that
  // the server spent waiting); an id recorded before fails it with a unique violation.
  bool copy_ids = false;
};

// Up to this many event ids in a batch ride on its positions' statement as an array; more go in
// by COPY, whose heap inserts fill whole pages per WAL record and which needs no array parsed
// and sorted (5,000 ids: 9.4-11.3 ms of server time against 13.5-14.4 ms) but costs a round
// trip of its own.
constexpr size_t kIdsAsArrayLimit = 64;

// A job this ingest transaction completed and has not written yet: the fast path decides it
// first and writes it once, in its decided state (no insert as pending, then an update).
struct PgStore::FreshJob {
  int64_t schedule_id = 0;
  int version = 0;
  int priority = 0;
  std::string schedule_name;
  std::string trigger_state, triggered_by;  // JSON text
  std::vector<std::string> history;         // entries so far (JSON objects)
  TimePoint opened_at;
  std::optional<std::string> group;
  std::string lineage;  // jobs.lineage (schema/018)
};

struct PgStore::CheckFilter {
  std::set<int64_t> schedule_ids;
  std::set<std::string> groups;
  // Schedules this transaction already loaded and share-locked (not loaded again).
  const std::map<int64_t, ScheduleView>* loaded = nullptr;
  // Checked with the stored due jobs, in the same priority order; written by the check.
  const std::vector<FreshJob>* fresh = nullptr;
  // Runs this transaction ended: their counters are locked with the others and decremented
  // (see ReleaseRuns).
  const std::vector<EndedRun>* ended = nullptr;
};

namespace pg_internal {

// The checker's claim: due jobs in priority order, locked (SKIP LOCKED: checkers never take the
// same job). Columns as CheckJobs reads them.
std::string ClaimColumnsSql();
#define TRIGD_CLAIM_ORDER "ORDER BY priority DESC, ready_at NULLS LAST, id LIMIT $1 FOR UPDATE SKIP LOCKED"

// Tables the checker writes rows of (TableRows): a few rows ride on checker_writes as one array
// per column, many are copied in. Names and types as in schema/.
struct Column {
  const char* name;
  const char* type;
};
struct Table {
  const char* name;
  std::vector<Column> columns;

  std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const Column& c : columns) out.push_back(c.name);
    return out;
  }
  // "INSERT INTO t (a, b) SELECT * FROM unnest($n::bigint[], $n+1::text[])".
  std::string InsertFromArrays(int first_param) const {
    std::string names, arrays;
    for (size_t i = 0; i < columns.size(); ++i) {
      names += (i ? ", " : "") + std::string(columns[i].name);
      arrays += (i ? ", $" : "$") + std::to_string(first_param + static_cast<int>(i)) + "::" + columns[i].type + "[]";
    }
    return "INSERT INTO " + std::string(name) + " (" + names + ") SELECT * FROM unnest(" + arrays + ")";
  }
};
extern const Table kDecidedJobs, kRuns, kOutbox;

// Up to this many jobs checked in one transaction, its rows go as arrays (TableRows): a COPY's
// two round trips cost more than the arrays' parsing until well past it.
constexpr size_t kRowsAsArraysLimit = 64;
// Up to this many bytes of arguments, checker_writes rides on the ingest transaction's COMMIT.
constexpr size_t kDeferredWritesLimit = 64 * 1024;

// The wait before attempt `attempt` + 1: exponential from `backoff`, capped at `max_backoff`.
Millis RetryWait(const RetryPolicy& retry, int64_t attempt);
// The time trigger a time_triggers row names (its leaf, in TriggerLeaves' numbering); null when
// the schedule's definition has no time leaf there.
const TimeTrigger* TimeLeaf(const Schedule& s, int leaf);
// A PostgreSQL array literal of integers, e.g. "{1,2,3}" (no quoting needed).
template <class C>
std::string IntArray(const C& ids) {
  std::string out = "{";
  for (auto id : ids) {
    if (out.size() > 1) out += ',';
    out += std::to_string(id);
  }
  return out + "}";
}
// Entries already written as JSON, as one JSON array.
std::string JsonArray(const std::vector<std::string>& entries);
// A job's triggering events as stored (and carried into its launch request), into out.
void TriggeredByJson(const std::vector<TriggeringEvent>& events, std::string& out);
// COPY of `rows` into `table`, sent in one piece (see pg_rows.cc).
void CopyIn(pqxx::transaction_base& tx, const std::string& table, const std::vector<std::string>& columns,
            const CopyRows& rows);
bool IsFinal(ProgramStatus s);
// The schedules of `versions` (id, version: active, read in this transaction), from the cache
// or, for those not in it at that version, from their documents.
std::map<int64_t, ScheduleView> ResolveSchedules(pqxx::transaction_base& tx, ScheduleCache& cache,
                                                 const std::vector<std::pair<int64_t, int>>& versions);
// The active schedules of the jobs a checker holds, not locked (see pg_rows.cc).
std::map<int64_t, ScheduleView> LoadSchedules(pqxx::transaction_base& tx, ScheduleCache& cache,
                                              const std::set<int64_t>& ids);

// COPY into `table` while its rows are still being built: each piece of about 64 KiB goes to
// the server as soon as it is written, so PostgreSQL inserts rows while trigd builds the next
// ones (built first and sent whole, trigd's 13 ms and PostgreSQL's 23 ms of CPU per 1,000 jobs
// of the append benchmark added up). The COPY starts with the first row (none: no statement at
// all). No other statement may run in the transaction between the first row and Finish.
class CopyStream {
 public:
  CopyStream(pqxx::transaction_base& tx, std::string table, std::vector<std::string> columns)
      : tx_(tx), table_(std::move(table)), columns_(std::move(columns)) {}
  // The row to fill (CopyRows' Add*), then EndRow.
  CopyRows& Row() {
    if (!copy_) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
      copy_.emplace(tx_, table_, columns_.begin(), columns_.end());
#pragma GCC diagnostic pop
    }
    return rows_;
  }
  void EndRow() {
    rows_.EndRow();
    if (rows_.text().size() >= kPiece) Send();
  }
  // Sends the rest and ends the COPY; errors (a unique violation) surface here.
  void Finish() {
    if (!copy_) return;
    Send();
    copy_->complete();
    copy_.reset();
  }
  // Sends the rows built so far (the server inserts them while the caller does something else
  // before Finish).
  void Send() {
    if (rows_.text().empty()) return;
    copy_->write_raw_line(rows_.text());
    rows_.ClearText();
  }

 private:
  static constexpr size_t kPiece = 64 * 1024;
  pqxx::transaction_base& tx_;
  std::string table_;
  std::vector<std::string> columns_;
  CopyRows rows_;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  std::optional<pqxx::tablewriter> copy_;
#pragma GCC diagnostic pop
};

// Messages for the relay, collected for one COPY: a job's launch request (with the job and the
// time it became ready, for pending_launch and the event-to-launch histogram) and the others
// (dead letters, program events trigd publishes, retried launches, time ticks). As a JSON
// document for jsonb_to_recordset, every payload (itself JSON) would be escaped into a string by
// trigd and parsed twice by the server, a tenth of trigd's CPU in a storm.
class OutboxRows {
 public:
  // as_arrays: for checker_writes (TakeColumns) instead of a COPY (InsertInto).
  explicit OutboxRows(bool as_arrays = false) : rows_(kOutbox.columns.size(), as_arrays) {}
  void Add(std::string_view topic, std::string_view key, std::string_view payload) {
    AddMessage(topic, key, payload);
    for (int i = 0; i < 5; ++i) rows_.AddNull();
    rows_.EndRow();
  }
  // A launch request: its template (LaunchRequestTemplate) and its attempt's fields as columns,
  // placed by the relay at publish time (ClaimOutbox). A first attempt's comes with its job and
  // the time it became ready; a retry's without. `launched_at`: a.launched_at already formatted
  // (FormatTime), when the caller has it (the checker: its transaction's now, once per batch).
  void AddLaunch(std::string_view topic, std::string_view key, std::string_view request_template,
                 const LaunchAttempt& a, std::optional<int64_t> job_id = std::nullopt, std::string_view ready_at = {},
                 std::string_view launched_at = {}) {
    AddMessage(topic, key, request_template);
    job_id ? rows_.AddInt(*job_id) : rows_.AddNull();
    job_id ? rows_.AddText(ready_at) : rows_.AddNull();
    rows_.AddInt(a.attempt);
    launched_at.empty() ? rows_.AddText(FormatTime(a.launched_at)) : rows_.AddText(launched_at);
    rows_.AddInt(a.heartbeat_timeout.count());
    rows_.EndRow();
  }
  // A message that no transaction waits for and nothing counts (a tick's copy for observers):
  // with others for its topic in one row (outbox_bundle.h), at most kBundleMessages each.
  void AddToBundle(const std::string& topic, std::string_view key, std::string_view payload) {
    auto& [count, bundles] = bundles_[topic];
    if (count % kBundleMessages == 0) bundles.emplace_back();
    AppendToBundle(bundles.back(), key, payload);
    ++count;
  }
  // The COPY, for rows not built as arrays, and the bundles.
  void InsertInto(pqxx::transaction_base& tx) {
    if (!rows_.as_arrays() && rows_.rows() > 0) CopyIn(tx, kOutbox.name, kOutbox.Names(), rows_.copy());
    if (bundles_.empty()) return;
    SqlArray topics, payloads;
    for (const auto& [topic, entry] : bundles_) {
      for (const std::string& bundle : entry.second) {
        topics.AddText(topic);
        payloads.AddText(bundle);
      }
    }
    tx.exec_params("INSERT INTO outbox (topic, payload, bundle) SELECT unnest($1::text[]), unnest($2::text[]), true",
                   topics.Take(), payloads.Take());
  }
  // The rows for checker_writes (bundles go only by InsertInto).
  TableRows& rows() { return rows_; }

 private:
  void AddMessage(std::string_view topic, std::string_view key, std::string_view payload) {
    rows_.AddText(topic);
    rows_.AddText(key);
    rows_.AddText(payload);
  }
  TableRows rows_;
  std::map<std::string, std::pair<size_t, std::vector<std::string>>> bundles_;  // topic: messages, bundles
};

// Runs ended (or were given up), per schedule and per group: the slots they free.
struct EndedRuns {
  std::map<int64_t, int> per_schedule;
  std::map<std::string, int> per_group;
  explicit EndedRuns(const std::vector<EndedRun>& ended) {
    for (const EndedRun& e : ended) {
      ++per_schedule[e.schedule_id];
      if (e.group) ++per_group[*e.group];
    }
  }
};

// Decrements the run counters of ended runs: schedules first, then groups, each in sorted
// order, the order the checker locks them in.
void DecrementCounters(pqxx::transaction_base& tx, const EndedRuns& e);
// Makes the waiting jobs of ended runs' schedules and groups due now (see pg_rows.cc).
void WakeWaitingJobs(pqxx::transaction_base& tx, const EndedRuns& e, const std::vector<int64_t>& claimed = {});
// Frees the slots of ended runs and wakes the jobs waiting on them (see pg_rows.cc).
void ReleaseRuns(pqxx::transaction_base& tx, const std::vector<EndedRun>& ended);

// Every statement PgStore::Connect prepares, by name.
const std::vector<std::pair<std::string, std::string>>& PreparedStatements();

}  // namespace pg_internal
}  // namespace trigd
