// The constraint checker step: due jobs claimed, decided by core, written.
#include "store/lineage_store.h"
#include "store/pg_store_parts.h"

#include "core/arg_template.h"
#include "core/check_plan.h"

namespace trigd {

using nlohmann::json;
using namespace pg_internal;  // NOLINT(google-build-using-namespace): the module's own helpers

// The checker step in one transaction, phase by phase: claim the due jobs, lock the run
// counters they need (schedules, then groups, each in one order), decide each job with core's
// CheckPlanner (core/check_plan.h: every decision, its history text and the counters it moves;
// docs/adr/0142), and write every decision in one statement (checker_writes) or by COPY. What
// stays here is mechanics: the claim, the locks, row decoding and the writes.
class PgStore::CheckStep {
 public:
  CheckStep(PgStore& store, const TxContext& ctx, size_t limit, const CheckFilter* filter)
      : store_(store),
        ctx_(ctx),
        tx_(ctx.tx),
        now_(ctx.now),
        limit_(limit),
        filter_(filter),
        run_history_("[{\"at\": " + ctx.now_json + ", \"status\": \"launched\", \"attempt\": 1}]"),
        at_(FormatTime(ctx.now)) {}

  CheckerResult Run(bool& claim_backlog) {
    Claim(claim_backlog);
    AddFresh();
    const std::optional<EndedRuns> ended = filter_ && filter_->ended && !filter_->ended->empty()
                                               ? std::optional<EndedRuns>(*filter_->ended)
                                               : std::nullopt;
    if (due_.empty() && undecided_.empty()) {
      // Nothing to check: the ended runs' counters, schedules then groups (the claim locked
      // no group row, and the schedule rows it locked include these); held, their waiting jobs
      // are woken again.
      if (ended) {
        DecrementCounters(tx_, *ended);
        WakeWaitingJobs(tx_, *ended);
      }
      return result_;
    }
    LoadSchedulesOfDue();
    LockCounters(ended);
    if (ended) FreeEndedSlots(*ended);
    LoadRecentLaunches();
    for (const auto& [id, v] : schedules_) checked_[id] = {v.version, v.schedule.get()};
    planner_.emplace(checked_, counters_, now_);
    const bool as_arrays = due_.size() + undecided_.size() <= kRowsAsArraysLimit;
    runs_.emplace(kRuns.columns.size(), as_arrays);
    outbox_.emplace(as_arrays);
    fresh_rows_.emplace(kDecidedJobs.columns.size(), as_arrays);
    for (const Due& d : undecided_) WriteJob(d, JobState::kPendingConstraint, {.next_check_at = ToMillis(now_)});
    for (Due& d : due_) Decide(d);
    Write();
    EndDiscardedLineages();
    return result_;
  }

 private:
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
  // The columns checker_writes sets on a job besides its state (null: left as stored).
  struct JobWrite {
    std::optional<int64_t> next_check_at;
    const std::string* decision = nullptr;
    std::optional<bool> forced;
    const std::string* reason = nullptr;
    const std::string* history = nullptr;  // one entry, appended
  };

  size_t FreshCount() const { return filter_ && filter_->fresh ? filter_->fresh->size() : 0; }

  // A locked counter row: schedule id, active runs, last launch (ms or NULL) from column `c`.
  void PutCounters(const pqxx::row& r, int c) {
    counters_.schedules[r[c].as<int64_t>()] = {
        r[c + 1].as<int64_t>(),
        r[c + 2].is_null() ? std::nullopt : std::optional<TimePoint>(FromMillis(r[c + 2].as<int64_t>()))};
  }

  // The checker loop's claim (no filter): next_check_at is set only on pending jobs (a
  // constraint, schema/004): no state filter, so the planner's estimate of the due jobs is
  // right and it picks the index that fits. During a backlog the estimate can still be stale
  // (statistics from before a storm say nothing is due): PostgreSQL would then sort every due
  // job on every claim, quadratic in the backlog. While the last claim was full, sorting is ruled
  // out: the claim walks jobs_claim in priority order and stops after `limit` due jobs.
  void Claim(bool& claim_backlog) {
    const bool no_sort = claim_backlog && !filter_;
    if (no_sort) tx_.exec("SET LOCAL enable_sort = off");
    const size_t fresh_count = FreshCount();
    pqxx::result claimed;
    if (filter_) {
      SqlArray groups;
      for (const std::string& g : filter_->groups) groups.AddText(g);
      claimed = fresh_count > 0 ? tx_.exec_prepared("claim_for_fresh", static_cast<int64_t>(limit_),
                                                    IntArray(filter_->schedule_ids), groups.Take(),
                                                    static_cast<int64_t>(fresh_count))
                                : tx_.exec_prepared("claim_for", static_cast<int64_t>(limit_),
                                                    IntArray(filter_->schedule_ids), groups.Take());
    } else {
      // Planned for each claim (enable_sort above), not prepared: a cached generic plan would
      // keep the setting it was made with.
      const std::string shard = store_.shard_count_ > 1 ? "AND schedule_id % " + std::to_string(store_.shard_count_) +
                                                              " = " + std::to_string(store_.shard_index_) + " "
                                                        : "";
      claimed = tx_.exec_params(ClaimColumnsSql() + shard + TRIGD_CLAIM_ORDER, static_cast<int64_t>(limit_));
    }
    for (const auto& r : claimed) {
      if (r.size() > 12 && !r[12].is_null()) {
        PutCounters(r, 12);
        continue;
      }
      if (r.size() > 11 && !r[11].is_null()) {
        fresh_ids_.push_back(r[11].as<int64_t>());
        continue;
      }
      Due d{r[0].as<int64_t>(),
            r[1].as<int64_t>(),
            r[2].as<int>(),
            JobStateOf(r[3]),
            r[4].is_null() ? std::string() : r[4].as<std::string>(),
            r[5].as<std::string>(),
            FromMillis(r[6].as<int64_t>()),
            r[7].is_null() ? std::nullopt : std::optional<TimePoint>(FromMillis(r[7].as<int64_t>())),
            r[8].as<std::string>(),
            r[9].as<std::string>(),
            r[10].as<int>()};
      sids_.insert(d.schedule_id);
      due_.push_back(std::move(d));
    }
    if (no_sort) tx_.exec("SET LOCAL enable_sort = on");
    if (!filter_) claim_backlog = due_.size() == limit_;
  }

  // Fresh jobs became ready now, after every stored one, and their ids are the newest: in
  // the claim's order (priority, ready_at, id) they go after the stored jobs of their
  // priority. Those past `limit` are written undecided, due now, for the checker loop.
  void AddFresh() {
    const size_t fresh_count = FreshCount();
    if (fresh_count == 0) return;
    for (size_t k = 0; k < fresh_count; ++k) {
      const FreshJob& f = (*filter_->fresh)[k];
      Due d{fresh_ids_.at(k), f.schedule_id,  f.version,   JobState::kPendingConstraint,
            std::string(),    f.triggered_by, f.opened_at, now_,
            std::string(),    ctx_.now_text,  f.priority,  &f};
      sids_.insert(d.schedule_id);
      due_.push_back(std::move(d));
    }
    std::stable_sort(due_.begin(), due_.end(), [](const Due& a, const Due& b) {
      if (a.priority != b.priority) return a.priority > b.priority;
      if (a.ready_at.has_value() != b.ready_at.has_value()) return a.ready_at.has_value();  // NULLS LAST
      if (a.ready_at != b.ready_at) return *a.ready_at < *b.ready_at;
      return a.id < b.id;
    });
    while (due_.size() > limit_) {
      if (due_.back().fresh) undecided_.push_back(std::move(due_.back()));
      due_.pop_back();
    }
  }

  void LoadSchedulesOfDue() {
    if (!filter_ || !filter_->loaded) {
      schedules_ = LoadSchedules(tx_, store_.cache_, sids_);
      return;
    }
    std::set<int64_t> missing;
    for (int64_t id : sids_) {
      if (auto it = filter_->loaded->find(id); it != filter_->loaded->end())
        schedules_.insert(*it);
      else
        missing.insert(id);
    }
    schedules_.merge(LoadSchedules(tx_, store_.cache_, missing));
  }

  // Lock the run counters, schedules then groups, each in a fixed order (no deadlock
  // between checkers); a concurrent run end waits for this transaction and vice versa.
  // The counters of runs this transaction ended (filter->ended) are locked with them.
  void LockCounters(const std::optional<EndedRuns>& ended) {
    std::set<std::string> groups;
    std::set<int64_t> counter_ids;
    for (const auto& [id, v] : schedules_) {
      counter_ids.insert(id);
      if (v.schedule->constraints.concurrency_group) groups.insert(v.schedule->constraints.concurrency_group->name);
    }
    if (ended) {
      for (const auto& [id, n] : ended->per_schedule) counter_ids.insert(id);
      for (const auto& [name, n] : ended->per_group) groups.insert(name);
    }
    LockScheduleCounters(counter_ids);
    LockGroupCounters(groups);
  }

  // A schedule's counter row is created by its first check: the rows are locked first (by
  // the claim itself on the fast path) and only missing ones are created (then locked).
  void LockScheduleCounters(const std::set<int64_t>& counter_ids) {
    if (counter_ids.empty()) return;
    auto lock = [&](const std::string& id_array) {
      for (const auto& r : tx_.exec_prepared("lock_counters", id_array)) PutCounters(r, 0);
    };
    if (FreshCount() == 0) lock(IntArray(counter_ids));  // else claim_for_fresh locked them
    std::vector<int64_t> missing;
    for (int64_t id : counter_ids) {
      if (!counters_.schedules.count(id)) missing.push_back(id);
    }
    if (missing.empty()) return;
    const std::string id_array = IntArray(missing);
    tx_.exec_params("INSERT INTO schedule_runtime (schedule_id) SELECT unnest($1::bigint[]) ON CONFLICT DO NOTHING",
                    id_array);
    lock(id_array);
  }

  void LockGroupCounters(const std::set<std::string>& groups) {
    if (groups.empty()) return;
    auto lock = [&](const std::set<std::string>& names) {
      SqlArray a;
      for (const std::string& g : names) a.AddText(g);
      for (const auto& r : tx_.exec_params(
               "SELECT name, active_runs FROM group_runtime WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE",
               a.Take())) {
        counters_.groups[r[0].as<std::string>()] = r[1].as<int64_t>();
      }
    };
    lock(groups);
    if (counters_.groups.size() >= groups.size()) return;
    std::set<std::string> missing;
    for (const std::string& g : groups) {
      if (!counters_.groups.count(g)) missing.insert(g);
    }
    SqlArray a;
    for (const std::string& g : missing) a.AddText(g);
    tx_.exec_params("INSERT INTO group_runtime (name) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING", a.Take());
    lock(missing);
  }

  // Every counter row is locked now: the ended runs' slots are freed, in the rows and in
  // the counts the checks below use (its writes set the counters it changes absolutely).
  void FreeEndedSlots(const EndedRuns& ended) {
    DecrementCounters(tx_, ended);
    std::vector<int64_t> claimed_ids;
    for (const Due& d : due_) {
      if (!d.fresh) claimed_ids.push_back(d.id);
    }
    WakeWaitingJobs(tx_, ended, claimed_ids);
    counters_.FreeEnded(ended.per_schedule, ended.per_group);
  }

  // Launch times within each schedule's max_runs_per period, read after the locks.
  void LoadRecentLaunches() {
    std::vector<int64_t> ids;
    Millis longest{0};
    for (const auto& [id, v] : schedules_) {
      if (v.schedule->constraints.max_runs_per) {
        ids.push_back(id);
        longest = std::max(longest, v.schedule->constraints.max_runs_per->period);
      }
    }
    if (ids.empty()) return;
    for (const auto& r :
         tx_.exec_params("SELECT schedule_id, " TRIGD_MS(
                             "launched_at") " FROM runs "
                                            "WHERE schedule_id = ANY($1::bigint[]) "
                                            "AND launched_at > now() - make_interval(secs => $2::bigint / 1000.0)",
                         IntArray(ids), static_cast<int64_t>(longest.count()))) {
      counters_.launches[r[0].as<int64_t>()].push_back(FromMillis(r[1].as<int64_t>()));
    }
  }

  // A job's decision: a stored job's columns go to checker_writes' arrays; a fresh job is
  // copied in once, in the state decided for it, with its history so far and the decision's
  // entry (the columns checker_writes sets on a stored job, likewise).
  void WriteJob(const Due& d, JobState state, const JobWrite& w) {
    // A job that stays waiting keeps its state; any other change is one of model/job.h's.
    TRIGD_CHECK_MSG(
        state == d.state || IsAllowedTransition(d.state, state),
        std::string("job ") + std::to_string(d.id) + ": " + JobStateName(d.state) + " -> " + JobStateName(state));
    if (!d.fresh) {
      jobs_.id.AddInt(d.id);
      jobs_.state.AddText(JobStateName(state));
      jobs_.next_check_at.AddIntOrNull(w.next_check_at);
      w.decision ? jobs_.decision.AddText(*w.decision) : jobs_.decision.AddNull();
      w.forced ? jobs_.forced.AddBool(*w.forced) : jobs_.forced.AddNull();
      w.reason ? jobs_.reason.AddText(*w.reason) : jobs_.reason.AddNull();
      // A trigger the clock completed in this check says so before the decision's entry.
      if (!clock_entry_.empty()) {
        jobs_.history.AddText("[" + clock_entry_ + (w.history ? "," + *w.history : std::string()) + "]");
      } else {
        w.history ? jobs_.history.AddText("[" + *w.history + "]") : jobs_.history.AddNull();
      }
      return;
    }
    const FreshJob& f = *d.fresh;
    TableRows& rows = *fresh_rows_;
    rows.AddInt(d.id);
    rows.AddInt(f.schedule_id);
    rows.AddText(f.schedule_name);
    rows.AddInt(f.version);
    rows.AddText(JobStateName(state));
    rows.AddInt(f.priority);
    rows.AddText(f.trigger_state);
    rows.AddText(f.triggered_by);
    // The history so far and the decision's entry: the first and the newest, kMaxJobHistory
    // in all (as trigd_append_history keeps a stored job's, schema/019).
    const size_t total = f.history.size() + (w.history ? 1 : 0);
    JsonArrayText h;
    if (total > kMaxJobHistory && !f.history.empty()) h.Raw(f.history.front());
    for (size_t i = total > kMaxJobHistory ? total - kMaxJobHistory + 1 : 0; i < f.history.size(); ++i)
      h.Raw(f.history[i]);
    if (w.history) h.Raw(*w.history);
    rows.AddText(h.Take());
    const std::string opened_at = FormatTime(f.opened_at);
    rows.AddText(opened_at);
    rows.AddText(opened_at);
    rows.AddText(FormatTime(now_));
    w.next_check_at ? rows.AddText(FormatTime(FromMillis(*w.next_check_at))) : rows.AddNull();
    f.group ? rows.AddText(*f.group) : rows.AddNull();
    w.decision ? rows.AddText(*w.decision) : rows.AddNull();
    rows.AddText(w.forced.value_or(false) ? "t" : "f");
    w.reason ? rows.AddText(*w.reason) : rows.AddNull();
    state == JobState::kLaunched || state == JobState::kDiscarded ? rows.AddText(ctx_.now_text) : rows.AddNull();
    rows.AddText(f.lineage);
    rows.EndRow();
  }

  // One due job decided by core's CheckPlanner on the counters held, and its decision written.
  void Decide(Due& d) {
    ++result_.checked;
    DueJob job{d.id, d.schedule_id, d.version, d.state, std::nullopt, d.opened_at, d.ready_at, d.last_decision};
    // Decoding only: what the trigger's state means is the planner's.
    if (d.state == JobState::kPendingTrigger) job.trigger = TriggerStateFromJson(json::parse(d.trigger_state));
    JobVerdict v = planner_->Decide(job);
    std::vector<std::optional<std::string>> cancelled;
    if (v.decision == Decision::kLaunch && v.cancel_oldest > 0 && !CancelOldest(d, v.cancel_oldest, cancelled)) {
      v = planner_->TooFewToCancel(job, std::move(v));
    }
    // Runs of a group whose counter is not held (the schedule's group changed since they
    // launched): their rows are decremented here, the planner moved the rest.
    std::vector<EndedRun> not_held;
    for (const auto& [group, n] : planner_->Apply(job, v, cancelled)) not_held.insert(not_held.end(), n, {0, group});
    if (!not_held.empty()) pg_internal::DecrementRunCounters(tx_, not_held);
    clock_entry_.clear();
    if (v.completed_by) clock_entry_ = HistoryEntry(at_, kTriggerCompleteByClock).String("by", *v.completed_by).Take();
    if (v.ready_now) {
      d.ready_at = now_;
      d.ready_text = ctx_.now_text;
    }
    JsonArrayText check_list;
    for (const ConstraintCheck& c : v.checks) {
      ++result_.checks[{std::string(c.constraint), ConstraintResultName(c.result)}];
      check_list.Raw(JsonObjectText()
                         .String("constraint", c.constraint)
                         .String("result", ConstraintResultName(c.result))
                         .String("reason", c.reason)
                         .Take());
    }
    const std::string checks = check_list.Take();
    if (v.decision == Decision::kLaunch) {
      Launch(d, *schedules_.at(d.schedule_id).schedule, v, checks);
    } else if (v.decision == Decision::kDiscard) {
      ++result_.discarded;
      discarded_ids_.push_back(d.id);
      // A job of a schedule gone or changed has no checks (none ran).
      JsonObjectText e = HistoryEntry(at_, *v.history);
      if (v.checked) e.Raw("checks", checks);
      std::string entry = e.Take();
      WriteJob(d, JobState::kDiscarded, {.reason = &v.reason, .history = &entry});
    } else {
      ++result_.waiting;
      std::optional<std::string> entry;
      if (v.history) {
        entry = HistoryEntry(at_, *v.history)
                    .Raw("checks", checks)
                    .String("next_check_at", FormatTime(v.next_check_at))
                    .Take();
      }
      WriteJob(
          d, v.state,
          {.next_check_at = ToMillis(v.next_check_at), .decision = &v.reason, .history = entry ? &*entry : nullptr});
    }
  }

  // The schedule's program as launch requests carry it: serialised once per schedule version
  // and connection (PgStore::program_json_).
  const std::string& ProgramJsonOf(int64_t schedule_id) {
    const ScheduleView& v = schedules_.at(schedule_id);
    auto& cache = store_.program_json_;
    auto it = cache.find(schedule_id);
    if (it != cache.end() && it->second.first == v.version) return it->second.second;
    if (cache.size() >= PgStore::kProgramJsonEntries) cache.clear();
    auto& entry = cache[schedule_id];
    entry = {v.version, ProgramJson(v.schedule->program)};
    return entry.second;
  }

  // cancel_oldest: the oldest `n` active runs of the schedule end as core's CancelOldestRun says
  // (killed, reason overlap), in this transaction, under the schedule's counter lock
  // (docs/adr/0112-cancel-oldest.md). Nothing is cancelled (false) when fewer are stored: the
  // planner then makes the job wait. `cancelled` gets each ended run's concurrency group.
  bool CancelOldest(const Due& d, int64_t n, std::vector<std::optional<std::string>>& cancelled) {
    // The victims are locked (FOR UPDATE) in the order they are picked, the oldest first: the
    // states listed are those OnCancel ends (the unfinished ones), checked again per row below.
    const pqxx::result victims =
        tx_.exec_params("SELECT run_id, state FROM runs WHERE schedule_id = $1 AND state IN " +
                            SqlIn(RunState::kLaunched, RunState::kRunning, RunState::kRetryWait) +
                            " ORDER BY launched_at, run_id LIMIT $2 FOR UPDATE",
                        d.schedule_id, n);
    if (static_cast<int64_t>(victims.size()) < n) return false;
    const OverlapCancel how = CancelOldestRun(d.id);
    SqlArray victim_ids;
    for (const auto& v : victims) {
      const std::optional<RunState> from = RunStateFromName(v[1].as<std::string>());
      const std::optional<RunTransition> t = from ? OnCancel(*from) : std::nullopt;
      TRIGD_CHECK_MSG(t && t->next == how.state,
                      "run " + v[0].as<std::string>() + ": cancel_oldest from " + v[1].as<std::string>());
      victim_ids.AddText(v[0].as<std::string>());
    }
    // Compare-and-set is not needed: the rows are locked since they were read.
    const pqxx::result ended = tx_.exec_params(
        "UPDATE runs SET state=$2, reason=$3, finished_at=now(), next_attempt_at=NULL, "
        "history = trigd_append_history(history, jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT
        ", 'status', $2::text, 'reason', $3::text, 'attempt', attempt, 'what', $4::text))) "
        "WHERE run_id = ANY($1::text[]) "
        "RETURNING concurrency_group, " TRIGD_ENDED_RUN_COLUMNS,
        victim_ids.Take(), std::string(RunStateName(how.state)), how.reason, how.what);
    pg_internal::AnnounceEndedRuns(tx_, store_.topics_, ended, 1,
                                   {RunStateName(how.state), how.reason.c_str(), "killed"});
    for (const auto& e : ended)
      cancelled.push_back(e[0].is_null() ? std::nullopt : std::optional(e[0].as<std::string>()));
    result_.cancelled += static_cast<int>(ended.size());
    return true;
  }

  // A launch: the run row, its launch request in the outbox, the counters moved.
  void Launch(Due& d, const Schedule& s, const JobVerdict& v, const std::string& checks) {
    ++result_.launched;
    std::string run_id = NewRunId();
    LaunchRequest req{ProgramJsonOf(d.schedule_id), run_id, s.id().value(), d.version, {}, false};
    // A run started by hand with --args: merged key by key over program.args, this run only.
    std::optional<Schedule> with_args;
    if (std::optional<json> manual = ManualArgs(d.triggered_by)) {
      with_args = s;
      with_args->program.args = MergeArgs(s.program.args, *manual);
      req.program_json = ProgramJson(with_args->program);
    }
    const Schedule& effective = with_args ? *with_args : s;
    // Before triggered_by moves into the request; {{lineage}} renders it.
    const RunLineage lineage = LaunchLineage(d.triggered_by, run_id);
    req.lineage = lineage.lineage;
    // A run that starts a lineage names it by its own new id: no row can exist for it yet.
    (lineage.lineage == run_id ? started_lineages_ : launched_lineages_).push_back(lineage.lineage);
    // Templated args are rendered per job, once: retries publish this template again
    // (docs/adr/0121).
    if (req.program_json.find("{{") != std::string::npos && HasArgTemplates(effective.program.args)) {
      RenderedProgram rendered = RenderProgram(effective, run_id, lineage.lineage, d.triggered_by);
      req.program_json = std::move(rendered.program_json);
      req.placeholders_json = std::move(rendered.placeholders_json);
    }
    const LaunchAttempt first{1, s.heartbeat_timeout, now_};
    // Within kMaxLaunchRequestBytes once the relay has placed the attempt's fields: a longer
    // list of triggering events is cut to fit (TriggeredByWithin) and the request says so. The
    // usual request fits and is built once, its triggered_by moved in without a copy.
    req.triggered_by_json = std::move(d.triggered_by);
    std::string request = LaunchRequestTemplate(req);
    const size_t extra = kLaunchAttemptFieldsBytes + sizeof(",\"triggered_by_truncated\":true");
    if (request.size() + extra > kMaxLaunchRequestBytes) {
      const size_t fixed = request.size() - req.triggered_by_json.size() + extra;
      std::string cut =
          fixed < kMaxLaunchRequestBytes
              ? TriggeredByWithin(req.triggered_by_json, kMaxLaunchRequestBytes - fixed, req.triggered_by_truncated)
              : std::string("[]");
      req.triggered_by_json = std::move(cut);
      request = LaunchRequestTemplate(req);
    }
    std::optional<std::string> group;
    if (s.constraints.concurrency_group) group = s.constraints.concurrency_group->name;
    TableRows& runs = *runs_;
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
    runs.AddText(ctx_.now_text);
    runs.AddText(ctx_.now_text);
    runs.AddText(request);
    runs.AddText(run_history_);
    runs.AddText(ctx_.now_text);
    runs.AddText(lineage.lineage);
    lineage.all.size() > 1 ? runs.AddText(json(lineage.all).dump()) : runs.AddNull();
    runs.EndRow();
    outbox_->AddLaunch(store_.topics_.Launch(s.program.target), s.program.name, request, first, d.id, d.ready_text,
                       at_);
    std::string entry = HistoryEntry(at_, *v.history).String("run_id", run_id).Raw("checks", checks).Take();
    WriteJob(d, JobState::kLaunched, {.forced = v.forced, .history = &entry});
  }

  // The decisions written: rows too many for arrays by COPY, the rest in checker_writes (on the
  // ingest transaction's COMMIT when the caller defers it and they are small).
  void Write() {
    if (!fresh_rows_->as_arrays() && fresh_rows_->rows() > 0) {
      CopyIn(tx_, kDecidedJobs.name, kDecidedJobs.Names(), fresh_rows_->copy());
    }
    if (!runs_->as_arrays() && runs_->rows() > 0) CopyIn(tx_, kRuns.name, kRuns.Names(), runs_->copy());
    outbox_->InsertInto(tx_);
    SqlArray started, inherited;
    for (const std::string& l : started_lineages_) started.AddText(l);
    for (const std::string& l : launched_lineages_) inherited.AddText(l);
    SqlArray rt_id, rt_active, rt_last, g_name, g_active;
    if (runs_->rows() > 0) {
      for (const auto& [id, c] : counters_.schedules) {
        rt_id.AddInt(id);
        rt_active.AddInt(c.active);
        rt_last.AddIntOrNull(c.last_launch ? std::optional<int64_t>(ToMillis(*c.last_launch)) : std::nullopt);
      }
      for (const auto& [name, n] : counters_.groups) {
        g_name.AddText(name);
        g_active.AddInt(n);
      }
    }
    std::vector<std::string> params{
        rt_id.Take(),          rt_active.Take(),    rt_last.Take(),      g_name.Take(),
        g_active.Take(),       jobs_.id.Take(),     jobs_.state.Take(),  jobs_.next_check_at.Take(),
        jobs_.decision.Take(), jobs_.forced.Take(), jobs_.reason.Take(), jobs_.history.Take(),
        started.Take(),        inherited.Take()};
    for (auto [table, rows] :
         {std::pair{&kDecidedJobs, &*fresh_rows_}, {&kRuns, &*runs_}, {&kOutbox, &outbox_->rows()}}) {
      for (size_t i = 0; i < table->columns.size(); ++i) params.push_back(rows->TakeColumn(i));
    }
    size_t bytes = 0;
    for (const std::string& p : params) bytes += p.size();
    // Quoted into the COMMIT's simple query: worth it for the few rows of a low-rate batch, not
    // for megabytes the server would have to lex.
    if (ctx_.deferred_writes && bytes <= kDeferredWritesLimit) {
      *ctx_.deferred_writes = std::move(params);
    } else {
      tx_.exec_prepared("checker_writes", pqxx::prepare::make_dynamic_params(params));
    }
  }

  // A discarded job may have been the last thing active in its lineage (a correlated join's job
  // timed out waiting for a branch that failed): such lineages end here, after the writes, which
  // a deferring caller would otherwise send with its COMMIT.
  void EndDiscardedLineages() {
    if (discarded_ids_.empty()) return;
    if (ctx_.deferred_writes && !ctx_.deferred_writes->empty()) {
      tx_.exec_prepared("checker_writes", pqxx::prepare::make_dynamic_params(*ctx_.deferred_writes));
      ctx_.deferred_writes->clear();
    }
    for (const auto& [outcome, n] : EndLineages(tx_, {}, {}, discarded_ids_)) result_.lineage_outcomes[outcome] += n;
  }

  PgStore& store_;
  const TxContext& ctx_;
  pqxx::transaction_base& tx_;
  const TimePoint now_;
  const size_t limit_;
  const CheckFilter* filter_;
  const std::string run_history_;  // a launched run's first history entry
  const std::string at_;           // history entries' time
  std::string clock_entry_;        // the job being decided: its trigger completed by the clock
  CheckerResult result_;
  std::vector<Due> due_, undecided_;
  std::vector<int64_t> fresh_ids_;
  std::set<int64_t> sids_;
  std::map<int64_t, ScheduleView> schedules_;
  // The locked run counters (core/check_plan.h): filled by the locks, moved by FreeEndedSlots
  // and by the planner's decisions, written back by Write.
  CheckCounters counters_;
  std::map<int64_t, CheckedSchedule> checked_;  // schedules_ as the planner reads them
  std::optional<CheckPlanner> planner_;
  // What the transaction writes, one array per column (sql_array.h).
  struct {
    SqlArray id, state, next_check_at, decision, forced, reason, history;
  } jobs_;
  // Runs, launch requests and jobs decided when opened: a few ride on checker_writes as arrays,
  // many are copied in (TableRows).
  std::optional<TableRows> runs_, fresh_rows_;
  std::optional<OutboxRows> outbox_;
  // Lineages of the runs launched here (checker_writes): those the runs start (their own ids)
  // and those they inherit from upstream runs.
  std::vector<std::string> started_lineages_, launched_lineages_;
  std::vector<int64_t> discarded_ids_;  // jobs discarded here (EndDiscardedLineages)
};

// The checker step in the caller's transaction: due jobs (all, or only those of `filter`'s
// schedules and groups) claimed, decided and written.
CheckerResult PgStore::CheckJobs(const TxContext& ctx, size_t limit, const CheckFilter* filter, bool& claim_backlog) {
  return CheckStep(*this, ctx, limit, filter).Run(claim_backlog);
}

// The checker loop's transaction: BEGIN rides on the clock's query, and the writes on the
// COMMIT when they are small, as the ingest transaction's do (docs/adr/0161).
Result<CheckerResult> PgStore::CheckDueJobs(size_t limit) {
  return Guard([&]() -> Result<CheckerResult> {
    RenewPlans();
    OpenTransaction tx(*conn_->c);
    const pqxx::result clock = tx.BeginWith("SELECT " TRIGD_CLOCK);
    TxContext ctx(tx.tx(), clock.at(0));
    std::vector<std::string> writes;
    ctx.deferred_writes = &writes;
    CheckerResult result = CheckJobs(ctx, limit, nullptr, claim_backlog_);
    tx.Commit(writes.empty() ? std::string() : tx.Execute("checker_writes", writes));
    return result;
  });
}

}  // namespace trigd
