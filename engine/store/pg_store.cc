#include "store/pg_store.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <pqxx/pqxx>
#include <pqxx/tablewriter>

#include "common/check.h"
#include "common/json_text.h"
#include "core/arg_template.h"
#include "core/constraint_checker.h"
#include "core/cron.h"
#include "core/envelope.h"
#include "core/launch_request.h"
#include "core/run_lifecycle.h"
#include "core/schedule_parser.h"
#include "core/trigger_eval.h"
#include "store/outbox_bundle.h"
#include "store/pg_internal.h"
#include "store/sql_array.h"

namespace trigd {

using nlohmann::json;
using pg_internal::AppendToBundle;
using pg_internal::CopyRows;
using pg_internal::FromMillis;
using pg_internal::Guard;
using pg_internal::kBundleMessages;
using pg_internal::OpenTransaction;
using pg_internal::ParseBundle;
using pg_internal::Sql;
using pg_internal::SqlArray;
using pg_internal::SqlIn;
using pg_internal::TableRows;
using pg_internal::ToMillis;
using pg_internal::ValidText;

// The transaction's now(), read once: in milliseconds for decisions, and exactly, as text and
// as JSON, for rows copied in (a run launched in the transaction that ended the run before it
// carries the very same instant).
#define TRIGD_CLOCK TRIGD_MS("now()") ", now()::text, to_json(now())::text"

// The positions' compare-and-set and the de-duplication ids, `seen` being how an id recorded
// before is met ("" fails the statement, " ON CONFLICT DO NOTHING" skips it). DISTINCT: a batch
// may carry an id twice.
#define TRIGD_OFFSETS_CAS(seen)                                                                           \
  "WITH x AS (SELECT * FROM unnest($2::text[], $3::int[], $4::bigint[], $5::bigint[]) "                   \
  "AS x(topic, partition, first_offset, next_offset)), "                                                  \
  "moved AS (INSERT INTO consumer_offsets AS o (group_id, topic, partition, next_offset) "                \
  "SELECT $1, topic, partition, next_offset FROM x ON CONFLICT (group_id, topic, partition) DO UPDATE "   \
  "SET next_offset = EXCLUDED.next_offset, updated_at = now() "                                           \
  "WHERE o.next_offset <= (SELECT first_offset FROM x WHERE x.topic = EXCLUDED.topic "                    \
  "AND x.partition = EXCLUDED.partition) RETURNING 1), "                                                  \
  "seen AS (INSERT INTO seen_events (id) SELECT u.id COLLATE \"C\" FROM unnest($6::text[]) AS u(id)" seen \
  " RETURNING id) "                                                                                       \
  "SELECT " TRIGD_CLOCK                                                                                   \
  ", (SELECT count(*) FROM moved), (SELECT coalesce(json_agg(id), '[]') FROM seen)::text, "               \
  "(SELECT coalesce(max(seq), 0) FROM schedule_changes)"
struct PgStore::TxContext {
  TxContext(pqxx::transaction_base& tx, const pqxx::row& clock)
      : tx(tx),
        now(FromMillis(clock[0].as<int64_t>())),
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

// The checker's claim: due jobs in priority order, locked (SKIP LOCKED: checkers never take the
// same job). Columns as CheckJobs reads them.
std::string ClaimColumnsSql() {
  return "SELECT id, schedule_id, schedule_version, state, "
         "CASE WHEN state = " + Sql(JobState::kPendingTrigger) + " THEN trigger_state::text END, triggered_by::text, "
         TRIGD_MS("opened_at") ", " TRIGD_MS("ready_at") ", coalesce(last_decision, ''), "
         "coalesce(ready_at, opened_at)::text, priority FROM jobs WHERE next_check_at <= now() ";
}
#define TRIGD_CLAIM_ORDER "ORDER BY priority DESC, ready_at NULLS LAST, id LIMIT $1 FOR UPDATE SKIP LOCKED"
// The fast path's claim: only the due jobs of the batch's schedules ($2) and the waiting jobs of
// their concurrency groups ($3), found through the indexes on pending jobs by schedule and group
// and then sorted; a job of another schedule that is due only for its timeout needs no slot of
// the group and is the checker loop's. A plain filter on the claim above let the planner walk
// jobs_claim in priority order past every due job of other schedules (40 ms per batch with
// 200,000 due; the plan is generic, made without the arrays' sizes).
std::string ClaimForSql() {
  return ClaimColumnsSql() +
         "AND id = ANY(ARRAY("
         "SELECT id FROM jobs WHERE state = " +
         Sql(JobState::kPendingTrigger) +
         " AND schedule_id = ANY($2::bigint[]) "
         "AND next_check_at <= now() UNION ALL "
         "SELECT id FROM jobs WHERE state = " +
         Sql(JobState::kPendingConstraint) +
         " AND schedule_id = ANY($2::bigint[]) "
         "AND next_check_at <= now() UNION ALL "
         "SELECT id FROM jobs WHERE state = " +
         Sql(JobState::kPendingConstraint) +
         " AND concurrency_group = ANY($3::text[]) "
         "AND next_check_at <= now())) " TRIGD_CLAIM_ORDER;
}

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
// A job decided when opened (the fast path), inserted in its decided state.
const Table kDecidedJobs{"jobs",
                         {{"id", "bigint"},
                          {"schedule_id", "bigint"},
                          {"schedule_name", "text"},
                          {"schedule_version", "int"},
                          {"state", "text"},
                          {"priority", "int"},
                          {"trigger_state", "jsonb"},
                          {"triggered_by", "jsonb"},
                          {"history", "jsonb"},
                          {"opened_at", "timestamptz"},
                          {"first_event_at", "timestamptz"},
                          {"ready_at", "timestamptz"},
                          {"next_check_at", "timestamptz"},
                          {"concurrency_group", "text"},
                          {"last_decision", "text"},
                          {"forced", "boolean"},
                          {"discard_reason", "text"},
                          {"finished_at", "timestamptz"}}};
const Table kRuns{"runs",
                  {{"run_id", "text"},
                   {"job_id", "bigint"},
                   {"schedule_id", "bigint"},
                   {"schedule_name", "text"},
                   {"program", "text"},
                   {"target", "text"},
                   {"concurrency_group", "text"},
                   {"state", "text"},
                   {"attempt", "int"},
                   {"max_attempts", "int"},
                   {"heartbeat_timeout_ms", "bigint"},
                   {"launched_at", "timestamptz"},
                   {"last_seen_at", "timestamptz"},
                   {"request", "text"},
                   {"history", "jsonb"},
                   {"attempt_launched_at", "timestamptz"}}};
const Table kOutbox{"outbox",
                    {{"topic", "text"},
                     {"key", "text"},
                     {"payload", "text"},
                     {"job_id", "bigint"},
                     {"ready_at", "timestamptz"},
                     {"attempt", "int"},
                     {"launched_at", "timestamptz"},
                     {"heartbeat_timeout_ms", "bigint"}}};
// checker_writes' parameters: the counters and stored jobs' changes, then the columns of
// kDecidedJobs, kRuns and kOutbox, in that order.
constexpr int kCheckerWritesFixedParams = 12;
// Up to this many jobs checked in one transaction, its rows go as arrays (TableRows): a COPY's
// two round trips cost more than the arrays' parsing until well past it.
constexpr size_t kRowsAsArraysLimit = 64;
// Up to this many bytes of arguments, checker_writes rides on the ingest transaction's COMMIT.
constexpr size_t kDeferredWritesLimit = 64 * 1024;

// The checker's writes in one statement (data-modifying CTEs; empty arrays make a part a
// no-op): run counters, group counters, rows inserted from arrays (TableRows), stored jobs.
std::string CheckerWritesSql() {
  int param = kCheckerWritesFixedParams + 1;
  std::string inserts;
  for (const Table* t : {&kDecidedJobs, &kRuns, &kOutbox}) {
    inserts += ", new_" + std::string(t->name) + " AS (" + t->InsertFromArrays(param) + ")";
    param += static_cast<int>(t->columns.size());
  }
  return "WITH counters AS (UPDATE schedule_runtime r SET active_runs = x.active, "
         "last_launch_at = to_timestamp(x.last / 1000.0) "
         "FROM unnest($1::bigint[], $2::int[], $3::bigint[]) AS x(id, active, last) "
         "WHERE r.schedule_id = x.id), "
         "group_counters AS (UPDATE group_runtime g SET active_runs = x.active "
         "FROM unnest($4::text[], $5::int[]) AS x(name, active) WHERE g.name = x.name)" +
         inserts +
         " UPDATE jobs j SET state = x.state, "
         "next_check_at = CASE WHEN x.state IN " +
         SqlIn(JobState::kPendingTrigger, JobState::kPendingConstraint) +
         " "
         "  THEN to_timestamp(x.next_check_at / 1000.0) END, "
         "last_decision = coalesce(x.decision, j.last_decision), forced = coalesce(x.forced, j.forced), "
         "discard_reason = x.reason, "
         "finished_at = CASE WHEN x.state IN " +
         SqlIn(JobState::kDiscarded, JobState::kLaunched) +
         " THEN now() END, "
         "history = CASE WHEN x.history IS NULL THEN j.history ELSE trigd_append_history(j.history, x.history) END "
         "FROM unnest($6::bigint[], $7::text[], $8::bigint[], $9::text[], $10::boolean[], $11::text[], $12::jsonb[]) "
         "AS x(id, state, next_check_at, decision, forced, reason, history) WHERE j.id = x.id";
}

// Statements on the path of every event and launch, prepared once per connection: parsing them
// on every call cost up to half a millisecond each (log_min_duration_statement). Their generic
// plans are made anew every second (PgStore::Connect, RenewPlans): a cached plan goes stale as
// the tables grow.
const std::vector<std::pair<std::string, std::string>>& PreparedStatements() {
  static const auto* statements = new std::vector<std::pair<std::string, std::string>>{
      {"claim_for", ClaimForSql()},
      // The same, and ids for $4 fresh jobs from the jobs sequence in the same round trip (their
      // runs and launch requests refer to them): rows with the 12th column set are those ids. And
      // the run counters of the claimed jobs' schedules and of $2, locked in schedule order (as
      // lock_counters): rows with the last three columns set.
      {"claim_for_fresh",
       "WITH due AS (" + ClaimForSql() +
           "), "
           "counters AS (SELECT schedule_id, active_runs, " TRIGD_MS(
               "last_launch_at") " AS last_ms FROM schedule_runtime "
                                 "WHERE schedule_id = ANY(ARRAY(SELECT schedule_id FROM due UNION SELECT "
                                 "unnest($2::bigint[]))) "
                                 "ORDER BY schedule_id FOR UPDATE) "
                                 "SELECT *, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint FROM due UNION ALL "
                                 "SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
                                 "nextval('jobs_id_seq'), NULL, NULL, NULL "
                                 "FROM generate_series(1, $4) UNION ALL "
                                 "SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
                                 "schedule_id, active_runs, last_ms "
                                 "FROM counters"},
      // Every position of the batch in one statement: a compare-and-set per partition (the stored
      // offset must not be past the batch's first), the count of those that moved, and the clock;
      // and the de-duplication ids of its events ($6), recorded, those not seen before back as a
      // JSON array. One round trip (a fenced batch is rolled back whole, its ids with it).
      // Two forms (see ApplyBatch): a plain insert of the ids, which fails on an id seen before,
      // and the same with ON CONFLICT DO NOTHING, which skips it but costs the server twice as
      // much per id (a speculative insertion: 3.7-4.2 us against 2.0 us a row here).
      {"offsets_cas", TRIGD_OFFSETS_CAS("")},
      {"offsets_cas_on_conflict", TRIGD_OFFSETS_CAS(" ON CONFLICT DO NOTHING")},
      {"schedule_versions_share",
       "SELECT id, version FROM schedules WHERE id = ANY($1::bigint[]) AND state = 'active' FOR SHARE"},
      // The active schedules of $1, share-locked (an update or delete waits for the batch), and
      // their open jobs, locked, in one round trip: rows with schedule_id NULL are schedules (id,
      // version), the others jobs. The jobs' lookup takes the schedules' ids as an array (an
      // index scan on jobs_one_open, as for a parameter).
      {"schedules_and_open_jobs",
       "WITH s AS (SELECT id, version FROM schedules WHERE id = ANY($1::bigint[]) AND state = 'active' FOR SHARE), "
       "j AS (SELECT id, schedule_id, schedule_version, trigger_state::text AS trigger_state, "
       "triggered_by::text AS triggered_by, " TRIGD_MS(
           "opened_at") " AS opened_ms FROM jobs "
                        "WHERE schedule_id = ANY(ARRAY(SELECT id FROM s)) AND state = " +
           Sql(JobState::kPendingTrigger) +
           " ORDER BY id FOR UPDATE) "
           "SELECT id, version, NULL::bigint, NULL::text, NULL::text, NULL::bigint FROM s UNION ALL "
           "SELECT id, schedule_version, schedule_id, trigger_state, triggered_by, opened_ms FROM j"},
      {"lock_counters", "SELECT schedule_id, active_runs, " TRIGD_MS(
                            "last_launch_at") " FROM schedule_runtime "
                                              "WHERE schedule_id = ANY($1::bigint[]) ORDER BY schedule_id FOR UPDATE"},
      {"checker_writes", CheckerWritesSql()},
      // Whether any active schedule's time trigger is due (TickTimeTriggers' look before its
      // transaction). A suspended schedule's trigger is out of the due range (next_fire_at
      // 'infinity' from its suspension on); the state filter also covers those suspended before.
      {"time_trigger_due",
       "SELECT EXISTS (SELECT 1 FROM time_triggers t JOIN schedules s ON s.id = t.schedule_id "
       "WHERE t.next_fire_at <= now() AND s.state = 'active')"},
      // The relay's claim of messages to publish (ClaimOutbox; SKIP LOCKED: relays never take the
      // same), with a launch request's age for the event-to-launch histogram: up to $1 single
      // messages and $2 bundles (outbox_bundle.h; through their own partial index).
      {"outbox_claim",
       "WITH single AS (SELECT id, topic, coalesce(key, ''), payload, extract(epoch from now() - ready_at)::float8, "
       "false, attempt, " TRIGD_MS(
           "launched_at") ", heartbeat_timeout_ms "
                          "FROM outbox WHERE NOT bundle ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED), "
                          "bundled AS (SELECT id, topic, '', payload, NULL::float8, true, NULL::int, NULL::bigint, "
                          "NULL::bigint "
                          "FROM outbox WHERE bundle ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED) "
                          "SELECT * FROM single UNION ALL SELECT * FROM bundled ORDER BY 1"},
  };
  return *statements;
}

std::shared_ptr<const Schedule> ScheduleCache::Find(int64_t id, int version) const {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.first != version) return nullptr;
  return it->second.second;
}

std::shared_ptr<const Schedule> ScheduleCache::Get(int64_t id, int version, const std::string& document) {
  if (auto found = Find(id, version)) return found;
  json doc = json::parse(document, nullptr, false);
  if (doc.is_discarded()) return nullptr;
  ParsedSchedule parsed = ParseSchedule(doc);
  if (!parsed.ok()) return nullptr;
  if (entries_.size() >= capacity_) entries_.clear();
  auto s = std::make_shared<const Schedule>(std::move(parsed.schedule));
  entries_[id] = {version, s};
  return s;
}

namespace {

// The wait before attempt `attempt` + 1: exponential from `backoff`, capped at `max_backoff`.
// The product is only computed when it is below the cap (backoff can be kMaxDuration, 3.2e11 ms,
// which times 2^30 would wrap int64).
Millis RetryWait(const RetryPolicy& retry, int64_t attempt) {
  const int shift = static_cast<int>(std::clamp<int64_t>(attempt - 1, 0, 30));
  if (retry.backoff.count() < 0 || retry.backoff.count() > (retry.max_backoff.count() >> shift))
    return retry.max_backoff;
  return retry.backoff * (int64_t{1} << shift);
}

// The time trigger a time_triggers row names (its leaf, in TriggerLeaves' numbering); null when
// the schedule's definition has no time leaf there (a row older than the definition read).
const TimeTrigger* TimeLeaf(const Schedule& s, int leaf) {
  std::vector<const Trigger*> leaves = TriggerLeaves(s.trigger);
  if (leaf < 0 || static_cast<size_t>(leaf) >= leaves.size() || leaves[leaf]->kind != TriggerKind::kTime)
    return nullptr;
  return &leaves[leaf]->time;
}

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
std::string JsonArray(const std::vector<std::string>& entries) {
  JsonArrayText a;
  for (const std::string& e : entries) a.Raw(e);
  return a.Take();
}

// A job's triggering events as stored (and carried into its launch request), into out.
void TriggeredByJson(const std::vector<TriggeringEvent>& events, std::string& out) {
  out = "[";
  for (size_t i = 0; i < events.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"id\":";
    AppendJsonString(out, events[i].id);
    out += ",\"payload\":";
    out += events[i].payload.dump();
    out += ",\"type\":";
    AppendJsonString(out, events[i].type);
    out += '}';
  }
  out += ']';
}

// COPY of `rows` into `table`, sent in one piece: pqxx 6.4's stream_to takes a tuple per row
// and copies and escapes each field into strings of its own (a third of trigd's CPU on the
// ingest path); tablewriter::write_raw_line passes a buffer through, and COPY takes any number
// of lines per piece of data. Errors (a unique violation) surface here, as of an INSERT.
void CopyIn(pqxx::transaction_base& tx, const std::string& table, const std::vector<std::string>& columns,
            const CopyRows& rows) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  pqxx::tablewriter copy(tx, table, columns.begin(), columns.end());
#pragma GCC diagnostic pop
  copy.write_raw_line(rows.text());
  copy.complete();
}

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

bool IsFinal(ProgramStatus s) {
  return s == ProgramStatus::kSucceeded || s == ProgramStatus::kFailed || s == ProgramStatus::kKilled;
}

// The schedules of `versions` (id, version: active, read in this transaction), from the cache
// or, for those not in it at that version, from their documents.
std::map<int64_t, ScheduleView> ResolveSchedules(pqxx::transaction_base& tx, ScheduleCache& cache,
                                                 const std::vector<std::pair<int64_t, int>>& versions) {
  std::map<int64_t, ScheduleView> out;
  std::vector<int64_t> misses;
  for (const auto& [id, version] : versions) {
    if (auto s = cache.Find(id, version)) {
      out[id] = {id, version, s};
    } else {
      misses.push_back(id);
    }
  }
  if (!misses.empty()) {
    for (const auto& r : tx.exec_params("SELECT id, version, document::text FROM schedules "
                                        "WHERE id = ANY($1::bigint[])",
                                        IntArray(misses))) {
      int64_t id = r[0].as<int64_t>();
      int version = r[1].as<int>();
      if (auto s = cache.Get(id, version, r[2].as<std::string>())) out[id] = {id, version, s};
    }
  }
  return out;
}

// Loads the named schedules (active only), parsing documents not in the cache, with a share
// lock: an update, suspend or delete waits for this transaction and vice versa, so a batch
// never applies events under a definition that was already replaced.
std::map<int64_t, ScheduleView> LoadSchedules(pqxx::transaction_base& tx, ScheduleCache& cache,
                                              const std::set<int64_t>& ids) {
  if (ids.empty()) return {};
  std::vector<std::pair<int64_t, int>> versions;
  for (const auto& r : tx.exec_prepared("schedule_versions_share", IntArray(ids))) {
    versions.emplace_back(r[0].as<int64_t>(), r[1].as<int>());
  }
  return ResolveSchedules(tx, cache, versions);
}

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
  // the time it became ready; a retry's without.
  void AddLaunch(std::string_view topic, std::string_view key, std::string_view request_template,
                 const LaunchAttempt& a, std::optional<int64_t> job_id = std::nullopt, std::string_view ready_at = {}) {
    AddMessage(topic, key, request_template);
    job_id ? rows_.AddInt(*job_id) : rows_.AddNull();
    job_id ? rows_.AddText(ready_at) : rows_.AddNull();
    rows_.AddInt(a.attempt);
    rows_.AddText(FormatTime(a.launched_at));
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
void DecrementCounters(pqxx::transaction_base& tx, const EndedRuns& e) {
  for (const auto& [id, n] : e.per_schedule) {
    tx.exec_params("UPDATE schedule_runtime SET active_runs = greatest(active_runs - $2, 0) WHERE schedule_id = $1", id,
                   n);
  }
  for (const auto& [name, n] : e.per_group) {
    tx.exec_params("UPDATE group_runtime SET active_runs = greatest(active_runs - $2, 0) WHERE name = $1", name, n);
  }
}

}  // namespace

void pg_internal::DecrementRunCounters(pqxx::transaction_base& tx, const std::vector<EndedRun>& ended) {
  DecrementCounters(tx, EndedRuns(ended));
}

namespace {

// Makes the waiting jobs of ended runs' schedules and groups due now (those not due already, nor
// in `claimed`, which the caller decides itself). Waiting jobs another transaction holds right
// now are skipped, so this never waits; that is safe only once the caller holds the counter rows
// of the ended runs: a checker holding such a job then either committed first (and the job is
// free here) or is queued behind those locks and will see the freed slots. Woken before the
// counters were locked (to let the fast path's claim take them), a job held by another
// instance's check that had read the counters full would be skipped and written back to wait
// 30 s while the slot stayed free: the fast path wakes again after.
void WakeWaitingJobs(pqxx::transaction_base& tx, const EndedRuns& e, const std::vector<int64_t>& claimed = {}) {
  std::vector<int64_t> ids;
  for (const auto& [id, n] : e.per_schedule) ids.push_back(id);
  json groups = json::array();
  for (const auto& [name, n] : e.per_group) groups.push_back(name);
  tx.exec_params(
      "UPDATE jobs SET next_check_at = now() WHERE id IN (SELECT id FROM jobs WHERE state = " +
          Sql(JobState::kPendingConstraint) +
          " "
          "AND next_check_at > now() AND id <> ALL($3::bigint[]) "
          "AND (schedule_id = ANY($1::bigint[]) OR concurrency_group IN (SELECT jsonb_array_elements_text($2::jsonb))) "
          "FOR UPDATE SKIP LOCKED)",
      IntArray(ids), groups.dump(), IntArray(claimed));
}

// Frees the slots of ended runs and wakes the jobs waiting on them, in a transaction that
// locks no other counter row afterwards (the run sweep; ingest without the fast path). One
// that goes on to check jobs leaves the decrement to CheckJobs (CheckFilter::ended), which
// takes every counter lock in one order: releasing first and then locking the checked jobs'
// counters would take schedules and groups twice, out of order, and deadlock with the checkers
// (docs/adr/0015-run-counter-lock-order.md).
void ReleaseRuns(pqxx::transaction_base& tx, const std::vector<EndedRun>& ended) {
  if (ended.empty()) return;
  const EndedRuns e(ended);
  DecrementCounters(tx, e);
  WakeWaitingJobs(tx, e);
}

}  // namespace

PgStore::PgStore(std::unique_ptr<Conn> c, std::string topic_prefix)
    : conn_(std::move(c)), topics_(std::move(topic_prefix)) {}
PgStore::~PgStore() = default;

Result<std::unique_ptr<PgStore>> PgStore::Connect(const std::string& pg, const std::string& topic_prefix) {
  auto c = pg_internal::Connect(pg);
  if (!c.ok()) return c.status();
  for (const auto& [name, sql] : PreparedStatements()) (*c)->prepare(name, sql);
  // The prepared statements run on one generic plan each, made anew every kPlanLifetime
  // (RenewPlans) for the tables as they are then. Planning every execution for its own
  // arguments (force_custom_plan) costs 0.1-0.4 ms per statement, a large share of a single
  // event's ingest transaction. A plan kept for good goes wrong: PostgreSQL's own choice (auto)
  // caches a generic plan made while `jobs` is empty, which then hashes the whole grown table
  // for every batch of checker writes until an autoanalyze (a storm stalls for minutes). A plan
  // made anew uses the tables' current size in pages, so a plan made for an empty table lasts a
  // second at most (docs/adr/0030-generic-plans-renewed.md).
  (*c)->set_variable("plan_cache_mode", "force_generic_plan");
  return std::unique_ptr<PgStore>(new PgStore(std::make_unique<Conn>(std::move(*c)), topic_prefix));
}

void PgStore::RenewPlans() {
  const auto now = std::chrono::steady_clock::now();
  if (now - plans_made_ < kPlanLifetime) return;
  // Drops every cached plan of this connection; the statements stay prepared.
  pqxx::nontransaction(*conn_->c).exec("DISCARD PLANS");
  plans_made_ = now;
}

Result<std::string> PgStore::ExplainPrepared(const std::string& name, int params) {
  return Guard([&]() -> Result<std::string> {
    RenewPlans();
    conn_->c->prepare_now(name);  // libpqxx prepares on first use
    std::string sql = "EXPLAIN EXECUTE " + name + "(";
    for (int i = 0; i < params; ++i) sql += i == 0 ? "NULL" : ", NULL";
    pqxx::nontransaction tx(*conn_->c);
    std::string plan;
    for (const auto& r : tx.exec(sql + ")")) plan += r[0].as<std::string>() + "\n";
    return plan;
  });
}

Result<ScheduleChanges> PgStore::LoadScheduleChanges(int64_t after_seq) {
  return Guard([&]() -> Result<ScheduleChanges> {
    pqxx::read_transaction tx(*conn_->c);
    ScheduleChanges out;
    out.last_seq = tx.exec1("SELECT coalesce(max(seq), 0) FROM schedule_changes")[0].as<int64_t>();
    if (after_seq == 0) {
      // Start-up: every active schedule's keys in one ordered scan (1M schedules load in
      // seconds; rows of one schedule are adjacent, so no map is needed).
      for (const auto& r : tx.exec("SELECT t.schedule_id, t.event_key FROM schedule_triggers t "
                                   "JOIN schedules s ON s.id = t.schedule_id WHERE s.state = 'active' "
                                   "ORDER BY t.schedule_id")) {
        int64_t id = r[0].as<int64_t>();
        if (out.schedules.empty() || out.schedules.back().id != id) out.schedules.push_back({id, true, {}});
        out.schedules.back().event_keys.push_back(r[1].as<std::string>());
      }
      return out;
    }
    if (out.last_seq == after_seq) return out;
    // Changed schedules: removed unless they still have active keys.
    std::map<int64_t, ScheduleKeys> keys;
    for (const auto& r :
         tx.exec_params("SELECT DISTINCT schedule_id FROM schedule_changes WHERE seq > $1 AND seq <= $2", after_seq,
                        out.last_seq)) {
      int64_t id = r[0].as<int64_t>();
      keys[id] = {id, false, {}};
    }
    std::vector<int64_t> ids;
    for (const auto& [id, k] : keys) ids.push_back(id);
    for (const auto& r : tx.exec_params(
             "SELECT t.schedule_id, t.event_key FROM schedule_triggers t JOIN schedules s ON s.id = t.schedule_id "
             "WHERE s.state = 'active' AND t.schedule_id = ANY($1::bigint[])",
             IntArray(ids))) {
      ScheduleKeys& k = keys[r[0].as<int64_t>()];
      k.active = true;
      k.event_keys.push_back(r[1].as<std::string>());
    }
    out.schedules.reserve(keys.size());
    for (auto& [id, k] : keys) out.schedules.push_back(std::move(k));
    return out;
  });
}

Result<std::vector<std::optional<int64_t>>> PgStore::LoadOffsets(
    const std::string& group, const std::vector<std::pair<std::string, int>>& parts) {
  return Guard([&]() -> Result<std::vector<std::optional<int64_t>>> {
    pqxx::read_transaction tx(*conn_->c);
    std::vector<std::optional<int64_t>> out;
    for (const auto& [topic, partition] : parts) {
      auto r =
          tx.exec_params("SELECT next_offset FROM consumer_offsets WHERE group_id=$1 AND topic=$2 AND partition=$3",
                         group, topic, partition);
      out.push_back(r.empty() ? std::nullopt : std::optional<int64_t>(r[0][0].as<int64_t>()));
    }
    return out;
  });
}

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
  json recorded;
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

// Event ids go in by a plain insert, which fails on an id recorded before (a producer's re-send,
// or the same id racing in from another instance, once that one commits); the batch then runs
// again at once with ON CONFLICT DO NOTHING, and so do the next kOnConflictBatches batches (a
// producer replaying a topic re-sends many ids in a row).
// A batch that fails in a way no rerun fixes (pg_internal::IsDataError) is applied again
// without the events that fail for their schedules, which are dead-lettered (ApplyIsolating).
Result<IngestResult> PgStore::ApplyBatch(const IngestBatch& batch) {
  std::string data_error;
  Result<IngestResult> r = ApplyBatchOnce(batch, &data_error);
  if (r.ok() || data_error.empty()) return r;
  return ApplyIsolating(batch, data_error);
}

Result<IngestResult> PgStore::ApplyBatchOnce(const IngestBatch& batch, std::string* data_error) {
  const bool on_conflict = on_conflict_batches_ > 0;
  if (on_conflict) --on_conflict_batches_;
  bool seen_before = false;
  Result<IngestResult> r = ApplyBatchTx(batch, on_conflict, seen_before, TxEnd::kCommit, data_error);
  if (!seen_before) return r;
  on_conflict_batches_ = kOnConflictBatches;
  return ApplyBatchTx(batch, true, seen_before, TxEnd::kCommit, data_error);
}

Result<IngestResult> PgStore::ApplyBatchTx(const IngestBatch& batch, bool on_conflict, bool& seen_before, TxEnd end,
                                           std::string* data_error) {
  return Guard(
      [&]() -> Result<IngestResult> {
        RenewPlans();
        std::shared_ptr<void> built;  // ApplyEvents' memory, freed after the commit (declared first)
        OpenTransaction tx(*conn_->c);
        IngestResult result;
        Relevant relevant = FindRelevant(batch, result);
        // Positions first: a compare-and-set on the stored offset fences a consumer that lost its
        // partition in a rebalance but still holds a batch of it. The transaction's now() and the
        // events not seen before come back with them, BEGIN goes with them (round trips less on
        // the path of every event).
        SqlArray topics, partitions, firsts, nexts;
        for (const auto& p : batch.positions) {
          topics.AddText(p.topic);
          partitions.AddInt(p.partition);
          firsts.AddInt(p.first_offset);
          nexts.AddInt(p.next_offset);
        }
        // A producer's tick locks its time trigger's row (CheckProducerTicks): its batch's ids go in
        // here, before that lock, as trigd's tick transaction (which takes the row first) records none.
        relevant.copy_ids = !on_conflict && relevant.ids.size() > kIdsAsArrayLimit && relevant.tick_ids.empty();
        SqlArray ids;
        if (!relevant.copy_ids) {
          for (std::string_view id : relevant.ids) ids.AddText(id);
        }
        pqxx::result positions;
        try {
          positions =
              tx.Begin(on_conflict ? "offsets_cas_on_conflict" : "offsets_cas",
                       {batch.group, topics.Take(), partitions.Take(), firsts.Take(), nexts.Take(), ids.Take()});
        } catch (const pqxx::unique_violation&) {
          if (on_conflict) throw;
          seen_before = true;  // rolled back by tx; ApplyBatch runs the batch again
          return result;
        }
        const pqxx::row clock = positions.at(0);
        if (clock[3].as<size_t>() != batch.positions.size()) {
          tx.Rollback();
          result.fenced = true;
          return result;
        }
        // A schedule applied (or changed) before this transaction began is one the batch's events
        // must meet: an event produced after `trigctl schedules apply` returned would otherwise be
        // counted no_match if trigd had not refreshed its index yet (every 200 ms).
        if (batch.index_seq >= 0 && clock[5].as<int64_t>() > batch.index_seq) {
          tx.Rollback();
          result.stale_index = true;
          return result;
        }
        if (on_conflict) {
          // Only the ids the insert reported are new.
          relevant.recorded = json::parse(clock[4].c_str());
          for (const json& id : relevant.recorded) relevant.fresh.insert(id.get_ref<const std::string&>());
        } else {
          // A plain insert (or COPY) of the ids fails the whole batch if any was recorded before:
          // if the batch gets through, every id is new.
          relevant.fresh.insert(relevant.ids.begin(), relevant.ids.end());
        }
        TxContext ctx(tx.tx(), clock);
        std::vector<std::string> writes;
        ctx.deferred_writes = &writes;  // the fast path's writes are its last statement
        ctx.free_after_commit = &built;
        try {
          ApplyEvents(ctx, batch, relevant, result);
        } catch (const pqxx::unique_violation&) {
          // The ids' COPY met an id recorded before (ApplyEvents runs it): as for the insert above.
          // Another unique violation (a job opened by a racing instance) is met again by the rerun,
          // which then reports it as before.
          if (!relevant.copy_ids) throw;
          seen_before = true;
          return IngestResult{};
        }
        const std::string last = writes.empty() ? std::string() : tx.Execute("checker_writes", writes);
        if (end == TxEnd::kRollback) {
          if (!last.empty()) tx.tx().exec(last);
          tx.Rollback();
          return result;
        }
        tx.Commit(last);
        return result;
      },
      data_error);
}

// De-duplication: only events that can change something (a schedule reached, a run report) are
// recorded; a copy of trigd's own tick (ingestion skips these before they get here) was applied
// by the tick transaction that published it.
PgStore::Relevant PgStore::FindRelevant(const IngestBatch& batch, IngestResult& result) {
  Relevant out;
  result.outcome.assign(batch.events.size(), EventOutcome::kNoMatch);
  out.relevant.assign(batch.events.size(), false);
  std::unordered_set<std::string_view> seen;
  for (size_t i = 0; i < batch.events.size(); ++i) {
    const Event& e = batch.events[i];
    if (!batch.own_ticks && IsOwnTick(e.type, e.id, e.tick.schedule)) {
      result.outcome[i] = EventOutcome::kDuplicate;
      continue;
    }
    bool report = e.type == EventType::kProgram && !e.program.run_id.empty();
    if (!batch.schedule_ids[i].empty() || report) {
      out.relevant[i] = true;
      // Own ticks are recorded nowhere: all are new (the tick's row locks make each unique).
      // Other ids are recorded once each; the first copy of an id in the batch is the one applied.
      if (batch.own_ticks) {
        out.fresh.insert(e.id);
        continue;
      }
      if (e.type == EventType::kTick) {
        out.tick_ids.emplace(i, OwnTickId(e.tick.schedule, FormatTime(e.tick.fire_time)));
      }
      std::string_view key = out.Key(i, e);
      if (seen.insert(key).second) out.ids.push_back(key);
    }
  }
  return out;
}

// A fire time has one identity (SPEC §5), whoever decides it: trigd's checker, or a producer's
// tick on trigd.events.time (a manual run, a backfill), de-duplicated by that identity
// (Relevant::Key). trigd's own ticks record none, so a producer's tick is held against its time
// trigger's row (schema/012):
// - a fire time trigd decided (in (anchor, last_fire_time]) and produced: a duplicate, returned;
// - one it decided and skipped (`not_fired`, the catch-up policy or window): a backfill, applied;
// - one not decided yet: applied, and `ticked_until` tells the checker to look its identity up
//   before producing it (TickTimeTriggers);
// - a time that is not a fire time of the trigger (a run forced now): applied.
// Locks the rows in schedule id order, as the tick transaction takes them first, before the
// schedules and jobs.
std::set<size_t> PgStore::CheckProducerTicks(const TxContext& ctx, const std::vector<AccumulateInput>& inputs) {
  pqxx::transaction_base& tx = ctx.tx;
  std::set<size_t> duplicates;
  SqlArray ids, fires, index;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Event& e = *inputs[k].event;
    if (e.type != EventType::kTick) continue;
    for (int64_t id : inputs[k].schedule_ids) {
      ids.AddInt(id);
      fires.AddInt(ToMillis(e.tick.fire_time));
      index.AddInt(static_cast<int64_t>(k));
    }
  }
  if (ids.empty()) return duplicates;
  pqxx::result rows = tx.exec_params(
      "SELECT x.k, t.schedule_id, s.version, " TRIGD_MS("t.anchor") ", " TRIGD_MS("t.last_fire_time") ", "
      "t.not_fired @> to_timestamp(x.f / 1000.0), t.leaf "
      "FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS x(id, f, k) "
      "JOIN time_triggers t ON t.schedule_id = x.id JOIN schedules s ON s.id = t.schedule_id AND s.state = 'active' "
      "ORDER BY t.schedule_id FOR UPDATE OF t",
      ids.Take(), fires.Take(), index.Take());
  std::map<int64_t, int64_t> claims;  // schedule id -> latest undecided fire time applied (ms)
  for (const auto& r : rows) {
    const size_t k = r[0].as<size_t>();
    const int64_t id = r[1].as<int64_t>();
    const int version = r[2].as<int>();
    std::shared_ptr<const Schedule> s = cache_.Find(id, version);
    if (!s) {
      s = cache_.Get(id, version,
                     tx.exec_params1("SELECT document::text FROM schedules WHERE id = $1", id)[0].as<std::string>());
      if (!s) continue;
    }
    const TimeTrigger* tt = TimeLeaf(*s, r[6].as<int>());
    if (!tt) continue;
    const TimePoint fire = inputs[k].event->tick.fire_time;
    const TimePoint anchor = FromMillis(r[3].as<int64_t>());
    if (fire <= anchor || NextFireTime(*tt, anchor, fire - Millis(1)) != fire) continue;
    if (!r[4].is_null() && fire <= FromMillis(r[4].as<int64_t>())) {
      if (!r[5].as<bool>()) duplicates.insert(k);
    } else {
      int64_t& latest = claims.try_emplace(id, ToMillis(fire)).first->second;
      latest = std::max(latest, ToMillis(fire));
    }
  }
  if (!claims.empty()) {
    SqlArray claim_ids, claim_fires;
    for (const auto& [id, fire] : claims) {
      claim_ids.AddInt(id);
      claim_fires.AddInt(fire);
    }
    tx.exec_params(
        "UPDATE time_triggers t SET ticked_until = greatest(t.ticked_until, to_timestamp(x.f / 1000.0)) "
        "FROM unnest($1::bigint[], $2::bigint[]) AS x(id, f) WHERE t.schedule_id = x.id",
        claim_ids.Take(), claim_fires.Take());
  }
  return duplicates;
}

// A worker reported its attempt failed: when the run's retry policy has attempts left, the run
// waits for the next one (retry_wait, the same backoff as a lost run's; the sweep relaunches it
// with the same run id), and true is returned. Airflow, Temporal and Dagster users expect a
// failure to be retried as `retry` says (docs/adr/0011-worker-failures-are-retried.md).
bool PgStore::RetryFailedAttempt(const TxContext& ctx, const RunReport& rep) {
  pqxx::transaction_base& tx = ctx.tx;
  pqxx::result r = tx.exec_params(
      "SELECT r.attempt, r.schedule_id, s.version, s.document::text FROM runs r "
      // A deleted schedule's run is not retried (nothing of it launches after a delete), and
      // its retry policy is gone with its document: the failure is final.
      "JOIN schedules s ON s.id = r.schedule_id "
      "WHERE r.run_id = $1 AND r.state IN " +
          SqlIn(RunState::kLaunched, RunState::kRunning) +
          " AND ($2 = 0 OR r.attempt = $2) "
          "AND r.program = $3 AND r.attempt < r.max_attempts FOR UPDATE OF r",
      rep.run_id, rep.attempt, rep.program);
  if (r.empty()) return false;
  const int64_t attempt = r[0][0].as<int64_t>();
  RetryPolicy retry;
  if (auto s = cache_.Get(r[0][1].as<int64_t>(), r[0][2].as<int>(), r[0][3].as<std::string>())) retry = s->retry;
  const Millis wait = RetryWait(retry, attempt);
  tx.exec_params(
      "UPDATE runs SET state = " + Sql(RunState::kRetryWait) +
          ", reason = 'failed', last_seen_at = now(), "
          "next_attempt_at = now() + make_interval(secs => $2::bigint / 1000.0), "
          "history = trigd_append_history(history, jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT
          ", "
          "'status', 'failed', 'attempt', attempt, 'retry_in', $3::text))) WHERE run_id = $1",
      rep.run_id, static_cast<int64_t>(wait.count()), FormatDuration(wait));
  return true;
}

// Everything an ingest batch does after its positions: shared by ApplyBatch and by the tick
// (which applies its own ticks, see TickTimeTriggers).
void PgStore::ApplyEvents(const TxContext& ctx, const IngestBatch& batch, Relevant& relevant, IngestResult& result) {
  pqxx::transaction_base& tx = ctx.tx;
  const TimePoint now = ctx.now;
  {
    // The batch's jobs, their trigger states and triggering events, and the schedules' views:
    // freeing those of a 5,000-event batch took 2 ms, with the transaction open and its locks
    // held; a caller that commits next frees them after its COMMIT.
    struct Built {
      std::vector<AccumulateInput> inputs;
      std::map<int64_t, ScheduleView> schedules;
      Accumulation acc;
      std::vector<FreshJob> fresh_jobs;
    };
    auto built = std::make_shared<Built>();
    std::unordered_set<std::string_view>& fresh = relevant.fresh;
    std::vector<AccumulateInput>& inputs = built->inputs;
    std::vector<size_t> input_index;
    std::set<int64_t> reached;
    std::vector<RunReport> reports;
    for (size_t i = 0; i < batch.events.size(); ++i) {
      if (!relevant.relevant[i]) continue;
      const Event& e = batch.events[i];
      // The first copy of an id in the batch wins; later copies are duplicates.
      if (!fresh.erase(relevant.Key(i, e))) {
        result.outcome[i] = EventOutcome::kDuplicate;
        continue;
      }
      if (e.type == EventType::kProgram && !e.program.run_id.empty()) {
        reports.push_back({e.program.run_id, e.program.program, e.program.status, e.program.attempt, i,
                           (e.id.starts_with("lost:") && e.program.reason == "lost") ||
                               (e.id.starts_with("unpublishable:") && e.program.reason == "unpublishable") ||
                               (e.id.starts_with("killed:") && e.program.reason == "schedule_deleted")});
      }
      if (!batch.schedule_ids[i].empty()) {
        inputs.push_back({&e, batch.schedule_ids[i]});
        input_index.push_back(i);
        reached.insert(batch.schedule_ids[i].begin(), batch.schedule_ids[i].end());
      }
    }
    // Drops the inputs of these events (by batch index): no trigger counts them.
    auto drop_inputs = [&](const std::set<size_t>& events, EventOutcome outcome) {
      if (events.empty()) return;
      size_t kept = 0;
      for (size_t k = 0; k < inputs.size(); ++k) {
        if (events.count(input_index[k])) {
          result.outcome[input_index[k]] = outcome;
          continue;
        }
        inputs[kept] = inputs[k];
        input_index[kept++] = input_index[k];
      }
      inputs.resize(kept);
      input_index.resize(kept);
    };
    auto drop_duplicates = [&](const std::set<size_t>& events) { drop_inputs(events, EventOutcome::kDuplicate); };
    if (!batch.own_ticks && !relevant.tick_ids.empty()) {
      std::set<size_t> repeated;
      for (size_t k : CheckProducerTicks(ctx, inputs)) repeated.insert(input_index[k]);
      drop_duplicates(repeated);
    }
    std::map<int64_t, ScheduleView>& schedules = built->schedules;
    std::vector<OpenJob> open;
    if (!reached.empty()) {
      std::vector<std::pair<int64_t, int>> versions;
      for (const auto& r : tx.exec_prepared("schedules_and_open_jobs", IntArray(reached))) {
        if (r[2].is_null()) {
          versions.emplace_back(r[0].as<int64_t>(), r[1].as<int>());
          continue;
        }
        OpenJob job;
        job.id = r[0].as<int64_t>();
        job.schedule_version = r[1].as<int>();
        job.schedule_id = r[2].as<int64_t>();
        job.state = TriggerStateFromJson(json::parse(r[3].c_str()));
        for (const auto& t : json::parse(r[4].c_str())) {
          job.triggered_by.push_back({t.value("id", ""), t.value("type", ""), t.value("payload", json())});
        }
        job.opened_at = FromMillis(r[5].as<int64_t>());
        open.push_back(std::move(job));
      }
      schedules = ResolveSchedules(tx, cache_, versions);
      std::erase_if(open, [&](const OpenJob& job) { return !schedules.count(job.schedule_id); });
    }
    // Run reports first: one that moves no run trigd knows (a worker's repeated or late report,
    // one for an attempt already retried) changes nothing, and no trigger counts it either (it
    // launched the downstream schedule again, and a late failure of a retried attempt killed
    // it). A report for a run trigd does not know (a program it did not launch) counts as sent.
    std::vector<EndedRun> ended;
    std::vector<DeadLetter> refused_letters;  // reports refused here (another program's run)
    // A worker's `failed` report of an attempt that its retry policy retries: applied to the
    // run (retry_wait), but no `program` trigger sees it, as for a lost run's attempts; the last
    // attempt's failure is the one downstream schedules see.
    std::set<size_t> retried;
    if (!reports.empty()) {
      std::vector<size_t> unmoved;
      for (size_t k = 0; k < reports.size(); ++k) {
        const RunReport& rep = reports[k];
        if (rep.status == ProgramStatus::kFailed && !rep.own && RetryFailedAttempt(ctx, rep)) {
          result.outcome[rep.event] = EventOutcome::kApplied;
          retried.insert(rep.event);
          continue;
        }
        bool final_status = IsFinal(rep.status);
        std::string status = ProgramStatusName(rep.status);
        // The state the report moves the run to (model/run.h); the WHERE below is the
        // compare-and-set on the states it may move from.
        const RunState to = RunStateAfterReport(rep.status);
        TRIGD_CHECK(IsAllowedTransition(RunState::kLaunched, to) &&
                    (to == RunState::kRunning || IsAllowedTransition(RunState::kRunning, to)));
        auto r = tx.exec_params(
            "UPDATE runs SET state = $6, last_seen_at = now(), "
            "attempt_started_at = CASE WHEN $2 = 'started' THEN now() ELSE attempt_started_at END, "
            "finished_at = CASE WHEN $3 THEN now() END, reason = CASE WHEN $3 THEN $2 ELSE reason END, "
            "history = CASE WHEN $2 = 'heartbeat' THEN history ELSE trigd_append_history(history, "
            "jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT
            ", 'status', $2::text, 'attempt', attempt))) END "
            "WHERE run_id = $1 AND state IN " +
                SqlIn(RunState::kLaunched, RunState::kRunning) +
                " AND ($4 = 0 OR attempt = $4) AND program = $5 "
                "RETURNING schedule_id, concurrency_group",
            rep.run_id, status, final_status, rep.attempt, rep.program, RunStateName(to));
        if (r.empty()) {
          if (!rep.own) unmoved.push_back(k);
          continue;
        }
        result.outcome[rep.event] = EventOutcome::kApplied;
        if (!final_status) continue;
        ++result.run_outcomes[status];
        ended.push_back({r[0][0].as<int64_t>(),
                         r[0][1].is_null() ? std::nullopt : std::optional<std::string>(r[0][1].as<std::string>())});
      }
      if (!unmoved.empty()) {
        SqlArray run_ids;
        for (size_t k : unmoved) run_ids.AddText(reports[k].run_id);
        std::unordered_map<std::string, std::string> known;  // run id -> its program
        for (const auto& r :
             tx.exec_params("SELECT run_id, program FROM runs WHERE run_id = ANY($1::text[])", run_ids.Take())) {
          known.emplace(r[0].as<std::string>(), r[1].as<std::string>());
        }
        std::set<size_t> stale, refused;
        for (size_t k : unmoved) {
          auto run = known.find(reports[k].run_id);
          if (run == known.end()) continue;
          if (run->second != reports[k].program) {
            // Another program's run: applied, it would end that run and send its outcome down
            // the wrong DAG. Not a report of an unknown run either (those
            // count for triggers as sent): a dead letter, naming both programs.
            const size_t i = reports[k].event;
            const Event& e = batch.events[i];
            const Status why = DeadLetterStatus(DeadLetterReason::kBadField,
                                                "payload.program: run " + reports[k].run_id + " is a run of " +
                                                    run->second + ", not of " + reports[k].program);
            const IngestBatch::Source source = i < batch.sources.size() ? batch.sources[i] : IngestBatch::Source{};
            refused_letters.push_back({e.program.program, DeadLetterJson(why, source.topic, source.partition,
                                                                         source.offset, EnvelopeToJson(e).dump())});
            result.dead_reasons.push_back(DeadLetterReason::kBadField);
            refused.insert(i);
            result.outcome[i] = EventOutcome::kDead;
            continue;
          }
          stale.insert(reports[k].event);
          result.outcome[reports[k].event] = EventOutcome::kDuplicate;
        }
        drop_duplicates(stale);
        drop_inputs(refused, EventOutcome::kDead);
      }
      drop_inputs(retried, EventOutcome::kApplied);
    }
    std::optional<CopyStream> id_copy;
    if (relevant.copy_ids) {
      id_copy.emplace(tx, "seen_events", std::vector<std::string>{"id"});
      for (std::string_view id : relevant.ids) {
        id_copy->Row().AddText(id);
        id_copy->EndRow();
      }
      id_copy->Send();
    }
    Accumulation& acc = built->acc = Accumulate(inputs, schedules, std::move(open), now);
    if (id_copy) id_copy->Finish();
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (acc.applied[k]) result.outcome[input_index[k]] = EventOutcome::kApplied;
    }
    // Changed jobs go back as one array per column (sql_array.h), then new jobs are copied in
    // (COPY: PostgreSQL fills whole heap pages per WAL record, where INSERT writes a record per
    // row; the same path as the append benchmark's baseline). Updates first: a batch that
    // completes a stored open job and opens the next one for the same schedule must move the old
    // row out of pending_trigger before the new row is inserted (jobs_one_open allows one per
    // schedule; the other order violates it on every retry).
    struct {
      SqlArray id, state, trigger_state, triggered_by, history, ready_at, next_check_at, discard_reason;
    } upd;
    std::vector<FreshJob>& fresh_jobs =
        built->fresh_jobs;  // new jobs that are complete: decided before written (fast path)
    std::string text;
    auto next_check_of = [&](const OpenJob& job, const Schedule& s) -> std::optional<TimePoint> {
      if (job.complete) return now;
      if (!job.discarded && s.timeout) return job.opened_at + s.timeout->after;
      return std::nullopt;
    };
    auto state_of = [](const OpenJob& job) {
      return JobStateName(job.discarded  ? JobState::kDiscarded
                          : job.complete ? JobState::kPendingConstraint
                                         : JobState::kPendingTrigger);
    };
    // Written by the COPY below: opened by this batch and not decided by the fast path.
    auto copied = [&](const OpenJob& job) { return job.id == 0 && !(job.complete && fast_path_); };
    for (OpenJob& job : acc.jobs) {
      if (job.id != 0 && !job.changed && !job.discarded && !job.complete) continue;
      if (job.complete) ++result.jobs_ready;
      if (job.discarded) ++result.jobs_discarded;
      if (job.id == 0) ++result.jobs_opened;
      if (copied(job)) continue;
      const Schedule& s = *schedules.at(job.schedule_id).schedule;
      if (job.id == 0) {
        FreshJob& f = fresh_jobs.emplace_back();
        f.schedule_id = job.schedule_id;
        f.version = job.schedule_version;
        f.priority = s.priority;
        f.schedule_name = s.id().value();
        f.trigger_state = TriggerStateToJson(job.state).dump();
        TriggeredByJson(job.triggered_by, f.triggered_by);
        f.history = std::move(job.history);  // written with the decision (CheckJobs)
        f.opened_at = job.opened_at;
        if (s.constraints.concurrency_group) f.group = s.constraints.concurrency_group->name;
        continue;
      }
      const std::optional<TimePoint> next_check = next_check_of(job, s);
      upd.id.AddInt(job.id);
      upd.state.AddText(state_of(job));
      upd.trigger_state.AddText(TriggerStateToJson(job.state).dump());
      TriggeredByJson(job.triggered_by, text);
      upd.triggered_by.AddText(text);
      upd.history.AddText(JsonArray(job.history));
      upd.ready_at.AddIntOrNull(job.complete ? std::optional<int64_t>(ToMillis(now)) : std::nullopt);
      upd.next_check_at.AddIntOrNull(next_check ? std::optional<int64_t>(ToMillis(*next_check)) : std::nullopt);
      if (job.discarded) {
        upd.discard_reason.AddText(job.discard_reason);
      } else {
        upd.discard_reason.AddNull();
      }
    }
    if (!upd.id.empty()) {
      tx.exec_params(
          "UPDATE jobs j SET state = x.state, trigger_state = x.trigger_state, triggered_by = x.triggered_by, "
          "history = trigd_append_history(j.history, x.history), "
          "ready_at = coalesce(to_timestamp(x.ready_at / 1000.0), j.ready_at), "
          "next_check_at = to_timestamp(x.next_check_at / 1000.0), discard_reason = x.discard_reason, "
          "finished_at = CASE WHEN x.state = " +
              Sql(JobState::kDiscarded) +
              " THEN now() END "
              "FROM unnest($1::bigint[], $2::text[], $3::jsonb[], $4::jsonb[], $5::jsonb[], $6::bigint[], "
              "$7::bigint[], "
              "$8::text[]) AS x(id, state, trigger_state, triggered_by, history, ready_at, next_check_at, "
              "discard_reason) "
              "WHERE j.id = x.id",
          upd.id.Take(), upd.state.Take(), upd.trigger_state.Take(), upd.triggered_by.Take(), upd.history.Take(),
          upd.ready_at.Take(), upd.next_check_at.Take(), upd.discard_reason.Take());
    }
    {
      CopyStream ins(
          tx, "jobs",
          {"schedule_id", "schedule_name", "schedule_version", "state", "priority", "trigger_state", "triggered_by",
           "history", "opened_at", "first_event_at", "ready_at", "next_check_at", "concurrency_group"});
      for (const OpenJob& job : acc.jobs) {
        if (!copied(job)) continue;
        const Schedule& s = *schedules.at(job.schedule_id).schedule;
        const std::optional<TimePoint> next_check = next_check_of(job, s);
        CopyRows& row = ins.Row();
        // Timestamps as ISO 8601 text (FormatTime, milliseconds): the same instants as the
        // to_timestamp(ms / 1000.0) of the other statements.
        row.AddInt(job.schedule_id);
        row.AddText(s.id().value());
        row.AddInt(job.schedule_version);
        row.AddText(state_of(job));
        row.AddInt(s.priority);
        row.AddText(TriggerStateToJson(job.state).dump());
        TriggeredByJson(job.triggered_by, text);
        row.AddText(text);
        row.AddText(JsonArray(job.history));
        const std::string opened_at = FormatTime(job.opened_at);
        row.AddText(opened_at);
        row.AddText(opened_at);
        job.complete ? row.AddText(FormatTime(now)) : row.AddNull();
        next_check ? row.AddText(FormatTime(*next_check)) : row.AddNull();
        s.constraints.concurrency_group ? row.AddText(s.constraints.concurrency_group->name) : row.AddNull();
        ins.EndRow();
      }
      ins.Finish();
    }
    // With the fast path, the check below frees the ended runs' slots once it holds every
    // counter row it needs (see ReleaseRuns); their waiting jobs are woken first, so the check
    // can claim them, and again once the counters are held (WakeWaitingJobs).
    const bool fast_path = fast_path_ && (result.jobs_ready > 0 || !ended.empty());
    if (!fast_path) {
      ReleaseRuns(tx, ended);
    } else if (!ended.empty()) {
      WakeWaitingJobs(tx, EndedRuns(ended));
    }
    OutboxRows outbox;
    // The key as Kafka delivered it, made storable (the payload is JSON trigd wrote).
    for (const DeadLetter& d : batch.dead) outbox.Add(topics_.dead, ValidText(d.key), d.payload);
    for (const DeadLetter& d : refused_letters) outbox.Add(topics_.dead, d.key, d.payload);
    for (const Event& e : acc.published) {
      outbox.Add(topics_.events_program, e.program.program, EnvelopeToJson(e).dump());
    }
    result.published = static_cast<int>(acc.published.size());
    outbox.InsertInto(tx);
    // The fast path: jobs that became ready, and waiting jobs their schedules' ended runs woke,
    // are checked in this same transaction, so an event whose job can launch at once is
    // launched by one commit instead of two (ingest, then the checker loop). The checker step
    // is the same code and claims the due jobs of those schedules and groups in the same
    // priority order; what still waits is left to the checker loop. Jobs this batch opened and
    // completed are not written above: the check decides them first and inserts each once, in
    // its decided state (an insert as pending and an update to launched cost twice the WAL,
    // and left dead entries in every pending-state index).
    if (fast_path) {
      CheckFilter filter;
      for (const OpenJob& job : acc.jobs) {
        if (!job.complete) continue;
        filter.schedule_ids.insert(job.schedule_id);
        const Schedule& s = *schedules.at(job.schedule_id).schedule;
        if (s.constraints.concurrency_group) filter.groups.insert(s.constraints.concurrency_group->name);
      }
      for (const EndedRun& e : ended) {
        filter.schedule_ids.insert(e.schedule_id);
        if (e.group) filter.groups.insert(*e.group);
      }
      filter.loaded = &schedules;
      filter.fresh = &fresh_jobs;
      filter.ended = &ended;
      bool unused_backlog = false;
      result.checker = CheckJobs(ctx, kFastPathLimit, &filter, unused_backlog);
    }
    if (ctx.free_after_commit) *ctx.free_after_commit = std::move(built);
  }
}

Result<CheckerResult> PgStore::CheckDueJobs(size_t limit) {
  return Guard([&]() -> Result<CheckerResult> {
    RenewPlans();
    pqxx::work tx(*conn_->c);
    CheckerResult result = CheckJobs(TxContext(tx, tx.exec1("SELECT " TRIGD_CLOCK)), limit, nullptr, claim_backlog_);
    tx.commit();
    return result;
  });
}

// The checker step in the caller's transaction: due jobs (all, or only those of `filter`'s
// schedules and groups) claimed, decided and written.
CheckerResult PgStore::CheckJobs(const TxContext& ctx, size_t limit, const CheckFilter* filter, bool& claim_backlog) {
  pqxx::transaction_base& tx = ctx.tx;
  const TimePoint now = ctx.now;
  {
    CheckerResult result;
    // now() as text for rows copied in (ISO 8601, milliseconds: the instant every other
    // timestamp of this transaction is written with) and in the run's first history entry.
    const std::string& now_text = ctx.now_text;
    const std::string run_history = "[{\"at\": " + ctx.now_json + ", \"status\": \"launched\", \"attempt\": 1}]";
    struct Due {
      int64_t id, schedule_id;
      int version;
      JobState state;
      std::string trigger_state;  // JSON; read for pending_trigger only (pending_constraint is complete)
      std::string triggered_by;   // JSON as stored: copied into the launch request as is
      TimePoint opened_at;
      std::optional<TimePoint> ready_at;
      std::string last_decision;
      std::string ready_text;  // coalesce(ready_at, opened_at) as PostgreSQL prints it: copied into the outbox
      int priority = 0;
      const FreshJob* fresh = nullptr;  // not stored yet (filter->fresh): written once decided
    };
    std::vector<Due> due;
    std::set<int64_t> sids;
    // The checker loop's claim (no filter): next_check_at is set only on pending jobs (a
    // constraint, schema/004): no state filter, so the planner's estimate of the due jobs is
    // right and it picks the index that fits. During a backlog the estimate can still be stale
    // (statistics from before a storm say nothing is due): PostgreSQL would then sort every due
    // job on every claim, quadratic in the backlog. While the last claim was full, sorting is ruled out: the claim
    // walks jobs_claim in priority order and stops after `limit` due jobs.
    const bool no_sort = claim_backlog && !filter;
    if (no_sort) tx.exec("SET LOCAL enable_sort = off");
    const size_t fresh_count = filter && filter->fresh ? filter->fresh->size() : 0;
    pqxx::result claimed;
    if (filter) {
      SqlArray groups;
      for (const std::string& g : filter->groups) groups.AddText(g);
      claimed = fresh_count > 0
                    ? tx.exec_prepared("claim_for_fresh", static_cast<int64_t>(limit), IntArray(filter->schedule_ids),
                                       groups.Take(), static_cast<int64_t>(fresh_count))
                    : tx.exec_prepared("claim_for", static_cast<int64_t>(limit), IntArray(filter->schedule_ids),
                                       groups.Take());
    } else {
      // Planned for each claim (enable_sort above), not prepared: a cached generic plan would
      // keep the setting it was made with.
      const std::string shard = shard_count_ > 1 ? "AND schedule_id % " + std::to_string(shard_count_) + " = " +
                                                       std::to_string(shard_index_) + " "
                                                 : "";
      claimed = tx.exec_params(ClaimColumnsSql() + shard + TRIGD_CLAIM_ORDER, static_cast<int64_t>(limit));
    }
    std::vector<int64_t> fresh_ids;
    struct Counters {
      int64_t active = 0;
      std::optional<TimePoint> last_launch;
    };
    std::map<int64_t, Counters> sched_rt;
    const bool counters_locked = fresh_count > 0;  // claim_for_fresh locked them
    // A locked counter row: schedule id, active runs, last launch (ms or NULL) from column `c`.
    auto put_counters = [&](const pqxx::row& r, int c) {
      sched_rt[r[c].as<int64_t>()] = {
          r[c + 1].as<int64_t>(),
          r[c + 2].is_null() ? std::nullopt : std::optional<TimePoint>(FromMillis(r[c + 2].as<int64_t>()))};
    };
    for (const auto& r : claimed) {
      if (r.size() > 12 && !r[12].is_null()) {
        put_counters(r, 12);
        continue;
      }
      if (r.size() > 11 && !r[11].is_null()) {
        fresh_ids.push_back(r[11].as<int64_t>());
        continue;
      }
      Due d{r[0].as<int64_t>(),
            r[1].as<int64_t>(),
            r[2].as<int>(),
            pg_internal::JobStateOf(r[3]),
            r[4].is_null() ? std::string() : r[4].as<std::string>(),
            r[5].as<std::string>(),
            FromMillis(r[6].as<int64_t>()),
            r[7].is_null() ? std::nullopt : std::optional<TimePoint>(FromMillis(r[7].as<int64_t>())),
            r[8].as<std::string>(),
            r[9].as<std::string>(),
            r[10].as<int>()};
      sids.insert(d.schedule_id);
      due.push_back(std::move(d));
    }
    if (no_sort) tx.exec("SET LOCAL enable_sort = on");
    if (!filter) claim_backlog = due.size() == limit;
    // Fresh jobs became ready now, after every stored one, and their ids are the newest: in
    // the claim's order (priority, ready_at, id) they go after the stored jobs of their
    // priority. Those past `limit` are written undecided, due now, for the checker loop.
    std::vector<Due> undecided;
    if (fresh_count > 0) {
      for (size_t k = 0; k < fresh_count; ++k) {
        const FreshJob& f = (*filter->fresh)[k];
        Due d{fresh_ids.at(k), f.schedule_id,  f.version,   JobState::kPendingConstraint,
              std::string(),   f.triggered_by, f.opened_at, now,
              std::string(),   now_text,       f.priority,  &f};
        sids.insert(d.schedule_id);
        due.push_back(std::move(d));
      }
      std::stable_sort(due.begin(), due.end(), [](const Due& a, const Due& b) {
        if (a.priority != b.priority) return a.priority > b.priority;
        if (a.ready_at.has_value() != b.ready_at.has_value()) return a.ready_at.has_value();  // NULLS LAST
        if (a.ready_at != b.ready_at) return *a.ready_at < *b.ready_at;
        return a.id < b.id;
      });
      while (due.size() > limit) {
        if (due.back().fresh) undecided.push_back(std::move(due.back()));
        due.pop_back();
      }
    }
    const std::optional<EndedRuns> ended =
        filter && filter->ended && !filter->ended->empty() ? std::optional<EndedRuns>(*filter->ended) : std::nullopt;
    if (due.empty() && undecided.empty()) {
      // Nothing to check: the ended runs' counters, schedules then groups (the claim locked
      // no group row, and the schedule rows it locked include these); held, their waiting jobs
      // are woken again.
      if (ended) {
        DecrementCounters(tx, *ended);
        WakeWaitingJobs(tx, *ended);
      }
      return result;
    }
    std::map<int64_t, ScheduleView> schedules;
    if (filter && filter->loaded) {
      std::set<int64_t> missing;
      for (int64_t id : sids) {
        if (auto it = filter->loaded->find(id); it != filter->loaded->end())
          schedules.insert(*it);
        else
          missing.insert(id);
      }
      schedules.merge(LoadSchedules(tx, cache_, missing));
    } else {
      schedules = LoadSchedules(tx, cache_, sids);
    }
    // Lock the run counters, schedules then groups, each in a fixed order (no deadlock
    // between checkers); a concurrent run end waits for this transaction and vice versa.
    // The counters of runs this transaction ended (filter->ended) are locked with them.
    std::set<std::string> groups;
    for (const auto& [id, v] : schedules) {
      if (v.schedule->constraints.concurrency_group) groups.insert(v.schedule->constraints.concurrency_group->name);
    }
    std::set<int64_t> counter_ids;
    for (const auto& [id, v] : schedules) counter_ids.insert(id);
    if (ended) {
      for (const auto& [id, n] : ended->per_schedule) counter_ids.insert(id);
      for (const auto& [name, n] : ended->per_group) groups.insert(name);
    }
    std::map<std::string, int64_t> group_rt;
    if (!counter_ids.empty()) {
      const std::vector<int64_t> ids(counter_ids.begin(), counter_ids.end());
      // A schedule's counter row is created by its first check: the rows are locked first (by
      // the claim itself on the fast path) and only missing ones are created (then locked).
      auto lock = [&](const std::string& id_array) {
        for (const auto& r : tx.exec_prepared("lock_counters", id_array)) put_counters(r, 0);
      };
      if (!counters_locked) lock(IntArray(ids));
      std::vector<int64_t> missing;
      for (int64_t id : ids) {
        if (!sched_rt.count(id)) missing.push_back(id);
      }
      if (!missing.empty()) {
        const std::string id_array = IntArray(missing);
        tx.exec_params("INSERT INTO schedule_runtime (schedule_id) SELECT unnest($1::bigint[]) ON CONFLICT DO NOTHING",
                       id_array);
        lock(id_array);
      }
    }
    if (!groups.empty()) {
      auto lock = [&](const std::set<std::string>& names) {
        SqlArray a;
        for (const std::string& g : names) a.AddText(g);
        std::string name_array = a.Take();
        for (const auto& r : tx.exec_params(
                 "SELECT name, active_runs FROM group_runtime WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE",
                 name_array)) {
          group_rt[r[0].as<std::string>()] = r[1].as<int64_t>();
        }
        return name_array;
      };
      lock(groups);
      if (group_rt.size() < groups.size()) {
        std::set<std::string> missing;
        for (const std::string& g : groups) {
          if (!group_rt.count(g)) missing.insert(g);
        }
        SqlArray a;
        for (const std::string& g : missing) a.AddText(g);
        tx.exec_params("INSERT INTO group_runtime (name) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING", a.Take());
        lock(missing);
      }
    }
    // Every counter row is locked now: the ended runs' slots are freed, in the rows and in
    // the counts the checks below use (its writes set the counters it changes absolutely).
    if (ended) {
      DecrementCounters(tx, *ended);
      std::vector<int64_t> claimed_ids;
      for (const Due& d : due) {
        if (!d.fresh) claimed_ids.push_back(d.id);
      }
      WakeWaitingJobs(tx, *ended, claimed_ids);
      for (const auto& [id, n] : ended->per_schedule) {
        if (auto it = sched_rt.find(id); it != sched_rt.end())
          it->second.active = std::max<int64_t>(it->second.active - n, 0);
      }
      for (const auto& [name, n] : ended->per_group) {
        if (auto it = group_rt.find(name); it != group_rt.end()) it->second = std::max<int64_t>(it->second - n, 0);
      }
    }
    // Launch times within each schedule's max_runs_per period, read after the locks.
    std::map<int64_t, std::vector<TimePoint>> recent;
    {
      std::vector<int64_t> ids;
      Millis longest{0};
      for (const auto& [id, v] : schedules) {
        if (v.schedule->constraints.max_runs_per) {
          ids.push_back(id);
          longest = std::max(longest, v.schedule->constraints.max_runs_per->period);
        }
      }
      if (!ids.empty()) {
        for (const auto& r :
             tx.exec_params("SELECT schedule_id, " TRIGD_MS(
                                "launched_at") " FROM runs WHERE schedule_id = ANY($1::bigint[]) "
                                               "AND launched_at > now() - make_interval(secs => $2::bigint / 1000.0)",
                            IntArray(ids), static_cast<int64_t>(longest.count()))) {
          recent[r[0].as<int64_t>()].push_back(FromMillis(r[1].as<int64_t>()));
        }
      }
    }
    // What the transaction writes, one array per column (sql_array.h).
    struct {
      SqlArray id, state, next_check_at, decision, forced, reason, history;
    } jobs;
    // Runs, launch requests and jobs decided when opened: a few ride on checker_writes as arrays,
    // many are copied in (TableRows).
    const bool as_arrays = due.size() + undecided.size() <= kRowsAsArraysLimit;
    TableRows runs(kRuns.columns.size(), as_arrays);
    OutboxRows outbox(as_arrays);
    auto update_job = [&](int64_t id, JobState state, std::optional<int64_t> next_check_at, const std::string* decision,
                          std::optional<bool> forced, const std::string* reason, const std::string* history) {
      jobs.id.AddInt(id);
      jobs.state.AddText(JobStateName(state));
      jobs.next_check_at.AddIntOrNull(next_check_at);
      decision ? jobs.decision.AddText(*decision) : jobs.decision.AddNull();
      forced ? jobs.forced.AddBool(*forced) : jobs.forced.AddNull();
      reason ? jobs.reason.AddText(*reason) : jobs.reason.AddNull();
      history ? jobs.history.AddText("[" + *history + "]") : jobs.history.AddNull();
    };
    // A fresh job is copied in once, in the state decided for it, with its history so far and
    // the decision's entry (the columns checker_writes sets on a stored job, likewise).
    TableRows fresh_rows(kDecidedJobs.columns.size(), as_arrays);
    auto write_job = [&](const Due& d, JobState state, std::optional<int64_t> next_check_at,
                         const std::string* decision, std::optional<bool> forced, const std::string* reason,
                         const std::string* history) {
      // A job that stays waiting keeps its state; any other change is one of model/job.h's.
      TRIGD_CHECK_MSG(
          state == d.state || IsAllowedTransition(d.state, state),
          std::string("job ") + std::to_string(d.id) + ": " + JobStateName(d.state) + " -> " + JobStateName(state));
      if (!d.fresh) {
        update_job(d.id, state, next_check_at, decision, forced, reason, history);
        return;
      }
      const FreshJob& f = *d.fresh;
      fresh_rows.AddInt(d.id);
      fresh_rows.AddInt(f.schedule_id);
      fresh_rows.AddText(f.schedule_name);
      fresh_rows.AddInt(f.version);
      fresh_rows.AddText(JobStateName(state));
      fresh_rows.AddInt(f.priority);
      fresh_rows.AddText(f.trigger_state);
      fresh_rows.AddText(f.triggered_by);
      // The history so far and the decision's entry: the first and the newest, kMaxJobHistory
      // in all (as trigd_append_history keeps a stored job's, schema/019).
      const size_t total = f.history.size() + (history ? 1 : 0);
      JsonArrayText h;
      if (total > kMaxJobHistory && !f.history.empty()) h.Raw(f.history.front());
      for (size_t i = total > kMaxJobHistory ? total - kMaxJobHistory + 1 : 0; i < f.history.size(); ++i)
        h.Raw(f.history[i]);
      if (history) h.Raw(*history);
      fresh_rows.AddText(h.Take());
      const std::string opened_at = FormatTime(f.opened_at);
      fresh_rows.AddText(opened_at);
      fresh_rows.AddText(opened_at);
      fresh_rows.AddText(FormatTime(now));
      next_check_at ? fresh_rows.AddText(FormatTime(FromMillis(*next_check_at))) : fresh_rows.AddNull();
      f.group ? fresh_rows.AddText(*f.group) : fresh_rows.AddNull();
      decision ? fresh_rows.AddText(*decision) : fresh_rows.AddNull();
      fresh_rows.AddText(forced.value_or(false) ? "t" : "f");
      reason ? fresh_rows.AddText(*reason) : fresh_rows.AddNull();
      state == JobState::kLaunched || state == JobState::kDiscarded ? fresh_rows.AddText(now_text)
                                                                    : fresh_rows.AddNull();
      fresh_rows.EndRow();
    };
    for (const Due& d : undecided)
      write_job(d, JobState::kPendingConstraint, ToMillis(now), nullptr, std::nullopt, nullptr, nullptr);
    // A schedule's program, serialised once for all its launches of this check.
    std::map<int64_t, std::string> program_json;
    const std::string at = FormatTime(now);  // history entries' time
    for (Due& d : due) {
      ++result.checked;
      auto sv = schedules.find(d.schedule_id);
      if (sv == schedules.end() || sv->second.version != d.version) {
        // Deleted, suspended or updated since the job opened: it never launches.
        std::string reason = sv == schedules.end() ? "schedule deleted or suspended" : "schedule updated";
        std::string entry = HistoryEntry(at, "discarded: " + reason).Take();
        write_job(d, JobState::kDiscarded, std::nullopt, nullptr, std::nullopt, &reason, &entry);
        ++result.discarded;
        continue;
      }
      const Schedule& s = *sv->second.schedule;
      Counters& rt = sched_rt[d.schedule_id];
      RunFacts facts;
      facts.active_runs = rt.active;
      facts.last_launch = rt.last_launch;
      std::optional<std::string> group;
      if (s.constraints.concurrency_group) {
        group = s.constraints.concurrency_group->name;
        facts.group_active_runs = group_rt[*group];
      }
      if (s.constraints.max_runs_per) {
        for (TimePoint t : recent[d.schedule_id]) {
          if (t > now - s.constraints.max_runs_per->period) facts.launches_in_period.push_back(t);
        }
      }
      bool complete = d.state == JobState::kPendingConstraint ||
                      IsComplete(s.trigger, TriggerStateFromJson(json::parse(d.trigger_state)));
      CheckOutcome out = CheckJob(s, {d.opened_at, d.ready_at}, complete, facts, now);
      for (const ConstraintCheck& c : out.checks) {
        ++result.checks[{c.constraint, ConstraintResultName(c.result)}];
      }
      JsonArrayText check_list;
      for (const ConstraintCheck& c : out.checks) {
        check_list.Raw(JsonObjectText()
                           .String("constraint", c.constraint)
                           .String("result", ConstraintResultName(c.result))
                           .String("reason", c.reason)
                           .Take());
      }
      const std::string checks = check_list.Take();
      if (out.decision == Decision::kLaunch) {
        ++result.launched;
        std::string run_id = pg_internal::NewRunId();
        auto [program, fresh] = program_json.try_emplace(d.schedule_id);
        if (fresh) program->second = ProgramJson(s.program);
        LaunchRequest req{program->second, run_id, s.id().value(), d.version, {}, false};
        // Templated args are rendered per job, once: retries publish this template again
        // (docs/adr/0121).
        if (program->second.find("{{") != std::string::npos && HasArgTemplates(s.program.args)) {
          RenderedProgram rendered = RenderProgram(s, run_id, d.triggered_by);
          req.program_json = std::move(rendered.program_json);
          req.placeholders_json = std::move(rendered.placeholders_json);
        }
        const LaunchAttempt first{1, s.heartbeat_timeout, now};
        // Within kMaxLaunchRequestBytes once the relay has placed the attempt's fields: a longer
        // list of triggering events is cut to fit (TriggeredByWithin) and the request says so.
        const size_t fixed =
            LaunchRequestTemplate(req).size() + kLaunchAttemptFieldsBytes + sizeof(",\"triggered_by_truncated\":true");
        if (fixed + d.triggered_by.size() <= kMaxLaunchRequestBytes) {
          req.triggered_by_json = std::move(d.triggered_by);  // the usual case, without a copy
        } else {
          req.triggered_by_json =
              fixed < kMaxLaunchRequestBytes
                  ? TriggeredByWithin(d.triggered_by, kMaxLaunchRequestBytes - fixed, req.triggered_by_truncated)
                  : std::string("[]");
        }
        const std::string request = LaunchRequestTemplate(req);
        runs.AddText(run_id);
        runs.AddInt(d.id);
        runs.AddInt(d.schedule_id);
        runs.AddText(s.id().value());
        runs.AddText(s.program.name);
        runs.AddText(s.program.target);
        group ? runs.AddText(*group) : runs.AddNull();
        runs.AddText(RunStateName(RunState::kLaunched));
        runs.AddInt(1);
        runs.AddInt(s.retry.max_attempts);
        runs.AddInt(s.heartbeat_timeout.count());
        runs.AddText(now_text);
        runs.AddText(now_text);
        runs.AddText(request);
        runs.AddText(run_history);
        runs.AddText(now_text);
        runs.EndRow();
        outbox.AddLaunch(topics_.Launch(s.program.target), s.program.name, request, first, d.id, d.ready_text);
        ++rt.active;
        rt.last_launch = now;
        if (group) ++group_rt[*group];
        recent[d.schedule_id].push_back(now);
        std::string entry =
            HistoryEntry(at, out.forced ? "launched by timeout (action run)" : "constraints hold: launching")
                .String("run_id", run_id)
                .Raw("checks", checks)
                .Take();
        write_job(d, JobState::kLaunched, std::nullopt, nullptr, out.forced, nullptr, &entry);
      } else if (out.decision == Decision::kDiscard) {
        ++result.discarded;
        std::string entry = HistoryEntry(at, "discarded: " + out.reason).Raw("checks", checks).Take();
        write_job(d, JobState::kDiscarded, std::nullopt, nullptr, std::nullopt, &out.reason, &entry);
      } else {
        ++result.waiting;
        // A wait that a run's end can lift is woken by that end; the fallback re-check covers
        // a wake-up lost to a crash between the two (also when a later time is known: the
        // timeout, a window's opening).
        TimePoint next = out.next_check_at.value_or(now + kRunEndRecheck);
        if (out.wakes_on_run_end) next = std::min(next, now + kRunEndRecheck);
        const JobState state = d.state == JobState::kPendingTrigger && !complete ? JobState::kPendingTrigger
                                                                                 : JobState::kPendingConstraint;
        std::optional<std::string> entry;
        if (out.reason != d.last_decision) {
          entry = HistoryEntry(at, "waiting: " + out.reason)
                      .Raw("checks", checks)
                      .String("next_check_at", FormatTime(next))
                      .Take();
        }
        write_job(d, state, ToMillis(next), &out.reason, std::nullopt, nullptr, entry ? &*entry : nullptr);
      }
    }
    SqlArray rt_id, rt_active, rt_last, g_name, g_active;
    if (!fresh_rows.as_arrays() && fresh_rows.rows() > 0) {
      CopyIn(tx, kDecidedJobs.name, kDecidedJobs.Names(), fresh_rows.copy());
    }
    if (!runs.as_arrays() && runs.rows() > 0) CopyIn(tx, kRuns.name, kRuns.Names(), runs.copy());
    outbox.InsertInto(tx);
    if (runs.rows() > 0) {
      for (const auto& [id, c] : sched_rt) {
        rt_id.AddInt(id);
        rt_active.AddInt(c.active);
        rt_last.AddIntOrNull(c.last_launch ? std::optional<int64_t>(ToMillis(*c.last_launch)) : std::nullopt);
      }
      for (const auto& [name, n] : group_rt) {
        g_name.AddText(name);
        g_active.AddInt(n);
      }
    }
    std::vector<std::string> params{rt_id.Take(),       rt_active.Take(),          rt_last.Take(),
                                    g_name.Take(),      g_active.Take(),           jobs.id.Take(),
                                    jobs.state.Take(),  jobs.next_check_at.Take(), jobs.decision.Take(),
                                    jobs.forced.Take(), jobs.reason.Take(),        jobs.history.Take()};
    for (auto [table, rows] : {std::pair{&kDecidedJobs, &fresh_rows}, {&kRuns, &runs}, {&kOutbox, &outbox.rows()}}) {
      for (size_t i = 0; i < table->columns.size(); ++i) params.push_back(rows->TakeColumn(i));
    }
    size_t bytes = 0;
    for (const std::string& p : params) bytes += p.size();
    // Quoted into the COMMIT's simple query: worth it for the few rows of a low-rate batch, not
    // for megabytes the server would have to lex.
    if (ctx.deferred_writes && bytes <= kDeferredWritesLimit) {
      *ctx.deferred_writes = std::move(params);
    } else {
      tx.exec_prepared("checker_writes", pqxx::prepare::make_dynamic_params(params));
    }
    return result;
  }
}

// The relay's transaction is opened by the claim's query and closed by CompleteOutbox's, each
// a simple query of several statements (one round trip each: BEGIN and COMMIT would be a round
// trip of their own with pqxx::work). The connection is the relay's alone.
Result<std::vector<OutboxRow>> PgStore::ClaimOutbox(size_t limit) {
  claim_.reset();  // a claim never completed is rolled back
  auto result = Guard([&]() -> Result<std::vector<OutboxRow>> {
    RenewPlans();
    claim_ = std::make_unique<OpenTransaction>(*conn_->c);
    std::vector<OutboxRow> rows;
    claim_ages_.clear();
    const size_t bundles = (limit + kBundleMessages - 1) / kBundleMessages;
    for (const auto& r : claim_->Begin("outbox_claim", {std::to_string(limit), std::to_string(bundles)})) {
      const int64_t id = r[0].as<int64_t>();
      if (r[5].as<bool>()) {
        auto messages = ParseBundle(std::string_view(r[3].c_str(), r[3].size()));
        if (!messages.ok()) return Internal("outbox row " + std::to_string(id) + ": " + messages.status().message());
        for (auto& [key, payload] : *messages)
          rows.push_back({id, r[1].as<std::string>(), std::move(key), std::move(payload)});
        continue;
      }
      if (r[6].is_null()) {
        rows.push_back({id, r[1].as<std::string>(), r[2].as<std::string>(), r[3].as<std::string>()});
      } else {
        // A launch request: the attempt's fields placed into its template, the same on every
        // publication of this row (the same run id and attempt).
        const LaunchAttempt a{r[6].as<int64_t>(), Millis(r[8].as<int64_t>()), FromMillis(r[7].as<int64_t>())};
        rows.push_back({id, r[1].as<std::string>(), r[2].as<std::string>(),
                        RenderLaunchRequest(std::string_view(r[3].c_str(), r[3].size()), a)});
      }
      if (!r[4].is_null()) claim_ages_.emplace_back(id, r[4].as<double>());  // a first launch
    }
    if (rows.empty()) claim_.reset();
    return rows;
  });
  if (!result.ok()) claim_.reset();
  return result;
}

Result<std::vector<double>> PgStore::CompleteOutbox(const std::vector<int64_t>& confirmed) {
  if (!claim_) return std::vector<double>{};
  auto result = Guard([&]() -> Result<std::vector<double>> {
    // Committed without waiting for the WAL flush: if PostgreSQL crashes before the flush, the
    // delete is lost and the relay publishes those requests again, with the same run ids,
    // which a crash between publishing and deleting does anyway (SPEC §5). The relay's next
    // claim does not wait for an fsync of its own, and nor do the launches behind it.
    claim_->Commit(confirmed.empty() ? std::string()
                                     : "SET LOCAL synchronous_commit = off; DELETE FROM outbox WHERE id = ANY('" +
                                           IntArray(confirmed) + "'::bigint[])");
    // Event to launch: a launch request's age when claimed (now(), the claim transaction's start).
    std::vector<double> ages;
    for (int64_t id : confirmed) {
      auto it = std::lower_bound(claim_ages_.begin(), claim_ages_.end(), std::pair<int64_t, double>{id, -1e300});
      if (it != claim_ages_.end() && it->first == id) ages.push_back(it->second);
    }
    return ages;
  });
  claim_.reset();
  return result;
}

Result<int> PgStore::FailUnpublishable(const std::vector<int64_t>& refused) {
  if (!claim_ || refused.empty()) return 0;
  auto result = Guard([&]() -> Result<int> {
    pqxx::transaction_base& tx = claim_->tx();
    // Launch requests only: bundles (program events, ticks, dead letters) are trigd's own small
    // messages, kept under the limit when written.
    const pqxx::result ended =
        tx.exec("WITH gone AS (DELETE FROM outbox WHERE id = ANY('" + IntArray(refused) +
                "'::bigint[]) AND NOT bundle "
                "RETURNING payload::jsonb->>'run_id' AS gone_run, coalesce(attempt, (payload::jsonb->>'attempt')::int) "
                "AS gone_attempt) "
                "UPDATE runs SET state=" +
                Sql(RunState::kFailed) +
                ", reason='unpublishable', finished_at=now(), "
                "history = trigd_append_history(history, jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT
                ", "
                "'status', 'failed', 'reason', 'unpublishable', 'attempt', attempt))) "
                "FROM gone WHERE runs.run_id = gone.gone_run AND runs.attempt = gone.gone_attempt AND runs.state = " +
                Sql(RunState::kLaunched) +
                " "
                "RETURNING schedule_id, concurrency_group, runs.run_id, runs.attempt, program, "
                "schedule_name, " TRIGD_RUN_START_BY_MS);
    std::vector<EndedRun> runs;
    for (const auto& r : ended) {
      runs.push_back(
          {r[0].as<int64_t>(), r[1].is_null() ? std::nullopt : std::optional<std::string>(r[1].as<std::string>())});
    }
    pg_internal::AnnounceEndedRuns(tx, topics_, ended, 2, {"failed", "unpublishable", "unpublishable"});
    ReleaseRuns(tx, runs);
    return static_cast<int>(ended.size());
  });
  if (!result.ok()) claim_.reset();
  return result;
}

Status PgStore::MarkCaughtUp(const std::string& group, const std::vector<PartitionRange>& ranges, Millis age) {
  if (ranges.empty()) return Status();
  return Guard([&]() -> Status {
    SqlArray topics, partitions, begins, ends;
    for (const PartitionRange& r : ranges) {
      topics.AddText(r.topic);
      partitions.AddInt(r.partition);
      begins.AddInt(r.begin);
      ends.AddInt(r.end);
    }
    pqxx::work tx(*conn_->c);
    // The insert's next_offset is the end read from the broker: compared with the committed
    // position on conflict, and the position itself only for an empty partition (nothing before
    // it to skip). A mark never moves back.
    tx.exec_params(
        "WITH x AS (SELECT * FROM unnest($2::text[], $3::int[], $4::bigint[], $5::bigint[]) "
        "AS x(topic, partition, begin_offset, end_offset)) "
        "INSERT INTO consumer_offsets AS o (group_id, topic, partition, next_offset, caught_up_at) "
        "SELECT $1, x.topic, x.partition, x.end_offset, now() - make_interval(secs => $6::bigint / 1000.0) FROM x "
        "WHERE x.begin_offset >= x.end_offset OR EXISTS (SELECT 1 FROM consumer_offsets c "
        "WHERE c.group_id = $1 AND c.topic = x.topic AND c.partition = x.partition) "
        "ON CONFLICT (group_id, topic, partition) DO UPDATE SET caught_up_at = EXCLUDED.caught_up_at "
        "WHERE o.next_offset >= EXCLUDED.next_offset "
        "AND (o.caught_up_at IS NULL OR o.caught_up_at < EXCLUDED.caught_up_at)",
        group, topics.Take(), partitions.Take(), begins.Take(), ends.Take(), static_cast<int64_t>(age.count()));
    tx.commit();
    return Status();
  });
}

Result<SweepResult> PgStore::SweepRuns() {
  return Guard([&]() -> Result<SweepResult> {
    pqxx::work tx(*conn_->c);
    SweepResult out;
    const TimePoint now = FromMillis(tx.exec1("SELECT " TRIGD_MS("now()"))[0].as<int64_t>());
    // Silence is counted up to the moment trigd had read every partition of the program topic
    // to its end (MarkCaughtUp), at most now: reports still unread are not silence. A partition
    // with no mark yet (a position written before migration 014, or just created) is left out
    // of the minimum until its first mark, a second or so.
    std::string watched = "now()";
    if (!consumer_group_.empty()) {
      const std::string program_topic = topics_.events_program;
      watched = "(SELECT least(now(), min(caught_up_at)) FROM consumer_offsets WHERE group_id = " +
                tx.quote(consumer_group_) + " AND topic = " + tx.quote(program_topic) + ")";
    }
    OutboxRows outbox;
    std::vector<EndedRun> ended;
    for (const auto& r :
         tx.exec("SELECT run_id, attempt, max_attempts, program, schedule_id, schedule_name, concurrency_group, "
                 "(SELECT version FROM schedules s WHERE s.id = runs.schedule_id), "
                 "(SELECT document::text FROM schedules s WHERE s.id = runs.schedule_id), " TRIGD_RUN_START_BY_MS
                 ", state FROM runs "
                 // A started run is lost after heartbeat_timeout of silence; one still queued on the
                 // launch topic (no worker took it yet) only after the queued timeout (Airflow's
                 // task_queued_timeout): a backlog or a worker rebalance is not a lost run.
                 // Two scans, one index each (schema/007): every running run (its own timeout), and
                 // of the queued ones only the range older than the queued timeout, so a backlog of
                 // launch requests waiting for workers is not read on every sweep.
                 "WHERE run_id IN (WITH w AS (SELECT " +
                 watched +
                 " AS t) "
                 "SELECT run_id FROM runs WHERE state = " +
                 Sql(RunState::kRunning) +
                 " "
                 "AND last_seen_at < (SELECT t FROM w) - make_interval(secs => heartbeat_timeout_ms / 1000.0) "
                 "UNION ALL SELECT run_id FROM runs WHERE state = " +
                 Sql(RunState::kLaunched) +
                 " "
                 "AND last_seen_at < (SELECT t FROM w) - make_interval(secs => " +
                 std::to_string(kQueuedTimeout.count()) +
                 " / 1000.0) "
                 "AND last_seen_at < (SELECT t FROM w) - make_interval(secs => "
                 "greatest(heartbeat_timeout_ms, " +
                 std::to_string(kQueuedTimeout.count()) +
                 ") / 1000.0)) "
                 "ORDER BY last_seen_at LIMIT 1000 FOR UPDATE SKIP LOCKED")) {
      ++out.lost;
      std::string run_id = r[0].as<std::string>();
      int64_t attempt = r[1].as<int64_t>(), max_attempts = r[2].as<int64_t>();
      int64_t schedule_id = r[4].as<int64_t>();
      // Lost: retried while attempts are left, failed otherwise; a deleted schedule's lost run
      // is not retried (its failure is final, as a worker's `failed` report is). The decision
      // is core/run_lifecycle.h's; this applies it (the rows were read locked, in their state).
      const std::optional<RunTransition> t =
          OnSilence(pg_internal::RunStateOf(r[10]), attempt, max_attempts, !r[7].is_null());
      TRIGD_CHECK_MSG(t.has_value(), "run " + run_id + " found silent in state " + r[10].as<std::string>());
      const bool retry = t->retry;
      // Every worker is told the attempt ended, so none starts its request later (the control
      // topic, control_message.h); a retry, attempt + 1, still runs.
      if (t->control_message) {
        outbox.Add(
            topics_.control, run_id,
            pg_internal::ControlMessage(
                {run_id, attempt, retry ? "lost" : "failed", "lost", !retry, pg_internal::StartByField(r[9])}, now));
      }
      if (retry) {
        RetryPolicy retry;
        if (auto s = cache_.Get(schedule_id, r[7].as<int>(), r[8].as<std::string>())) retry = s->retry;
        const Millis wait = RetryWait(retry, attempt);
        tx.exec_params(
            "UPDATE runs SET state=" + Sql(t->next) +
                ", reason='lost', "
                "next_attempt_at = now() + make_interval(secs => $2::bigint / 1000.0), "
                "history = trigd_append_history(history, jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT
                ", "
                "'status', 'lost', 'attempt', attempt, 'retry_in', $3::text))) WHERE run_id=$1",
            run_id, static_cast<int64_t>(wait.count()), FormatDuration(wait));
      } else {
        ++out.failed;
        tx.exec_params(
            "UPDATE runs SET state=" + Sql(t->next) +
                ", reason='lost', finished_at=now(), "
                "history = trigd_append_history(history, jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT
                ", "
                "'status', 'failed', 'reason', 'lost', 'attempt', attempt))) WHERE run_id=$1",
            run_id);
        ended.push_back(
            {schedule_id, r[6].is_null() ? std::nullopt : std::optional<std::string>(r[6].as<std::string>())});
        if (!t->program_event) continue;
        Event e;
        e.id = "lost:" + run_id + ":" + std::to_string(attempt);
        e.type = EventType::kProgram;
        e.time = now;
        std::string program = r[3].as<std::string>();
        e.payload = {{"program", program}, {"run_id", run_id}, {"status", "failed"},
                     {"attempt", attempt}, {"reason", "lost"}, {"schedule", r[5].as<std::string>()}};
        outbox.Add(topics_.events_program, program, EnvelopeToJson(e).dump());
      }
    }
    // A run waiting for its next attempt when its schedule was deleted: `trigctl schedules
    // delete` kills those it sees, and this catches one whose retry was decided by a
    // transaction that committed after the delete's. Nothing of a deleted schedule launches.
    const pqxx::result killed_by_delete =
        tx.exec("UPDATE runs SET " + pg_internal::KilledByDeleteSet() +
                "WHERE run_id IN (SELECT run_id FROM runs WHERE state=" + Sql(RunState::kRetryWait) +
                " AND next_attempt_at <= now() "
                "AND NOT EXISTS (SELECT 1 FROM schedules s WHERE s.id = runs.schedule_id) "
                "LIMIT 1000 FOR UPDATE SKIP LOCKED) RETURNING schedule_id, concurrency_group, run_id, attempt, "
                "program, schedule_name, " TRIGD_RUN_START_BY_MS);
    for (const auto& r : killed_by_delete) {
      ++out.killed;
      ended.push_back(
          {r[0].as<int64_t>(), r[1].is_null() ? std::nullopt : std::optional<std::string>(r[1].as<std::string>())});
    }
    pg_internal::KillByDeleteEvents(tx, topics_, killed_by_delete, 2);
    // The next attempt: its number and launch time are columns, placed into the run's request
    // template by the relay (RenderLaunchRequest); the stored text is not touched.
    for (const auto& r : tx.exec(
             "UPDATE runs SET state=" + Sql(RunState::kLaunched) +
             ", attempt = attempt + 1, last_seen_at = now(), attempt_started_at = NULL, "
             "attempt_launched_at = now(), next_attempt_at = NULL, "
             "history = trigd_append_history(history, jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT ", "
             "'status', 'launched', 'attempt', attempt + 1))) "
             "WHERE run_id IN (SELECT run_id FROM runs WHERE state=" +
             Sql(RunState::kRetryWait) +
             " AND next_attempt_at <= now() "
             "LIMIT 1000 FOR UPDATE SKIP LOCKED) RETURNING target, program, request, attempt, " TRIGD_MS(
                 "attempt_launched_at") ", heartbeat_timeout_ms")) {
      ++out.retried;
      const LaunchAttempt a{r[3].as<int64_t>(), Millis(r[5].as<int64_t>()), FromMillis(r[4].as<int64_t>())};
      outbox.AddLaunch(topics_.Launch(r[0].as<std::string>()), r[1].c_str(), r[2].c_str(), a);
    }
    ReleaseRuns(tx, ended);
    outbox.InsertInto(tx);
    tx.commit();
    return out;
  });
}

Result<TickResult> PgStore::TickTimeTriggers(size_t limit) {
  return Guard([&]() -> Result<TickResult> {
    RenewPlans();
    // The checkers look every 100 ms: a look that finds nothing due costs one statement
    // (an index probe, no transaction) instead of four round trips. A trigger that becomes due
    // just after it is found at the next look.
    {
      pqxx::nontransaction look(*conn_->c);
      if (!look.exec_prepared1("time_trigger_due")[0].as<bool>()) return TickResult{};
    }
    pqxx::work tx(*conn_->c);
    TickResult out;
    const TxContext ctx(tx, tx.exec1("SELECT " TRIGD_CLOCK));
    const TimePoint now = ctx.now;
    OutboxRows outbox;
    SqlArray update_ids, update_last, update_next, update_not_fired;
    IngestBatch ticks;
    pqxx::result due_triggers = tx.exec_params(
        "SELECT t.schedule_id, " TRIGD_MS("t.anchor") ", " TRIGD_MS("t.last_fire_time") ", t.leaf, "
        "s.name, s.version, " TRIGD_MS("t.ticked_until") " FROM time_triggers t JOIN schedules s ON s.id = t.schedule_id "
        "WHERE t.next_fire_at <= now() AND s.state = 'active' ORDER BY t.next_fire_at LIMIT $1 "
        "FOR UPDATE OF t SKIP LOCKED", static_cast<int64_t>(limit));
    // Documents only for the schedules not parsed yet (a storm's second tick reads none).
    std::vector<int64_t> misses;
    for (const auto& r : due_triggers) {
      if (!cache_.Find(r[0].as<int64_t>(), r[5].as<int>())) misses.push_back(r[0].as<int64_t>());
    }
    if (!misses.empty()) {
      for (const auto& r : tx.exec_params(
               "SELECT id, version, document::text FROM schedules WHERE id = ANY($1::bigint[])", IntArray(misses))) {
        cache_.Get(r[0].as<int64_t>(), r[1].as<int>(), r[2].as<std::string>());
      }
    }
    struct Decided {
      int64_t id;
      std::string name;
      DueFireTimes due;
    };
    std::vector<Decided> decided;
    // Fire times a producer's tick may have applied already (CheckProducerTicks): their
    // identities, looked up in seen_events at once.
    SqlArray ticked;
    for (const auto& r : due_triggers) {
      int64_t id = r[0].as<int64_t>();
      auto s = cache_.Find(id, r[5].as<int>());
      if (!s) continue;
      const TimeTrigger* tt = TimeLeaf(*s, r[3].as<int>());
      if (!tt) continue;
      TimePoint anchor = FromMillis(r[1].as<int64_t>());
      std::optional<TimePoint> last;
      if (!r[2].is_null()) last = FromMillis(r[2].as<int64_t>());
      Decided& d =
          decided.emplace_back(Decided{id, r[4].as<std::string>(), ComputeDueFireTimes(*tt, anchor, last, now)});
      if (!r[6].is_null()) {
        const TimePoint until = FromMillis(r[6].as<int64_t>());
        for (TimePoint fire : d.due.fire) {
          if (fire <= until) ticked.AddText(OwnTickId(d.name, FormatTime(fire)));
        }
      }
    }
    std::unordered_set<std::string> applied_by_producer;
    if (!ticked.empty()) {
      for (const auto& r : tx.exec_params("SELECT id FROM seen_events WHERE id = ANY($1::text[])", ticked.Take())) {
        applied_by_producer.insert(r[0].as<std::string>());
      }
    }
    for (Decided& d : decided) {
      for (TimePoint fire : d.due.fire) {
        Event e;
        // One identity per (schedule, fire time), decided here once: ingestion skips its copy.
        const std::string fire_time = FormatTime(fire);
        e.id = OwnTickId(d.name, fire_time);
        if (applied_by_producer.count(e.id)) continue;
        e.type = EventType::kTick;
        e.time = now;
        e.payload = {{"schedule", d.name}, {"fire_time", fire_time}};
        e.tick = {d.name, fire};
        outbox.AddToBundle(topics_.events_time, d.name, EnvelopeToJson(e).dump());
        ticks.events.push_back(std::move(e));
        ticks.schedule_ids.push_back({d.id});
        ++out.produced;
      }
      out.skipped += static_cast<int>(d.due.skipped);
      // Everything due up to now is decided (produced or skipped), so `last` moves to now; what
      // was skipped is remembered (a producer's tick for it is a backfill, CheckProducerTicks).
      update_ids.AddInt(d.id);
      update_last.AddInt(ToMillis(now));
      update_next.AddIntOrNull(d.due.next ? std::optional<int64_t>(ToMillis(*d.due.next)) : std::nullopt);
      std::optional<std::string> not_fired;
      for (const auto& [after, through] : d.due.not_fired) {
        not_fired = (not_fired ? *not_fired + "," : std::string("{")) + "(" + FormatTime(after) + "," +
                    FormatTime(through) + "]";
      }
      update_not_fired.AddTextOrNull(not_fired ? std::optional<std::string>(*not_fired + "}") : std::nullopt);
    }
    if (!update_ids.empty()) {
      tx.exec_params(
          "UPDATE time_triggers t SET last_fire_time = to_timestamp(x.last / 1000.0), "
          "next_fire_at = coalesce(to_timestamp(x.next / 1000.0), 'infinity'), "
          "not_fired = CASE WHEN x.not_fired IS NULL THEN t.not_fired "
          "ELSE t.not_fired + x.not_fired::tstzmultirange END, "
          "ticked_until = CASE WHEN t.ticked_until <= to_timestamp(x.last / 1000.0) THEN NULL "
          "ELSE t.ticked_until END "
          "FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[]) AS x(id, last, next, not_fired) "
          "WHERE t.schedule_id = x.id",
          update_ids.Take(), update_last.Take(), update_next.Take(), update_not_fired.Take());
    }
    // Each tick is applied here, in the transaction that decides it, instead of after a round
    // trip through Kafka and ingestion (a storm of schedules due in the same second launches
    // in one pass). Its copy on trigd.events.time is for observers; ingestion skips it (an own
    // tick's id, IsOwnTick) and counts it as a duplicate. The row locks taken above make each
    // fire time's tick unique, so no de-duplication id is recorded for it.
    ticks.own_ticks = true;
    Relevant relevant = FindRelevant(ticks, out.applied);
    ApplyEvents(ctx, ticks, relevant, out.applied);
    outbox.InsertInto(tx);
    tx.commit();
    return out;
  });
}

Result<std::map<std::string, int64_t>> PgStore::CountJobs() {
  return Guard([&]() -> Result<std::map<std::string, int64_t>> {
    pqxx::read_transaction tx(*conn_->c);
    // Both counts go through an index scan: jobs_by_state keeps an entry for every job that was
    // ever pending until VACUUM, and the outbox (a queue) is mostly dead pages. A bitmap or
    // sequential scan visits all of that every time (60 ms with 26,000 dead entries); an index
    // scan marks the dead entries it meets, and the next count skips them.
    tx.exec("SET LOCAL enable_bitmapscan = off; SET LOCAL enable_seqscan = off");
    // pending_launch is no job state: a launched job whose request the relay has not published.
    std::map<std::string, int64_t> out = {{JobStateName(JobState::kPendingTrigger), 0},
                                          {JobStateName(JobState::kPendingConstraint), 0},
                                          {"pending_launch", 0}};
    for (const auto& r : tx.exec("SELECT state, count(*) FROM jobs WHERE state IN " +
                                 SqlIn(JobState::kPendingTrigger, JobState::kPendingConstraint) +
                                 " GROUP BY state "
                                 "UNION ALL SELECT 'pending_launch', count(*) FROM outbox WHERE job_id IS NOT NULL")) {
      out[r[0].as<std::string>()] = r[1].as<int64_t>();
    }
    return out;
  });
}

Result<PgStore::ChangeCounts> PgStore::TakeChangeCounts() {
  return Guard([&]() -> Result<ChangeCounts> {
    pqxx::work tx(*conn_->c);
    // A change holds the change log locked (EXCLUSIVE) for its whole transaction: do not wait.
    tx.exec("SET LOCAL lock_timeout = '50ms'");
    ChangeCounts out;
    try {
      const pqxx::row r = tx.exec1(
          "WITH c AS (SELECT seq, jobs_discarded, runs_killed FROM schedule_changes "
          "WHERE jobs_discarded > 0 OR runs_killed > 0 ORDER BY seq LIMIT 1000 FOR UPDATE SKIP LOCKED), "
          "u AS (UPDATE schedule_changes s SET jobs_discarded = 0, runs_killed = 0 FROM c WHERE s.seq = c.seq) "
          "SELECT coalesce(sum(jobs_discarded), 0)::bigint, coalesce(sum(runs_killed), 0)::bigint FROM c");
      out.jobs_discarded = r[0].as<int64_t>();
      out.runs_killed = r[1].as<int64_t>();
    } catch (const pqxx::sql_error& e) {
      if (e.sqlstate() != "55P03") throw;  // lock_not_available: a change in progress
      return ChangeCounts{};
    }
    tx.commit();
    return out;
  });
}

Status PgStore::Prune(Millis keep) {
  Result<int> r = Guard([&]() -> Result<int> {
    pqxx::work tx(*conn_->c);
    tx.exec_params("DELETE FROM seen_events WHERE seen_at < now() - make_interval(secs => $1::bigint / 1000.0)",
                   static_cast<int64_t>(keep.count()));
    tx.exec(
        "DELETE FROM schedule_changes WHERE at < now() - interval '1 day' AND seq < (SELECT max(seq) FROM "
        "schedule_changes)");
    tx.commit();
    return 0;
  });
  return r.status();
}

}  // namespace trigd
