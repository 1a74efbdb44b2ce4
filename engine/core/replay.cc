#include "core/replay.h"

#include <algorithm>
#include <queue>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/accumulator.h"
#include "core/constraint_checker.h"
#include "core/cron.h"
#include "core/envelope.h"
#include "core/envelope_scan.h"
#include "core/event_router.h"
#include "core/schedule_index.h"
#include "core/trigger_eval.h"

namespace trigd {
namespace {

// What the virtual clock wakes up for. At one instant, runs end first (a run's end frees a slot
// that a check at that instant may use), then fire times, then checks.
enum class TimerKind { kRunEnd = 0, kFire = 1, kCheck = 2 };

// 24 bytes: the heap's moves and comparisons are most of its cost (docs/adr/0170-replay-timer-heap.md).
struct Timer {
  TimePoint at;
  uint64_t order;  // the kind in the top two bits, then the push's sequence number
  uint32_t a;      // kRunEnd, kFire: the schedule; kCheck: the job
  uint32_t b;      // kFire: the time leaf; kCheck: the job's check generation
  TimerKind kind() const { return static_cast<TimerKind>(order >> 62); }
  // At one instant, by kind, then in push order.
  bool operator>(const Timer& o) const { return at != o.at ? at > o.at : order > o.order; }
};

enum class SimState { kOpen, kWaiting, kDone };

// What a complete job's wait reason is written from (CheckJob): each check's result and time,
// and the run facts its text quotes. Two waits with the same key have the same reason, so a
// re-check whose key did not move writes no text (the reason is asked for only on a change).
struct WaitKey {
  std::vector<std::pair<ConstraintResult, std::optional<TimePoint>>> checks;
  int64_t active_runs = 0;
  int64_t group_active_runs = 0;
  size_t launches_in_period = 0;
  std::optional<TimePoint> last_launch;

  WaitKey(const CheckOutcome& out, const RunFacts& facts)
      : active_runs(facts.active_runs),
        group_active_runs(facts.group_active_runs),
        launches_in_period(facts.launches_in_period.size()),
        last_launch(facts.last_launch) {
    checks.reserve(out.checks.size());
    for (const ConstraintCheck& c : out.checks) checks.emplace_back(c.result, c.next_check_at);
  }
  // Whether `out` under `facts` has this key (compared in place: most re-checks match).
  bool Matches(const CheckOutcome& out, const RunFacts& facts) const {
    if (active_runs != facts.active_runs || group_active_runs != facts.group_active_runs ||
        launches_in_period != facts.launches_in_period.size() || last_launch != facts.last_launch ||
        checks.size() != out.checks.size()) {
      return false;
    }
    for (size_t i = 0; i < checks.size(); ++i) {
      if (checks[i].first != out.checks[i].result || checks[i].second != out.checks[i].next_check_at) return false;
    }
    return true;
  }
};

struct SimJob {
  size_t schedule = 0;
  int64_t number = 0;
  uint64_t age = 0;  // the order jobs were opened in, for the checker's "then age" (slots are reused)
  SimState state = SimState::kOpen;
  OpenJob open;  // state, triggered_by, opened_at (as Accumulate keeps them)
  std::optional<TimePoint> ready_at;
  uint32_t generation = 0;  // a check timer of an older generation is stale
  bool wakes_on_run_end = false;
  std::string last_reason;             // a wait is recorded when its reason changes (as the store does)
  std::unique_ptr<WaitKey> last_wait;  // what last_reason was written from (complete jobs)
};

struct SimSchedule {
  std::shared_ptr<const Schedule> schedule;
  std::vector<const TimeTrigger*> time_leaves;
  std::optional<size_t> open_job;
  std::vector<size_t> waiting;  // jobs with a complete trigger, not decided yet
  int64_t active_runs = 0;
  std::optional<TimePoint> last_launch;
  // Launch times within the schedule's max_runs_per period (older ones are dropped as the
  // clock passes them: a check reads only the period, and scanning every launch since `from`
  // made each check slower than the last).
  std::deque<TimePoint> launches;
  size_t runs_started = 0;  // which recorded duration the next run takes
};

// The event ids seen, as trigd's seen_events de-duplicates them: an open-addressing table of
// the ids' hashes, each id kept once beside it and compared on a hash match. A node-based set
// allocated a node per event and missed the cache on every insert into a large table.
class SeenIds {
 public:
  // False when `id` was seen before.
  bool Insert(std::string_view id) {
    if ((count_ + 1) * 2 > slots_.size()) Grow();
    const uint64_t hash = std::hash<std::string_view>{}(id);
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.id == 0) {
        ids_.emplace_back(id);
        slot = Slot{hash, ids_.size()};
        ++count_;
        return true;
      }
      if (slot.hash == hash && ids_[slot.id - 1] == id) return false;
    }
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    size_t id = 0;  // index in ids_ + 1; 0: empty
  };
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<size_t>(1024, old.size() * 2), Slot{});
    const size_t mask = slots_.size() - 1;
    for (const Slot& slot : old) {
      if (slot.id == 0) continue;
      size_t i = slot.hash & mask;
      while (slots_[i].id != 0) i = (i + 1) & mask;
      slots_[i] = slot;
    }
  }
  std::vector<Slot> slots_;  // a power of two, at most half full
  std::deque<std::string> ids_;
  size_t count_ = 0;
};

Millis Median(std::vector<Millis> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

struct Replay::Impl {
  ReplayOptions options;
  std::vector<SimSchedule> schedules;
  // The schedules as Accumulate reads them, by position (id = index + 1); null: disabled.
  std::deque<ScheduleView> view_store;
  std::vector<const ScheduleView*> views;
  ScheduleIndex index;
  std::string key;
  // A deque: a job is never moved as more open. A decided job's slot is reused by the next job
  // opened (free_jobs), so a long range keeps only the jobs still open or waiting: every job
  // decided in it would otherwise stay behind, a few hundred bytes each, and its memory freshly
  // mapped. Timers name a slot and its `generation`, which keeps counting across uses.
  std::deque<SimJob> jobs;
  std::vector<size_t> free_jobs;
  uint64_t opened = 0;  // jobs opened so far (SimJob::age)
  std::unordered_map<std::string, int64_t> group_active;
  std::unordered_map<std::string, std::vector<size_t>> group_members;  // schedules by group
  SeenIds seen;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers;
  uint64_t seq = 0;
  TimePoint clock;
  ReplayResult result;
  // Apply's lists, kept between events for their memory.
  std::vector<AccumulateInput> spare_inputs;
  std::vector<OpenJob> spare_jobs;

  // A message as RouteEvent decided it.
  void Routed(const RoutedEvent& r);

  void Push(TimePoint at, TimerKind kind, size_t a, uint32_t b = 0) {
    timers.push(Timer{at, (static_cast<uint64_t>(kind) << 62) | seq++, static_cast<uint32_t>(a), b});
  }

  // A new job of the schedule: a freed slot, else a new one.
  size_t NewJob(size_t schedule_index) {
    size_t ji;
    if (!free_jobs.empty()) {
      ji = free_jobs.back();
      free_jobs.pop_back();
    } else {
      ji = jobs.size();
      jobs.emplace_back();
    }
    SimJob& job = jobs[ji];
    job.schedule = schedule_index;
    job.number = ++result.schedules[schedule_index].jobs;
    job.age = opened++;
    job.state = SimState::kOpen;
    job.ready_at.reset();
    ++job.generation;  // timers of the slot's previous job are stale
    job.wakes_on_run_end = false;
    return ji;
  }

  // A step of the replay's own, with its detail text.
  void Step(size_t job, ReplayEntry::Kind kind, std::string detail) {
    if (!options.keep_timeline) return;
    const SimJob& j = jobs[job];
    result.schedules[j.schedule].entries.push_back(
        ReplayEntry{.at = clock, .job = j.number, .text = Text(std::move(detail)), .kind = kind});
  }

  uint32_t Text(std::string text) {
    result.texts.push_back(std::move(text));
    return static_cast<uint32_t>(result.texts.size() - 1);
  }

  // A history entry Accumulate wrote for `event`, kept as an entry until DecodeTimeline. The
  // event's id is kept once however many entries name it (`event_text`: its index, once kept).
  void StepFromHistory(size_t job, const HistoryRecord& h, const Event& event, std::optional<uint32_t>& event_text) {
    if (!options.keep_timeline) return;
    const SimJob& j = jobs[job];
    ReplayEntry entry{.at = clock, .job = j.number};
    switch (h.kind) {
      case HistoryRecord::Kind::kOpened: entry.kind = ReplayEntry::Kind::kOpened; break;
      case HistoryRecord::Kind::kCounted: entry.kind = ReplayEntry::Kind::kCounted; break;
      case HistoryRecord::Kind::kComplete: entry.kind = ReplayEntry::Kind::kComplete; break;
      case HistoryRecord::Kind::kDiscardedUpdated: entry.kind = ReplayEntry::Kind::kDiscardedUpdated; break;
      case HistoryRecord::Kind::kDiscardedUpstream: entry.kind = ReplayEntry::Kind::kDiscardedUpstream; break;
    }
    if (!h.event.empty()) {
      if (h.event != event.id) {
        entry.text = Text(h.event);
      } else {
        if (!event_text) event_text = Text(event.id);
        entry.text = *event_text;
      }
    }
    if (h.kind == HistoryRecord::Kind::kCounted) {
      entry.first = static_cast<uint32_t>(result.leaves.size());
      entry.count = static_cast<uint32_t>(h.leaves.size());
      for (const HistoryRecord::Leaf& l : h.leaves) {
        result.leaves.push_back(
            ReplayLeaf{l.leaf, l.state.satisfied, l.state.count, l.state.bytes, l.state.last_arrival});
      }
    }
    result.schedules[j.schedule].entries.push_back(entry);
  }

  Millis RunDuration(SimSchedule& s) {
    const size_t k = s.runs_started++;
    if (options.run_duration) return *options.run_duration;
    auto it = options.recorded_durations.find(s.schedule->program.name);
    if (it == options.recorded_durations.end() || it->second.empty()) return Millis(0);
    return k < it->second.size() ? it->second[k] : Median(it->second);
  }

  void Check(size_t job_index) {
    SimJob& job = jobs[job_index];
    if (job.state == SimState::kDone) return;
    SimSchedule& s = schedules[job.schedule];
    const Schedule& schedule = *s.schedule;
    RunFacts facts;
    facts.active_runs = s.active_runs;
    facts.last_launch = s.last_launch;
    const auto& group = schedule.constraints.concurrency_group;
    if (group) facts.group_active_runs = group_active[group->name];
    if (schedule.constraints.max_runs_per) {
      const TimePoint since = clock - schedule.constraints.max_runs_per->period;
      while (!s.launches.empty() && s.launches.front() <= since) s.launches.pop_front();
      facts.launches_in_period.assign(s.launches.begin(), s.launches.end());
    }
    bool complete = job.state == SimState::kWaiting;
    JobFacts job_facts{job.open.opened_at, job.ready_at};
    if (job.state == SimState::kOpen) {
      // A quiet period's or silence's end completes the trigger by the clock, as the store's
      // checker does at the job's due time (pg_checker.cc).
      const std::string wait = DescribeLeafDeadline(schedule.trigger, job.open.state);
      if (SettleTimedLeaves(schedule.trigger, job.open.state, clock) && IsComplete(schedule.trigger, job.open.state)) {
        Step(job_index, ReplayEntry::Kind::kSettled, wait);
        if (s.open_job == job_index) s.open_job.reset();
        job.state = SimState::kWaiting;
        job.ready_at = clock;
        job_facts.ready_at = clock;
        s.waiting.push_back(job_index);
        complete = true;
      } else {
        job_facts.trigger_wakes_at = NextLeafDeadline(schedule.trigger, job.open.state);
        job_facts.trigger_wait = DescribeLeafDeadline(schedule.trigger, job.open.state);
      }
    }
    // Decided without text; a reason is written for a discard, and for a wait whose key moved.
    CheckOutcome out = CheckJob(schedule, job_facts, complete, facts, clock, CheckText::kDecision);
    ++job.generation;
    job.wakes_on_run_end = false;
    if (out.decision == Decision::kWait) {
      if (!complete) {
        // Only a complete job's wait is recorded; its first one always differs from this.
        job.last_reason.clear();
        job.last_wait.reset();
      } else if (!job.last_wait || !job.last_wait->Matches(out, facts)) {
        std::string reason = CheckJob(schedule, job_facts, complete, facts, clock, CheckText::kReasons).reason;
        if (reason != job.last_reason) Step(job_index, ReplayEntry::Kind::kWait, reason);
        job.last_reason = std::move(reason);
        job.last_wait = std::make_unique<WaitKey>(out, facts);
      }
      job.wakes_on_run_end = out.wakes_on_run_end;
      if (out.next_check_at) Push(std::max(*out.next_check_at, clock), TimerKind::kCheck, job_index, job.generation);
      return;
    }
    Leave(job_index);
    if (out.decision == Decision::kDiscard) {
      ++result.schedules[job.schedule].discarded;
      Step(job_index, ReplayEntry::Kind::kDiscard,
           CheckJob(schedule, job_facts, complete, facts, clock, CheckText::kReasons).reason);
      Release(job_index);
      return;
    }
    const Millis duration = RunDuration(s);
    ReplayLaunch launch{job.number, clock, clock + duration, out.forced, std::move(job.open.triggered_by)};
    std::vector<ReplayLaunch>& launches = result.schedules[job.schedule].launches;
    if (options.keep_timeline) {
      result.schedules[job.schedule].entries.push_back(ReplayEntry{.at = clock,
                                                                   .job = job.number,
                                                                   .first = static_cast<uint32_t>(launches.size()),
                                                                   .kind = ReplayEntry::Kind::kLaunch});
    }
    launches.push_back(std::move(launch));
    Release(job_index);
    ++s.active_runs;
    s.last_launch = clock;
    if (schedule.constraints.max_runs_per) s.launches.push_back(clock);
    if (group) ++group_active[group->name];
    Push(clock + duration, TimerKind::kRunEnd, job.schedule);
  }

  void WakeCollecting(size_t job_index) {
    SimJob& job = jobs[job_index];
    ++job.generation;
    const Schedule& schedule = *schedules[job.schedule].schedule;
    if (auto wake = CollectingJobWake(schedule, job.open.state, job.open.opened_at)) {
      Push(std::max(*wake, clock), TimerKind::kCheck, job_index, job.generation);
    }
  }

  // A schedule with a silence leaf is armed when it is applied (ADR 0131): here, at `from`.
  void ArmSilence(size_t schedule_index) {
    const Schedule& schedule = *schedules[schedule_index].schedule;
    const size_t ji = NewJob(schedule_index);
    SimJob& job = jobs[ji];
    job.open.id = static_cast<int64_t>(ji) + 1;
    job.open.schedule_id = static_cast<int64_t>(schedule_index) + 1;
    job.open.schedule_version = 1;
    job.open.opened_at = clock;
    job.open.state = NewTriggerState(schedule.trigger);
    trigd::ArmSilence(schedule.trigger, job.open.state, clock);
    schedules[schedule_index].open_job = ji;
    Step(ji, ReplayEntry::Kind::kArmed, DescribeLeafDeadline(schedule.trigger, jobs[ji].open.state));
    WakeCollecting(ji);
  }

  // The job is decided (launched or discarded): it leaves its schedule's lists.
  void Leave(size_t job_index) {
    SimJob& job = jobs[job_index];
    SimSchedule& s = schedules[job.schedule];
    if (s.open_job == job_index) s.open_job.reset();
    std::erase(s.waiting, job_index);
    job.state = SimState::kDone;
  }

  // A decided job's state is read no more (the launch has taken its triggered_by): its memory
  // is freed and its slot goes to the next job opened.
  void Release(size_t job_index) {
    SimJob& job = jobs[job_index];
    job.open = OpenJob();
    job.last_reason = std::string();
    job.last_wait.reset();
    free_jobs.push_back(job_index);
  }

  void RunEnded(size_t schedule_index) {
    SimSchedule& s = schedules[schedule_index];
    --s.active_runs;
    const auto& group = s.schedule->constraints.concurrency_group;
    if (group) --group_active[group->name];
    // The end wakes the jobs waiting for a run to end: the schedule's, and its group's.
    if (!group) {
      Wake(schedule_index);
      return;
    }
    for (size_t member : group_members[group->name]) Wake(member);
  }

  // The schedule's jobs waiting for a run to end, checked now in the checker's order. Once one
  // still waits for a run to end, so would the others (the same run counts hold them): their
  // check is left to the next end.
  void Wake(size_t schedule_index) {
    // `waiting` is in readiness order (jobs join it as the clock moves on); a check that
    // decides a job takes it out.
    std::vector<size_t>& waiting = schedules[schedule_index].waiting;
    for (size_t k = 0; k < waiting.size();) {
      const size_t j = waiting[k];
      if (!jobs[j].wakes_on_run_end) {
        ++k;
        continue;
      }
      Check(j);
      if (jobs[j].state != SimState::kWaiting) continue;
      if (jobs[j].wakes_on_run_end) break;
      ++k;
    }
  }

  void Fire(size_t schedule_index, size_t leaf) {
    SimSchedule& s = schedules[schedule_index];
    const std::string name = s.schedule->id().value();
    const std::string fire_time = FormatTime(clock);
    Event e;
    e.id = OwnTickId(name, fire_time);
    e.type = EventType::kTick;
    e.time = clock;
    e.payload = {{"schedule", name}, {"fire_time", fire_time}};
    e.tick = {name, clock};
    ++result.fire_times;
    const int64_t id = static_cast<int64_t>(schedule_index) + 1;
    Apply(e, std::span<const int64_t>(&id, 1));
    if (auto next = NextFireTime(*s.time_leaves[leaf], options.from, clock); next && *next <= options.to) {
      Push(*next, TimerKind::kFire, schedule_index, static_cast<uint32_t>(leaf));
    }
  }

  // Runs every timer due at or before `t`, moving the clock along.
  void Advance(TimePoint t) {
    while (!timers.empty() && timers.top().at <= t) {
      Timer timer = timers.top();
      timers.pop();
      clock = std::max(clock, timer.at);
      switch (timer.kind()) {
        case TimerKind::kRunEnd: RunEnded(timer.a); break;
        case TimerKind::kFire: Fire(timer.a, timer.b); break;
        case TimerKind::kCheck: {
          // Every check due now, in the checker's order: priority, then readiness, then age.
          std::vector<size_t> due;
          if (jobs[timer.a].generation == timer.b) due.push_back(timer.a);
          while (!timers.empty() && timers.top().at == timer.at && timers.top().kind() == TimerKind::kCheck) {
            if (jobs[timers.top().a].generation == timers.top().b) due.push_back(timers.top().a);
            timers.pop();
          }
          std::sort(due.begin(), due.end());
          due.erase(std::unique(due.begin(), due.end()), due.end());
          std::stable_sort(due.begin(), due.end(), [&](size_t x, size_t y) {
            const int64_t px = schedules[jobs[x].schedule].schedule->priority;
            const int64_t py = schedules[jobs[y].schedule].schedule->priority;
            if (px != py) return px > py;
            if (jobs[x].ready_at.has_value() != jobs[y].ready_at.has_value()) return jobs[x].ready_at.has_value();
            if (jobs[x].ready_at != jobs[y].ready_at) return jobs[x].ready_at < jobs[y].ready_at;
            return jobs[x].age < jobs[y].age;
          });
          for (size_t j : due) Check(j);
          break;
        }
      }
    }
    clock = std::max(clock, t);
  }

  // One event, reaching `sids`, at the clock's time, through the accumulator. Events trigd
  // would publish (upstream failures) come back in as it would read them back.
  void Apply(const Event& event, std::span<const int64_t> sids) {
    if (!seen.Insert(event.id)) {
      ++result.duplicates;
      return;
    }
    // The input and job lists of the previous event, cleared: their memory is reused (a nested
    // call for a published event takes none and leaves its own).
    std::vector<AccumulateInput> in = std::move(spare_inputs);
    in.resize(1);
    in[0].event = &event;
    in[0].schedule_ids.clear();
    in[0].payload = false;  // the launches say their triggering events' ids only
    std::vector<OpenJob> open = std::move(spare_jobs);
    open.clear();
    for (int64_t sid : sids) {
      if (!views[static_cast<size_t>(sid - 1)]) continue;  // disabled
      in[0].schedule_ids.push_back(sid);
      SimSchedule& s = schedules[static_cast<size_t>(sid - 1)];
      if (s.open_job) {
        OpenJob& o = jobs[*s.open_job].open;
        o.history_records.clear();
        open.push_back(std::move(o));
      }
    }
    if (in[0].schedule_ids.empty()) {
      spare_inputs = std::move(in);
      spare_jobs = std::move(open);
      return;
    }
    ++result.matched;
    std::optional<uint32_t> event_text;
    Accumulation acc = Accumulate(in, views, std::move(open), clock, HistoryForm::kRecords);
    for (OpenJob& o : acc.jobs) {
      const size_t si = static_cast<size_t>(o.schedule_id - 1);
      size_t ji;
      if (o.id != 0) {
        ji = static_cast<size_t>(o.id - 1);
      } else {
        ji = NewJob(si);
        o.id = static_cast<int64_t>(ji) + 1;
        schedules[si].open_job = ji;
      }
      SimJob& job = jobs[ji];
      for (const HistoryRecord& h : o.history_records) StepFromHistory(ji, h, event, event_text);
      const bool complete = o.complete;
      const bool discarded = o.discarded;
      job.open = std::move(o);
      if (discarded) {
        Leave(ji);
        Release(ji);
        ++result.schedules[si].discarded;
      } else if (complete) {
        SimSchedule& s = schedules[si];
        if (s.open_job == ji) s.open_job.reset();
        job.state = SimState::kWaiting;
        job.ready_at = clock;
        s.waiting.push_back(ji);
        Check(ji);
      } else {
        // Still collecting: checked at its timeout or its quiet period's or silence's end,
        // whichever comes first (the store's next_check_at); an earlier timer is stale.
        WakeCollecting(ji);
      }
    }
    acc.jobs.clear();
    spare_jobs = std::move(acc.jobs);
    spare_inputs = std::move(in);
    for (const Event& published : acc.published) Apply(published, index.Lookup(published.EventKey()));
  }
};

Replay::Replay(std::vector<Schedule> schedules, ReplayOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.options = std::move(options);
  m.clock = m.options.from;
  for (size_t i = 0; i < schedules.size(); ++i) {
    SimSchedule s;
    const int64_t id = static_cast<int64_t>(i) + 1;
    const bool enabled = schedules[i].enabled;
    s.schedule = std::make_shared<const Schedule>(std::move(schedules[i]));
    const Schedule& schedule = *s.schedule;
    ReplaySchedule r;
    r.name = schedule.id().value();
    r.enabled = enabled;
    r.schedule = s.schedule;
    m.result.schedules.push_back(std::move(r));
    m.views.push_back(nullptr);
    if (enabled) {
      m.views.back() = &m.view_store.emplace_back(ScheduleView{id, 1, s.schedule});
      if (const auto& group = schedule.constraints.concurrency_group) m.group_members[group->name].push_back(i);
      std::vector<std::string> keys;
      for (const Trigger* leaf : TriggerLeaves(schedule.trigger)) {
        keys.push_back(LeafEventKey(*leaf, schedule.id()));
        if (leaf->kind == TriggerKind::kTime) s.time_leaves.push_back(&leaf->time);
      }
      m.index.Put(id, keys);
      for (size_t leaf = 0; leaf < s.time_leaves.size(); ++leaf) {
        if (auto next = NextFireTime(*s.time_leaves[leaf], m.options.from, m.options.from);
            next && *next <= m.options.to) {
          m.Push(*next, TimerKind::kFire, i, static_cast<uint32_t>(leaf));
        }
      }
    }
    m.schedules.push_back(std::move(s));
  }
  for (size_t i = 0; i < m.schedules.size(); ++i) {
    if (m.views[i] && HasSilence(m.schedules[i].schedule->trigger)) m.ArmSilence(i);
  }
}

Replay::~Replay() = default;

void Replay::Feed(std::string_view bytes) {
  Impl& m = *impl_;
  ++m.result.messages;
  m.Routed(RouteEvent(bytes, m.index, m.key));
}

std::vector<ReplayMessage> Replay::Order(const std::vector<std::string_view>& messages) const {
  const Impl& m = *impl_;
  std::vector<ReplayMessage> routes(messages.size());
  std::vector<std::pair<TimePoint, uint32_t>> keyed;
  keyed.reserve(messages.size());
  router_internal::Scanned s;
  TimePoint previous{};
  for (size_t i = 0; i < messages.size(); ++i) {
    // RouteEvent's scan and lookup (router_internal::Scan, Finish), made here once; the scan's
    // time is EnvelopeEventTime's.
    router_internal::Scan(messages[i], m.index, s);
    ReplayMessage& r = routes[i];
    r.index = static_cast<uint32_t>(i);
    r.scanned = s.scanned;
    r.looked_up = s.look_up;
    r.type = s.scan.type;
    if (s.scanned) {
      previous = s.scan.time;
      if (s.own_tick) r.route = ReplayMessage::Route::kSkip;
      if (s.look_up) {
        const std::span<const int64_t> reached = m.index.Lookup(s.key, s.hash);
        r.reached = reached.data();
        r.reached_size = static_cast<uint32_t>(reached.size());
        if (reached.empty()) r.route = ReplayMessage::Route::kSkip;
      }
    } else if (auto t = EnvelopeEventTime(messages[i])) {
      previous = *t;
    }
    keyed.emplace_back(previous, static_cast<uint32_t>(i));
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<ReplayMessage> order;
  order.reserve(keyed.size());
  for (const auto& k : keyed) order.push_back(routes[k.second]);
  return order;
}

void Replay::Feed(std::string_view bytes, const ReplayMessage& message) {
  Impl& m = *impl_;
  ++m.result.messages;
  if (message.route == ReplayMessage::Route::kSkip) return;
  router_internal::Scanned s;
  s.scanned = message.scanned;
  s.look_up = message.looked_up;
  s.scan.type = message.type;
  // No payloads: the launches say their triggering events' ids only (a custom event's payload,
  // which its `where` reads, is kept).
  m.Routed(router_internal::Finish(bytes, m.index, s, std::span<const int64_t>(message.reached, message.reached_size),
                                   /*payload=*/false));
}

void Replay::Impl::Routed(const RoutedEvent& r) {
  Impl& m = *this;
  switch (r.kind) {
    case RoutedEvent::Kind::kInvalid: ++m.result.invalid; return;
    // trigd's own ticks: the replay makes the fire times of the documents it evaluates.
    case RoutedEvent::Kind::kOwnTick:
    case RoutedEvent::Kind::kNoMatch: return;
    case RoutedEvent::Kind::kMatch: break;
  }
  if (r.schedules.empty()) return;  // a run report no replayed schedule listens to
  m.Advance(r.event->time);
  m.Apply(*r.event, r.schedules);
}

TimePoint Replay::now() const { return impl_->clock; }

ReplayResult Replay::Finish() {
  Impl& m = *impl_;
  m.Advance(std::max(m.options.to, m.clock));
  for (const SimJob& job : m.jobs) {
    if (job.state == SimState::kOpen) ++m.result.schedules[job.schedule].open_at_end;
    if (job.state == SimState::kWaiting) ++m.result.schedules[job.schedule].waiting_at_end;
  }
  return std::move(m.result);
}

void DecodeTimeline(ReplayResult& result) {
  for (ReplaySchedule& s : result.schedules) {
    for (const ReplayEntry& e : s.entries) {
      ReplayStep step{e.at, e.job, {}, {}, {}};
      // The accumulator's entries say what their text says (HistoryText): its what, its event,
      // its leaves; the replay's own carry their detail.
      std::optional<HistoryRecord::Kind> history;
      switch (e.kind) {
        case ReplayEntry::Kind::kOpened: history = HistoryRecord::Kind::kOpened; break;
        case ReplayEntry::Kind::kCounted: history = HistoryRecord::Kind::kCounted; break;
        case ReplayEntry::Kind::kComplete: history = HistoryRecord::Kind::kComplete; break;
        case ReplayEntry::Kind::kDiscardedUpdated: history = HistoryRecord::Kind::kDiscardedUpdated; break;
        case ReplayEntry::Kind::kDiscardedUpstream: history = HistoryRecord::Kind::kDiscardedUpstream; break;
        case ReplayEntry::Kind::kArmed: step.what = "opened"; break;
        case ReplayEntry::Kind::kSettled: step.what = "trigger complete"; break;
        case ReplayEntry::Kind::kWait: step.what = "wait"; break;
        case ReplayEntry::Kind::kDiscard: step.what = "discard"; break;
        case ReplayEntry::Kind::kLaunch: {
          const ReplayLaunch& l = s.launches[e.first];
          step.what = "launch";
          step.detail = std::string(l.forced ? "launched by timeout (action run)" : "constraints hold") +
                        "; run lasts " + FormatDuration(l.ends_at - l.at);
          break;
        }
      }
      if (!history) {
        if (e.kind != ReplayEntry::Kind::kLaunch) step.detail = result.texts[e.text];
      } else {
        if (*history == HistoryRecord::Kind::kOpened || *history == HistoryRecord::Kind::kCounted ||
            *history == HistoryRecord::Kind::kDiscardedUpstream) {
          step.event = result.texts[e.text];
        }
        if (*history == HistoryRecord::Kind::kCounted) {
          HistoryRecord h{.kind = *history};
          h.leaves.reserve(e.count);
          for (uint32_t i = e.first; i < e.first + e.count; ++i) {
            const ReplayLeaf& l = result.leaves[i];
            h.leaves.push_back({l.leaf, LeafState{l.count, l.bytes, {}, l.satisfied, l.last_arrival}});
          }
          for (const std::string& leaf : HistoryLeaves(h, s.schedule->trigger)) {
            step.detail += (step.detail.empty() ? "" : "; ") + leaf;
          }
        }
        step.what = HistoryWhat(*history);
        if (step.what.starts_with("discarded: ")) {
          step.detail = step.what.substr(sizeof("discarded: ") - 1);
          step.what = "discard";
        }
      }
      s.timeline.push_back(std::move(step));
    }
    s.entries = std::deque<ReplayEntry>();
  }
}

std::optional<TimePoint> EnvelopeEventTime(std::string_view bytes) {
  EnvelopeScan scan;
  if (ScanEnvelope(bytes, scan)) return scan.time;
  Result<Event> e = ParseEnvelope(bytes);
  if (!e.ok()) return std::nullopt;
  return e->time;
}

std::vector<size_t> SortByEventTime(const std::vector<std::string_view>& messages) {
  std::vector<std::pair<TimePoint, size_t>> keyed;
  keyed.reserve(messages.size());
  TimePoint previous{};
  for (size_t i = 0; i < messages.size(); ++i) {
    if (auto t = EnvelopeEventTime(messages[i])) previous = *t;
    keyed.emplace_back(previous, i);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<size_t> order;
  order.reserve(keyed.size());
  for (const auto& k : keyed) order.push_back(k.second);
  return order;
}

std::map<std::string, std::vector<Millis>> RecordedRunDurations(const std::vector<std::string_view>& messages) {
  struct Run {
    std::string program;
    std::optional<TimePoint> started;
    std::optional<TimePoint> ended;
  };
  std::unordered_map<std::string, Run> runs;
  for (std::string_view bytes : messages) {
    EnvelopeScan scan;
    if (ScanEnvelope(bytes, scan) && scan.type != EventType::kProgram) continue;
    Result<Event> e = ParseEnvelope(bytes);
    if (!e.ok() || e->type != EventType::kProgram) continue;
    Run& run = runs[e->program.run_id];
    run.program = e->program.program;
    switch (e->program.status) {
      case ProgramStatus::kStarted:
        if (!run.started) run.started = e->time;
        break;
      case ProgramStatus::kHeartbeat: break;
      case ProgramStatus::kSucceeded:
      case ProgramStatus::kFailed:
      case ProgramStatus::kKilled:
        if (!run.ended) run.ended = e->time;
        break;
    }
  }
  std::map<std::string, std::vector<std::pair<TimePoint, Millis>>> by_start;
  for (const auto& [id, run] : runs) {
    if (run.started && run.ended && *run.ended >= *run.started) {
      by_start[run.program].emplace_back(*run.started, *run.ended - *run.started);
    }
  }
  std::map<std::string, std::vector<Millis>> out;
  for (auto& [program, runs_of] : by_start) {
    std::sort(runs_of.begin(), runs_of.end());
    for (const auto& r : runs_of) out[program].push_back(r.second);
  }
  return out;
}

}  // namespace trigd
