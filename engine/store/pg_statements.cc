// The SQL the PgStore files prepare and share: the claims, the checker's one write statement,
// the positions' compare-and-set, and the tables the checker writes rows of.
#include "store/pg_store_parts.h"

namespace trigd::pg_internal {

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

// The checker's claim: due jobs in priority order, locked (SKIP LOCKED: checkers never take the
// same job). Columns as CheckJobs reads them.
std::string ClaimColumnsSql() {
  return "SELECT id, schedule_id, schedule_version, state, "
         "CASE WHEN state = " + Sql(JobState::kPendingTrigger) + " THEN trigger_state::text END, triggered_by::text, "
         TRIGD_MS("opened_at") ", " TRIGD_MS("ready_at") ", coalesce(last_decision, ''), "
         "coalesce(ready_at, opened_at)::text, priority FROM jobs WHERE next_check_at <= now() ";
}

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
                          {"finished_at", "timestamptz"},
                          {"lineage", "text"}}};
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
                   {"attempt_launched_at", "timestamptz"},
                   {"lineage", "text"},
                   {"lineages", "jsonb"}}};
const Table kOutbox{"outbox",
                    {{"topic", "text"},
                     {"key", "text"},
                     {"payload", "text"},
                     {"job_id", "bigint"},
                     {"ready_at", "timestamptz"},
                     {"attempt", "int"},
                     {"launched_at", "timestamptz"},
                     {"heartbeat_timeout_ms", "bigint"}}};
// checker_writes' parameters: the counters and stored jobs' changes, the lineages the launched
// runs start and those they inherit, then the columns of kDecidedJobs, kRuns and kOutbox, in that order.
constexpr int kCheckerWritesFixedParams = 14;

// The checker's writes in one statement (data-modifying CTEs; empty arrays make a part a
// no-op): run counters, group counters, the launched runs' lineages (a row per lineage, written
// when its first run launches, docs/adr/0118: a lineage a run starts is new, named by the run's
// new id, and goes in by a plain insert, which costs half a speculative one; an inherited one
// may have its row, and one that had ended is open again), rows inserted from arrays
// (TableRows), stored jobs.
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
         "FROM unnest($4::text[], $5::int[]) AS x(name, active) WHERE g.name = x.name), "
         "started_lineages AS (INSERT INTO lineages (id, started_at) SELECT l, now() FROM unnest($13::text[]) AS "
         "x(l)), "
         "inherited_lineages AS (INSERT INTO lineages (id, started_at) SELECT DISTINCT l, now() "
         "FROM unnest($14::text[]) AS x(l) ORDER BY 1 ON CONFLICT (id) DO UPDATE SET ended_at = NULL, outcome = NULL "
         "WHERE lineages.ended_at IS NOT NULL)" +
         inserts +
         " UPDATE jobs j SET state = x.state, "
         "next_check_at = CASE WHEN x.state IN " +
         SqlIn(JobState::kPendingTrigger, JobState::kPendingConstraint) +
         " "
         "  THEN to_timestamp(x.next_check_at / 1000.0) END, "
         "last_decision = coalesce(x.decision, j.last_decision), forced = coalesce(x.forced, j.forced), "
         // A collecting job whose trigger the clock completed (quiet, silence) is ready now.
         "ready_at = CASE WHEN j.ready_at IS NULL AND j.state = " +
         Sql(JobState::kPendingTrigger) + " AND (x.state = " + Sql(JobState::kPendingConstraint) +
         " OR (x.state = " + Sql(JobState::kLaunched) +
         " AND NOT coalesce(x.forced, false))) THEN now() ELSE j.ready_at END, "
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
      // The checker's read of its claimed jobs' schedules: no lock, the jobs' own locks keep
      // every change of those schedules out until it commits (pg_rows.cc LoadSchedules).
      {"schedule_versions", "SELECT id, version FROM schedules WHERE id = ANY($1::bigint[]) AND state = 'active'"},
      // The active schedules of $1, share-locked (an update or delete waits for the batch), and
      // their open jobs, locked, in one round trip: rows with schedule_id NULL are schedules (id,
      // version), the others jobs. The jobs' lookup takes the schedules' ids as an array (an
      // index scan on jobs_one_open, as for a parameter).
      {"schedules_and_open_jobs",
       "WITH s AS (SELECT id, version FROM schedules WHERE id = ANY($1::bigint[]) AND state = 'active' FOR SHARE), "
       "j AS (SELECT id, schedule_id, schedule_version, trigger_state::text AS trigger_state, "
       "triggered_by::text AS triggered_by, lineage, " TRIGD_MS(
           "opened_at") " AS opened_ms FROM jobs "
                        "WHERE schedule_id = ANY(ARRAY(SELECT id FROM s)) AND state = " +
           Sql(JobState::kPendingTrigger) +
           " ORDER BY id FOR UPDATE) "
           "SELECT id, version, NULL::bigint, NULL::text, NULL::text, NULL::bigint, NULL::text FROM s UNION ALL "
           "SELECT id, schedule_version, schedule_id, trigger_state, triggered_by, opened_ms, lineage FROM j"},
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
      // same), with a launch request's age in microseconds for the event-to-launch histogram (an
      // integer: parsing a float8's text was 2% of trigd's CPU in the launch path): up to $1 single
      // messages and $2 bundles (outbox_bundle.h; through their own partial index).
      {"outbox_claim",
       "WITH single AS (SELECT id, topic, coalesce(key, ''), payload, "
       "(extract(epoch from now() - ready_at) * 1000000)::bigint, "
       "false, attempt, " TRIGD_MS(
           "launched_at") ", heartbeat_timeout_ms "
                          "FROM outbox WHERE NOT bundle ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED), "
                          "bundled AS (SELECT id, topic, '', payload, NULL::bigint, true, NULL::int, NULL::bigint, "
                          "NULL::bigint "
                          "FROM outbox WHERE bundle ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED) "
                          "SELECT * FROM single UNION ALL SELECT * FROM bundled ORDER BY 1"},
  };
  return *statements;
}

}  // namespace trigd::pg_internal
