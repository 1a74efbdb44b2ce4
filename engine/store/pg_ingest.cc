// Ingestion: one transaction per batch of events (positions, de-duplication, run reports,
// jobs accumulated, the fast path's check).
#include "store/lineage_store.h"
#include "store/pg_store_parts.h"

namespace trigd {

using nlohmann::json;
using namespace pg_internal;  // NOLINT(google-build-using-namespace): the module's own helpers

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

// Everything an ingest batch does after its positions, phase by phase: shared by ApplyBatch and
// by the tick (which applies its own ticks, see TickTimeTriggers).
class PgStore::IngestStep {
 public:
  IngestStep(PgStore& store, const TxContext& ctx, const IngestBatch& batch, Relevant& relevant, IngestResult& result)
      : store_(store), ctx_(ctx), tx_(ctx.tx), batch_(batch), relevant_(relevant), result_(result) {}

  void Run() {
    Collect();
    if (!batch_.own_ticks && !relevant_.tick_ids.empty()) {
      std::set<size_t> repeated;
      for (size_t k : store_.CheckProducerTicks(ctx_, built_->inputs)) repeated.insert(input_index_[k]);
      DropInputs(repeated, EventOutcome::kDuplicate);
    }
    // A report without its lineage gets its run's (SPEC §10), for the triggers and launch requests.
    pg_internal::FillReportLineages(tx_, built_->inputs, built_->filled);
    LoadOpenJobs();
    if (!reports_.empty()) ApplyReports();
    Accumulate();
    UpdateStoredJobs();
    CopyNewJobs();
    PublishAndCheck();
    // After the jobs and the fast path's launches: a lineage with a job waiting or a run just
    // launched has not ended. The check's writes, deferred to the COMMIT, go first then.
    const bool may_end = !ended_run_ids_.empty() || !ended_lineages_.empty();
    if (may_end && ctx_.deferred_writes && !ctx_.deferred_writes->empty()) {
      tx_.exec_prepared("checker_writes", pqxx::prepare::make_dynamic_params(*ctx_.deferred_writes));
      ctx_.deferred_writes->clear();
    }
    for (const auto& [outcome, n] : pg_internal::EndLineages(tx_, ended_run_ids_, ended_lineages_)) {
      result_.lineage_outcomes[outcome] += n;
    }
    if (ctx_.free_after_commit) *ctx_.free_after_commit = std::move(built_);
  }

 private:
  // The batch's jobs, their trigger states and triggering events, and the schedules' views:
  // freeing those of a 5,000-event batch took 2 ms, with the transaction open and its locks
  // held; a caller that commits next frees them after its COMMIT.
  struct Built {
    std::vector<AccumulateInput> inputs;
    std::map<int64_t, ScheduleView> schedules;
    Accumulation acc;
    std::vector<FreshJob> fresh_jobs;  // new jobs that are complete: decided before written (fast path)
    std::deque<Event> filled;          // program events with the lineage read from their run
  };

  // The events not seen before: run reports, and inputs for the schedules they reach.
  void Collect() {
    for (size_t i = 0; i < batch_.events.size(); ++i) {
      if (!relevant_.relevant[i]) continue;
      const Event& e = batch_.events[i];
      // The first copy of an id in the batch wins; later copies are duplicates.
      if (!relevant_.fresh.erase(relevant_.Key(i, e))) {
        result_.outcome[i] = EventOutcome::kDuplicate;
        continue;
      }
      if (e.type == EventType::kProgram && !e.program.run_id.empty()) {
        reports_.push_back(
            {e.program.run_id, e.program.program, e.program.status, e.program.attempt, i,
             (e.id.starts_with("lost:") && e.program.reason == "lost") ||
                 (e.id.starts_with("unpublishable:") && e.program.reason == "unpublishable") ||
                 (e.id.starts_with("timeout:") && e.program.reason == "timeout") ||
                 (e.id.starts_with("killed:") && (e.program.reason == "schedule_deleted" ||
                                                  e.program.reason == "cancelled" || e.program.reason == "overlap"))});
      }
      if (!batch_.schedule_ids[i].empty()) {
        built_->inputs.push_back({&e, batch_.schedule_ids[i]});
        input_index_.push_back(i);
        reached_.insert(batch_.schedule_ids[i].begin(), batch_.schedule_ids[i].end());
      }
    }
  }

  // Drops the inputs of these events (by batch index): no trigger counts them.
  void DropInputs(const std::set<size_t>& events, EventOutcome outcome) {
    if (events.empty()) return;
    std::vector<AccumulateInput>& inputs = built_->inputs;
    size_t kept = 0;
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (events.count(input_index_[k])) {
        result_.outcome[input_index_[k]] = outcome;
        continue;
      }
      inputs[kept] = inputs[k];
      input_index_[kept++] = input_index_[k];
    }
    inputs.resize(kept);
    input_index_.resize(kept);
  }

  // The reached schedules (share-locked) and their open jobs (locked), in one round trip.
  void LoadOpenJobs() {
    if (reached_.empty()) return;
    std::vector<std::pair<int64_t, int>> versions;
    for (const auto& r : tx_.exec_prepared("schedules_and_open_jobs", IntArray(reached_))) {
      if (r[2].is_null()) {
        versions.emplace_back(r[0].as<int64_t>(), r[1].as<int>());
        continue;
      }
      open_.push_back(pg_internal::OpenJobFromRow(r));
    }
    built_->schedules = ResolveSchedules(tx_, store_.cache_, versions);
    std::erase_if(open_, [&](const OpenJob& job) { return !built_->schedules.count(job.schedule_id); });
    // Correlated schedules (docs/adr/0115): their open jobs are read again once this
    // transaction holds the lock of each (schedule, lineage) it touches, so that what another
    // instance committed meanwhile for one of those lineages is seen.
    if (pg_internal::LockCorrelatedLineages(tx_, built_->inputs, built_->schedules)) {
      const std::set<int64_t> correlated = pg_internal::CorrelatedSchedules(built_->schedules);
      std::erase_if(open_, [&](const OpenJob& job) { return correlated.contains(job.schedule_id); });
      for (OpenJob& job : pg_internal::LoadOpenJobs(tx_, correlated)) open_.push_back(std::move(job));
      failed_lineages_ = pg_internal::LoadFailedLineages(tx_, built_->schedules);
    }
  }

  // Run reports first: one that moves no run trigd knows (a worker's repeated or late report,
  // one for an attempt already retried) changes nothing, and no trigger counts it either (it
  // launched the downstream schedule again, and a late failure of a retried attempt killed
  // it). A report for a run trigd does not know (a program it did not launch) counts as sent.
  // A worker's `failed` report of an attempt that its retry policy retries is applied to the
  // run (retry_wait), but no `program` trigger sees it, as for a lost run's attempts; the last
  // attempt's failure is the one downstream schedules see.
  void ApplyReports() {
    std::vector<size_t> unmoved;
    std::set<size_t> retried;
    for (size_t k = 0; k < reports_.size(); ++k) {
      const RunReport& rep = reports_[k];
      if (rep.status == ProgramStatus::kFailed && !rep.own && store_.RetryFailedAttempt(ctx_, rep)) {
        result_.outcome[rep.event] = EventOutcome::kApplied;
        retried.insert(rep.event);
        continue;
      }
      if (!MoveRun(rep) && !rep.own) unmoved.push_back(k);
    }
    if (!unmoved.empty()) SortUnmoved(unmoved);
    DropInputs(retried, EventOutcome::kApplied);
  }

  // The report applied to its run, if the run is in a state it may move from; false if none is.
  bool MoveRun(const RunReport& rep) {
    const bool final_status = IsFinal(rep.status);
    const std::string status = ProgramStatusName(rep.status);
    // The state the report moves the run to (model/run.h); the WHERE below is the
    // compare-and-set on the states it may move from.
    const RunState to = RunStateAfterReport(rep.status);
    TRIGD_CHECK(IsAllowedTransition(RunState::kLaunched, to) &&
                (to == RunState::kRunning || IsAllowedTransition(RunState::kRunning, to)));
    auto r = tx_.exec_params(
        "UPDATE runs SET state = $6, last_seen_at = now(), worker = coalesce($7, worker), "
        "attempt_started_at = CASE WHEN $2 = 'started' THEN now() ELSE attempt_started_at END, "
        "finished_at = CASE WHEN $3 THEN now() END, reason = CASE WHEN $3 THEN $2 ELSE reason END, "
        "history = CASE WHEN $2 = 'heartbeat' THEN history ELSE trigd_append_history(history, "
        "jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT
        ", 'status', $2::text, 'attempt', attempt))) END "
        "WHERE run_id = $1 AND state IN " +
            SqlIn(RunState::kLaunched, RunState::kRunning) +
            " AND ($4 = 0 OR attempt = $4) AND program = $5 "
            "RETURNING schedule_id, concurrency_group",
        rep.run_id, status, final_status, rep.attempt, rep.program, RunStateName(to),
        batch_.events[rep.event].program.worker.empty()
            ? std::optional<std::string>()
            : std::optional<std::string>(batch_.events[rep.event].program.worker));
    if (r.empty()) return false;
    result_.outcome[rep.event] = EventOutcome::kApplied;
    if (!final_status) return true;
    ++result_.run_outcomes[status];
    ended_run_ids_.push_back(rep.run_id);
    ended_.push_back({r[0][0].as<int64_t>(),
                      r[0][1].is_null() ? std::nullopt : std::optional<std::string>(r[0][1].as<std::string>())});
    return true;
  }

  // Reports that moved no run: stale ones (a run trigd knows, in a state past them) are
  // duplicates; one naming another program than its run's is a dead letter; one of a run trigd
  // does not know counts for triggers as sent.
  void SortUnmoved(const std::vector<size_t>& unmoved) {
    SqlArray run_ids;
    for (size_t k : unmoved) run_ids.AddText(reports_[k].run_id);
    std::unordered_map<std::string, std::string> known;  // run id -> its program
    for (const auto& r :
         tx_.exec_params("SELECT run_id, program FROM runs WHERE run_id = ANY($1::text[])", run_ids.Take())) {
      known.emplace(r[0].as<std::string>(), r[1].as<std::string>());
    }
    std::set<size_t> stale, refused;
    for (size_t k : unmoved) {
      auto run = known.find(reports_[k].run_id);
      if (run == known.end()) continue;
      const size_t i = reports_[k].event;
      if (run->second == reports_[k].program) {
        stale.insert(i);
        result_.outcome[i] = EventOutcome::kDuplicate;
        continue;
      }
      // Another program's run: applied, it would end that run and send its outcome down the
      // wrong DAG: a dead letter, naming both programs.
      const Event& e = batch_.events[i];
      const Status why =
          DeadLetterStatus(DeadLetterReason::kBadField, "payload.program: run " + reports_[k].run_id + " is a run of " +
                                                            run->second + ", not of " + reports_[k].program);
      const IngestBatch::Source source = i < batch_.sources.size() ? batch_.sources[i] : IngestBatch::Source{};
      refused_letters_.push_back({e.program.program, DeadLetterJson(why, source.topic, source.partition, source.offset,
                                                                    EnvelopeToJson(e).dump())});
      result_.dead_reasons.push_back(DeadLetterReason::kBadField);
      refused.insert(i);
      result_.outcome[i] = EventOutcome::kDead;
    }
    DropInputs(stale, EventOutcome::kDuplicate);
    DropInputs(refused, EventOutcome::kDead);
  }

  // core's Accumulate over the open jobs, while the event ids' COPY (if any) is inserted by the
  // server.
  void Accumulate() {
    std::optional<CopyStream> id_copy;
    if (relevant_.copy_ids) {
      id_copy.emplace(tx_, "seen_events", std::vector<std::string>{"id"});
      for (std::string_view id : relevant_.ids) {
        id_copy->Row().AddText(id);
        id_copy->EndRow();
      }
      id_copy->Send();
    }
    built_->acc = trigd::Accumulate(built_->inputs, built_->schedules, std::move(open_), failed_lineages_, ctx_.now);
    if (id_copy) id_copy->Finish();
    pg_internal::StoreFailedLineages(tx_, built_->acc.failed_lineages);
    for (size_t k = 0; k < built_->inputs.size(); ++k) {
      if (built_->acc.applied[k]) result_.outcome[input_index_[k]] = EventOutcome::kApplied;
    }
    for (const OpenJob& job : built_->acc.jobs) {
      if (job.id != 0 && !job.changed && !job.discarded && !job.complete) continue;
      if (job.complete) ++result_.jobs_ready;
      if (job.discarded) ++result_.jobs_discarded;
      // A discarded job may have been the last thing active in its lineage (a join's job
      // discarded for an upstream failure after its sibling branch ended).
      if (job.discarded && !job.lineage.empty()) ended_lineages_.push_back(job.lineage);
      if (job.id == 0) ++result_.jobs_opened;
    }
  }

  std::optional<TimePoint> NextCheck(const OpenJob& job, const Schedule& s) const {
    if (job.complete) return ctx_.now;
    // The timeout, or a quiet period's or silence's end (the checker completes the job then).
    if (!job.discarded) return CollectingJobWake(s, job.state, job.opened_at);
    return std::nullopt;
  }
  static const char* StateOf(const OpenJob& job) {
    return JobStateName(job.discarded  ? JobState::kDiscarded
                        : job.complete ? JobState::kPendingConstraint
                                       : JobState::kPendingTrigger);
  }
  // Written by CopyNewJobs: opened by this batch and not decided by the fast path.
  bool Copied(const OpenJob& job) const { return job.id == 0 && !(job.complete && store_.fast_path_); }

  // Changed jobs go back as one array per column (sql_array.h), then new jobs are copied in
  // (CopyNewJobs). Updates first: a batch that completes a stored open job and opens the next one
  // for the same schedule must move the old row out of pending_trigger before the new row is
  // inserted (jobs_one_open allows one per schedule; the other order violates it on every retry).
  // New complete jobs of the fast path are left to the check, which writes each once.
  void UpdateStoredJobs() {
    struct {
      SqlArray id, state, trigger_state, triggered_by, history, ready_at, next_check_at, discard_reason, lineage;
    } upd;
    std::string text;
    for (OpenJob& job : built_->acc.jobs) {
      if (job.id != 0 && !job.changed && !job.discarded && !job.complete) continue;
      if (Copied(job)) continue;
      const Schedule& s = *built_->schedules.at(job.schedule_id).schedule;
      if (job.id == 0) {
        FreshJob& f = built_->fresh_jobs.emplace_back();
        f.schedule_id = job.schedule_id;
        f.version = job.schedule_version;
        f.priority = s.priority;
        f.schedule_name = s.id().value();
        f.trigger_state = TriggerStateText(job.state);
        TriggeredByJson(job.triggered_by, f.triggered_by);
        f.history = std::move(job.history);  // written with the decision (CheckJobs)
        f.opened_at = job.opened_at;
        if (s.constraints.concurrency_group) f.group = s.constraints.concurrency_group->name;
        f.lineage = job.complete ? pg_internal::ProspectiveLineage(job) : job.lineage;
        continue;
      }
      const std::optional<TimePoint> next_check = NextCheck(job, s);
      upd.id.AddInt(job.id);
      upd.state.AddText(StateOf(job));
      upd.trigger_state.AddText(TriggerStateText(job.state));
      TriggeredByJson(job.triggered_by, text);
      upd.triggered_by.AddText(text);
      upd.history.AddText(JsonArray(job.history));
      upd.ready_at.AddIntOrNull(job.complete ? std::optional<int64_t>(ToMillis(ctx_.now)) : std::nullopt);
      upd.next_check_at.AddIntOrNull(next_check ? std::optional<int64_t>(ToMillis(*next_check)) : std::nullopt);
      job.discarded ? upd.discard_reason.AddText(job.discard_reason) : upd.discard_reason.AddNull();
      upd.lineage.AddText(job.complete ? pg_internal::ProspectiveLineage(job) : job.lineage);
    }
    if (upd.id.empty()) return;
    tx_.exec_params(
        "UPDATE jobs j SET state = x.state, trigger_state = x.trigger_state, triggered_by = x.triggered_by, "
        "history = trigd_append_history(j.history, x.history), "
        "ready_at = coalesce(to_timestamp(x.ready_at / 1000.0), j.ready_at), "
        "next_check_at = to_timestamp(x.next_check_at / 1000.0), discard_reason = x.discard_reason, lineage = "
        "x.lineage, "
        "finished_at = CASE WHEN x.state = " +
            Sql(JobState::kDiscarded) +
            " THEN now() END "
            "FROM unnest($1::bigint[], $2::text[], $3::jsonb[], $4::jsonb[], $5::jsonb[], $6::bigint[], "
            "$7::bigint[], $8::text[], $9::text[]) "
            "AS x(id, state, trigger_state, triggered_by, history, ready_at, next_check_at, discard_reason, lineage) "
            "WHERE j.id = x.id",
        upd.id.Take(), upd.state.Take(), upd.trigger_state.Take(), upd.triggered_by.Take(), upd.history.Take(),
        upd.ready_at.Take(), upd.next_check_at.Take(), upd.discard_reason.Take(), upd.lineage.Take());
  }

  // New jobs by COPY (PostgreSQL fills whole heap pages per WAL record, where INSERT writes a
  // record per row; the same path as the append benchmark's baseline).
  void CopyNewJobs() {
    CopyStream ins(
        tx_, "jobs",
        {"schedule_id", "schedule_name", "schedule_version", "state", "priority", "trigger_state", "triggered_by",
         "history", "opened_at", "first_event_at", "ready_at", "next_check_at", "concurrency_group", "lineage"});
    std::string text;
    // A complete job's ready_at and next check are this transaction's now: formatted once.
    const std::string now_text = FormatTime(ctx_.now);
    for (const OpenJob& job : built_->acc.jobs) {
      if (!Copied(job)) continue;
      const Schedule& s = *built_->schedules.at(job.schedule_id).schedule;
      const std::optional<TimePoint> next_check = NextCheck(job, s);
      CopyRows& row = ins.Row();
      // Timestamps as ISO 8601 text (FormatTime, milliseconds): the same instants as the
      // to_timestamp(ms / 1000.0) of the other statements.
      row.AddInt(job.schedule_id);
      row.AddText(s.id().value());
      row.AddInt(job.schedule_version);
      row.AddText(StateOf(job));
      row.AddInt(s.priority);
      row.AddText(TriggerStateText(job.state));
      TriggeredByJson(job.triggered_by, text);
      row.AddText(text);
      row.AddText(JsonArray(job.history));
      const std::string opened_at = FormatTime(job.opened_at);
      row.AddText(opened_at);
      row.AddText(opened_at);
      job.complete ? row.AddText(now_text) : row.AddNull();
      if (!next_check) {
        row.AddNull();
      } else {
        row.AddText(*next_check == ctx_.now ? now_text : FormatTime(*next_check));
      }
      s.constraints.concurrency_group ? row.AddText(s.constraints.concurrency_group->name) : row.AddNull();
      row.AddText(job.complete ? pg_internal::ProspectiveLineage(job) : job.lineage);
      ins.EndRow();
    }
    ins.Finish();
  }

  // Dead letters and trigd's own program events into the outbox; then the fast path: jobs that
  // became ready, and waiting jobs their schedules' ended runs woke, are checked in this same
  // transaction, so an event whose job can launch at once is launched by one commit instead of
  // two (ingest, then the checker loop). The checker step is the same code and claims the due
  // jobs of those schedules and groups in the same priority order; what still waits is left to
  // the checker loop. Jobs this batch opened and completed were not written above: the check
  // decides them first and inserts each once, in its decided state (an insert as pending and an
  // update to launched cost twice the WAL, and left dead entries in every pending-state index).
  void PublishAndCheck() {
    // With the fast path, the check frees the ended runs' slots once it holds every counter row
    // it needs (see ReleaseRuns); their waiting jobs are woken first, so the check can claim
    // them, and again once the counters are held (WakeWaitingJobs).
    const bool fast_path = store_.fast_path_ && (result_.jobs_ready > 0 || !ended_.empty());
    if (!fast_path) {
      ReleaseRuns(tx_, ended_);
    } else if (!ended_.empty()) {
      WakeWaitingJobs(tx_, EndedRuns(ended_));
    }
    OutboxRows outbox;
    // The key as Kafka delivered it, made storable (the payload is JSON trigd wrote).
    for (const DeadLetter& d : batch_.dead) outbox.Add(store_.topics_.dead, ValidText(d.key), d.payload);
    for (const DeadLetter& d : refused_letters_) outbox.Add(store_.topics_.dead, d.key, d.payload);
    for (const Event& e : built_->acc.published) {
      outbox.Add(store_.topics_.events_program, e.program.program, EnvelopeToJson(e).dump());
    }
    result_.published = static_cast<int>(built_->acc.published.size());
    outbox.InsertInto(tx_);
    if (!fast_path) return;
    CheckFilter filter;
    for (const OpenJob& job : built_->acc.jobs) {
      if (!job.complete) continue;
      filter.schedule_ids.insert(job.schedule_id);
      const Schedule& s = *built_->schedules.at(job.schedule_id).schedule;
      if (s.constraints.concurrency_group) filter.groups.insert(s.constraints.concurrency_group->name);
    }
    for (const EndedRun& e : ended_) {
      filter.schedule_ids.insert(e.schedule_id);
      if (e.group) filter.groups.insert(*e.group);
    }
    filter.loaded = &built_->schedules;
    filter.fresh = &built_->fresh_jobs;
    filter.ended = &ended_;
    bool unused_backlog = false;
    result_.checker = store_.CheckJobs(ctx_, kFastPathLimit, &filter, unused_backlog);
  }

  PgStore& store_;
  const TxContext& ctx_;
  pqxx::transaction_base& tx_;
  const IngestBatch& batch_;
  Relevant& relevant_;
  IngestResult& result_;
  std::shared_ptr<Built> built_ = std::make_shared<Built>();
  std::vector<size_t> input_index_;  // per input: its event's index in the batch
  std::set<int64_t> reached_;
  std::vector<RunReport> reports_;
  std::vector<OpenJob> open_;
  std::vector<EndedRun> ended_;
  std::vector<std::string> ended_run_ids_;   // for the lineages' endings (EndLineages)
  std::vector<std::string> ended_lineages_;  // of the jobs discarded here, likewise
  FailedLineageSet failed_lineages_;         // of the reached correlated schedules
  std::vector<DeadLetter> refused_letters_;  // reports refused here (another program's run)
};

void PgStore::ApplyEvents(const TxContext& ctx, const IngestBatch& batch, Relevant& relevant, IngestResult& result) {
  IngestStep(*this, ctx, batch, relevant, result).Run();
}

}  // namespace trigd
