// Runs after launch: a worker's failed attempt retried, lost runs, next attempts, and the
// program topic's caught-up marks that measure silence.
#include "store/pg_store_parts.h"

namespace trigd {

using nlohmann::json;
using namespace pg_internal;  // NOLINT(google-build-using-namespace): the module's own helpers

// A worker reported its attempt failed: core's OnReport decides whether the run waits for its
// next attempt (retry_wait: attempts left and the schedule still there; the sweep relaunches it
// with the same run id, docs/adr/0011-worker-failures-are-retried.md), and the retry policy's
// RetryBackoff how long; true when it does. Otherwise the report is the run's end, applied by
// the caller like any other report.
bool PgStore::RetryFailedAttempt(const TxContext& ctx, const RunReport& rep) {
  pqxx::transaction_base& tx = ctx.tx;
  // The run row locked (FOR UPDATE OF r) and read in its state: the decision below holds for
  // that state, which no other transaction can change before this one commits. The attempt and
  // program filters keep a report of another attempt or program from moving the run. A deleted
  // schedule has no row (s.id is null): its run is not retried, its retry policy is gone with
  // its document.
  pqxx::result r = tx.exec_params(
      "SELECT r.state, r.attempt, r.max_attempts, r.schedule_id, s.version, s.document::text FROM runs r "
      "LEFT JOIN schedules s ON s.id = r.schedule_id "
      "WHERE r.run_id = $1 AND ($2 = 0 OR r.attempt = $2) AND r.program = $3 FOR UPDATE OF r",
      rep.run_id, rep.attempt, rep.program);
  if (r.empty()) return false;
  const int64_t attempt = r[0][1].as<int64_t>();
  const bool schedule_exists = !r[0][4].is_null();
  const std::optional<RunTransition> t =
      OnReport(RunStateOf(r[0][0]), ProgramStatus::kFailed, attempt, r[0][2].as<int64_t>(), schedule_exists);
  if (!t || !t->retry) return false;
  RetryPolicy retry;
  if (auto s = cache_.Get(r[0][3].as<int64_t>(), r[0][4].as<int>(), r[0][5].as<std::string>())) retry = s->retry;
  const Millis wait = RetryWait(retry, attempt);
  tx.exec_params(
      "UPDATE runs SET state = $4, reason = 'failed', last_seen_at = now(), "
      "next_attempt_at = now() + make_interval(secs => $2::bigint / 1000.0), "
      "history = trigd_append_history(history, jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT
      ", "
      "'status', 'failed', 'attempt', attempt, 'retry_in', $3::text))) WHERE run_id = $1",
      rep.run_id, static_cast<int64_t>(wait.count()), FormatDuration(wait), std::string(RunStateName(t->next)));
  return true;
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

namespace {

// A run waiting for its next attempt when its schedule was deleted: `trigctl schedules
// delete` kills those it sees, and this catches one whose retry was decided by a
// transaction that committed after the delete's. Nothing of a deleted schedule launches.
void KillRetriesOfDeleted(pqxx::transaction_base& tx, const TopicNames& topics, std::vector<EndedRun>& ended,
                          SweepResult& out) {
  const pqxx::result killed_by_delete =
      tx.exec("UPDATE runs SET " + pg_internal::KilledByDeleteSet() +
              "WHERE run_id IN (SELECT run_id FROM runs WHERE state=" + Sql(RunState::kRetryWait) +
              " AND next_attempt_at <= now() "
              "AND NOT EXISTS (SELECT 1 FROM schedules s WHERE s.id = runs.schedule_id) "
              "LIMIT 1000 FOR UPDATE SKIP LOCKED) RETURNING schedule_id, concurrency_group, " TRIGD_ENDED_RUN_COLUMNS);
  for (const auto& r : killed_by_delete) {
    ++out.killed;
    ended.push_back(
        {r[0].as<int64_t>(), r[1].is_null() ? std::nullopt : std::optional<std::string>(r[1].as<std::string>())});
  }
  pg_internal::KillByDeleteEvents(tx, topics, killed_by_delete, 2);
}

// The next attempt of runs whose backoff passed: its number and launch time are columns, placed
// into the run's request template by the relay (RenderLaunchRequest); the stored text is not
// touched.
void RelaunchDue(pqxx::transaction_base& tx, const TopicNames& topics, OutboxRows& outbox, SweepResult& out) {
  for (const auto& r :
       tx.exec("UPDATE runs SET state=" + Sql(RunState::kLaunched) +
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
    outbox.AddLaunch(topics.Launch(r[0].as<std::string>()), r[1].c_str(), r[2].c_str(), a);
  }
}

}  // namespace

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
                 ", state, "
                 // Past its schedule's run_timeout (docs/adr/0113-run-timeout.md), rather than silent.
                 "coalesce(attempt_launched_at <= now() - make_interval(secs => (SELECT run_timeout_ms FROM schedules "
                 "s WHERE s.id = runs.schedule_id) / 1000.0), false) FROM runs "
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
                 ") / 1000.0) "
                 // Runs past their schedule's run_timeout: only schedules that set one.
                 "UNION ALL SELECT r.run_id FROM schedules s JOIN runs r ON r.schedule_id = s.id AND r.state IN " +
                 SqlIn(RunState::kLaunched, RunState::kRunning) +
                 " WHERE s.run_timeout_ms IS NOT NULL "
                 "AND r.attempt_launched_at <= now() - make_interval(secs => s.run_timeout_ms / 1000.0)) "
                 "ORDER BY last_seen_at LIMIT 1000 FOR UPDATE SKIP LOCKED")) {
      const bool timed_out = r[11].as<bool>();
      const char* why = timed_out ? "timeout" : "lost";
      ++(timed_out ? out.timed_out : out.lost);
      std::string run_id = r[0].as<std::string>();
      int64_t attempt = r[1].as<int64_t>(), max_attempts = r[2].as<int64_t>();
      int64_t schedule_id = r[4].as<int64_t>();
      // Lost: retried while attempts are left, failed otherwise; a deleted schedule's lost run
      // is not retried (its failure is final, as a worker's `failed` report is). The decision
      // is core/run_lifecycle.h's; this applies it (the rows were read locked, in their state).
      const std::optional<RunTransition> t =
          timed_out ? OnRunTimeout(pg_internal::RunStateOf(r[10]), attempt, max_attempts, !r[7].is_null())
                    : OnSilence(pg_internal::RunStateOf(r[10]), attempt, max_attempts, !r[7].is_null());
      TRIGD_CHECK_MSG(t.has_value(), "run " + run_id + " found silent in state " + r[10].as<std::string>());
      const bool retry = t->retry;
      // Every worker is told the attempt ended, so none starts its request later (the control
      // topic, control_message.h); a retry, attempt + 1, still runs.
      if (t->control_message) {
        outbox.Add(topics_.control, run_id,
                   pg_internal::ControlMessage(
                       {run_id, attempt, retry ? why : "failed", why, !retry, pg_internal::StartByField(r[9])}, now));
      }
      if (retry) {
        RetryPolicy retry;
        if (auto s = cache_.Get(schedule_id, r[7].as<int>(), r[8].as<std::string>())) retry = s->retry;
        const Millis wait = RetryWait(retry, attempt);
        tx.exec_params(
            "UPDATE runs SET state=" + Sql(t->next) +
                ", reason=$4, "
                "next_attempt_at = now() + make_interval(secs => $2::bigint / 1000.0), "
                "history = trigd_append_history(history, jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT
                ", "
                "'status', $4::text, 'attempt', attempt, 'retry_in', $3::text))) WHERE run_id=$1",
            run_id, static_cast<int64_t>(wait.count()), FormatDuration(wait), std::string(why));
      } else {
        if (!timed_out) ++out.failed;
        const pqxx::result lost_run = tx.exec_params(
            "UPDATE runs SET state=" + Sql(t->next) +
                ", reason=$2, finished_at=now(), "
                "history = trigd_append_history(history, jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT
                ", "
                "'status', 'failed', 'reason', $2::text, 'attempt', attempt))) WHERE run_id=$1 RETURNING lineage",
            run_id, std::string(why));
        ended.push_back(
            {schedule_id, r[6].is_null() ? std::nullopt : std::optional<std::string>(r[6].as<std::string>())});
        if (!t->program_event) continue;
        Event e;
        e.id = std::string(why) + ":" + run_id + ":" + std::to_string(attempt);
        e.type = EventType::kProgram;
        e.time = now;
        std::string program = r[3].as<std::string>();
        e.payload = {{"program", program}, {"run_id", run_id}, {"status", "failed"},
                     {"attempt", attempt}, {"reason", why},    {"schedule", r[5].as<std::string>()}};
        if (!lost_run.empty() && !lost_run[0][0].is_null()) e.payload["lineage"] = lost_run[0][0].as<std::string>();
        outbox.Add(topics_.events_program, program, EnvelopeToJson(e).dump());
      }
    }
    KillRetriesOfDeleted(tx, topics_, ended, out);
    RelaunchDue(tx, topics_, outbox, out);
    ReleaseRuns(tx, ended);
    outbox.InsertInto(tx);
    tx.commit();
    return out;
  });
}

}  // namespace trigd
