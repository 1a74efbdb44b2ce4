#include "core/accumulator.h"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <unordered_map>

#include "common/check.h"
#include "core/trigger_eval.h"

namespace trigd {

JsonObjectText HistoryEntry(std::string_view at, std::string_view what) {
  return std::move(JsonObjectText().String("at", at).String("what", what));
}

std::string_view HistoryWhat(HistoryRecord::Kind kind) {
  switch (kind) {
    case HistoryRecord::Kind::kOpened: return "opened";
    case HistoryRecord::Kind::kCounted: return "event counted";
    case HistoryRecord::Kind::kComplete: return "trigger complete";
    case HistoryRecord::Kind::kDiscardedUpdated: return "discarded: schedule updated";
    case HistoryRecord::Kind::kDiscardedUpstream: return "discarded: upstream failed";
  }
  return "";
}

std::vector<std::string> HistoryLeaves(const HistoryRecord& record, const Trigger& trigger) {
  std::vector<std::string> out;
  out.reserve(record.leaves.size());
  for (const HistoryRecord::Leaf& l : record.leaves) {
    LeafProgress progress = DescribeLeafAt(trigger, l.leaf, l.state);
    out.push_back(progress.path + ": " + progress.detail);
  }
  return out;
}

std::string HistoryText(const HistoryRecord& record, const Trigger& trigger, std::string_view at) {
  JsonObjectText entry = HistoryEntry(at, HistoryWhat(record.kind));
  switch (record.kind) {
    case HistoryRecord::Kind::kOpened:
      entry.String("event", record.event);
      if (record.has_lineage) entry.String("lineage", record.extra);
      break;
    case HistoryRecord::Kind::kCounted: {
      JsonArrayText leaves;
      for (const std::string& leaf : HistoryLeaves(record, trigger)) leaves.String(leaf);
      entry.String("event", record.event).Raw("leaves", leaves.Take());
      break;
    }
    case HistoryRecord::Kind::kComplete:
    case HistoryRecord::Kind::kDiscardedUpdated: break;
    case HistoryRecord::Kind::kDiscardedUpstream:
      entry.String("event", record.event)
          .String("program", record.extra)
          .String("status", ProgramStatusName(record.status));
      break;
  }
  return entry.Take();
}

namespace {

constexpr std::string_view kUpstreamFailedPrefix = "upstream_failed:";
// A root id longer than this is named by its hash, so that an id stays within
// kMaxEventIdBytes (prefix and schedule name take at most 274 bytes).
constexpr size_t kMaxRootInId = 512;

// The failure a chain of upstream_failed events started from: the id of the first failed or
// killed event, read back from the id of an upstream_failed event (schedule names hold no ':').
std::string_view RootFailure(std::string_view id) {
  if (!id.starts_with(kUpstreamFailedPrefix)) return id;
  const size_t colon = id.find(':', kUpstreamFailedPrefix.size());
  return colon == std::string_view::npos ? id : id.substr(colon + 1);
}

// FNV-1a, 64 bits: the same on every instance and build (std::hash is not).
std::string Fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

// The id names the schedule and the root failure, not the chain that led here: at a join of the
// DAG the second path's event has the same id and is a duplicate downstream (not doubled at
// every join), a cycle stops after one round (a schedule's own killed event, read back, is a
// duplicate), and the id does not grow by a schedule name per level (at about 16 levels it would
// pass 1 KiB and the failure stop travelling as a dead letter;
// docs/adr/0009-upstream-failure-id.md).
Event UpstreamFailedEvent(const Schedule& schedule, const Event& failed, TimePoint now) {
  Event e;
  std::string_view root = RootFailure(failed.id);
  e.id = std::string(kUpstreamFailedPrefix) + schedule.id().value() + ":" +
         (root.size() <= kMaxRootInId ? std::string(root) : "fnv1a-" + Fnv1a(root));
  e.type = EventType::kProgram;
  e.time = now;
  e.program.program = schedule.program.name;
  // No run exists; the event's own id stands in as its run id, because the envelope (SPEC §3)
  // requires one and an empty one would send the event to the dead letters instead of down the
  // DAG. It never matches a real run (those are UUIDs).
  e.program.run_id = e.id;
  e.program.status = ProgramStatus::kKilled;
  e.program.attempt = 1;
  e.program.reason = "upstream_failed";
  e.program.lineage = EventLineage(failed.program);
  e.payload = {{"program", schedule.program.name},
               {"run_id", e.id},
               {"status", "killed"},
               {"attempt", 1},
               {"reason", "upstream_failed"},
               {"lineage", e.program.lineage},
               {"schedule", schedule.id().value()},
               {"upstream",
                {{"program", failed.program.program},
                 {"run_id", failed.program.run_id},
                 {"status", ProgramStatusName(failed.program.status)}}}};
  return e;
}

std::optional<TimePoint> CollectingJobWake(const Schedule& schedule, const TriggerState& state, TimePoint opened_at) {
  std::optional<TimePoint> wake = NextLeafDeadline(schedule.trigger, state);
  if (schedule.timeout) {
    const TimePoint deadline = opened_at + schedule.timeout->after;
    if (!wake || deadline < *wake) wake = deadline;
  }
  return wake;
}

namespace {

// How AccumulateImpl finds a reached schedule: in the store's map by id, or by position (id
// i + 1 at index i). Null: not active.
struct ById {
  const std::map<int64_t, ScheduleView>& schedules;
  const ScheduleView* operator()(int64_t id) const {
    auto it = schedules.find(id);
    return it == schedules.end() ? nullptr : &it->second;
  }
};
struct ByIndex {
  std::span<const ScheduleView* const> schedules;
  const ScheduleView* operator()(int64_t id) const {
    return id >= 1 && static_cast<uint64_t>(id) <= schedules.size() ? schedules[static_cast<size_t>(id - 1)] : nullptr;
  }
};

template <typename Lookup>
Accumulation AccumulateImpl(const std::vector<AccumulateInput>& events, const Lookup& schedules,
                            std::vector<OpenJob> open_jobs, const FailedLineageSet& failed_in, bool correlation,
                            TimePoint now, HistoryForm form);

}  // namespace

Accumulation Accumulate(const std::vector<AccumulateInput>& events, const std::map<int64_t, ScheduleView>& schedules,
                        std::vector<OpenJob> open_jobs, TimePoint now) {
  return AccumulateImpl(events, ById{schedules}, std::move(open_jobs), FailedLineageSet(), /*correlation=*/false, now,
                        HistoryForm::kText);
}

Accumulation Accumulate(const std::vector<AccumulateInput>& events, const std::map<int64_t, ScheduleView>& schedules,
                        std::vector<OpenJob> open_jobs, TimePoint now, HistoryForm form) {
  return AccumulateImpl(events, ById{schedules}, std::move(open_jobs), FailedLineageSet(), /*correlation=*/false, now,
                        form);
}

Accumulation Accumulate(const std::vector<AccumulateInput>& events, std::span<const ScheduleView* const> schedules,
                        std::vector<OpenJob> open_jobs, TimePoint now, HistoryForm form) {
  return AccumulateImpl(events, ByIndex{schedules}, std::move(open_jobs), FailedLineageSet(), /*correlation=*/false,
                        now, form);
}

Accumulation Accumulate(const std::vector<AccumulateInput>& events, const std::map<int64_t, ScheduleView>& schedules,
                        std::vector<OpenJob> open_jobs, const FailedLineageSet& failed, TimePoint now) {
  return AccumulateImpl(events, ById{schedules}, std::move(open_jobs), failed, /*correlation=*/true, now,
                        HistoryForm::kText);
}

namespace {

template <typename Lookup>
Accumulation AccumulateImpl(const std::vector<AccumulateInput>& events, const Lookup& schedules,
                            std::vector<OpenJob> open_jobs, const FailedLineageSet& failed_in, bool correlation,
                            TimePoint now, HistoryForm form) {
  Accumulation out;
  out.jobs = std::move(open_jobs);
  // The entries' time, formatted once, and only when they are written as text.
  std::string at;
  auto add_history = [&](OpenJob& job, const Trigger& trigger, HistoryRecord record) {
    if (form == HistoryForm::kRecords) {
      job.history_records.push_back(std::move(record));
      return;
    }
    if (at.empty()) at = FormatTime(now);
    job.history.push_back(HistoryText(record, trigger, at));
  };
  FailedLineageSet failed = failed_in;
  // (schedule id, lineage) -> index in out.jobs of its job still collecting events; the lineage
  // is empty for an uncorrelated schedule (one open job per schedule).
  std::map<std::pair<int64_t, std::string>, size_t> open;
  for (size_t i = 0; i < out.jobs.size(); ++i) {
    OpenJob& job = out.jobs[i];
    const ScheduleView* s = schedules(job.schedule_id);
    if (!s) continue;
    if (job.schedule_version != s->version) {
      // The schedule changed since the job opened: counting starts afresh (SPEC §5).
      job.discarded = true;
      job.discard_reason = "schedule updated";
      add_history(job, s->schedule->trigger, {.kind = HistoryRecord::Kind::kDiscardedUpdated});
      continue;
    }
    open[{job.schedule_id, job.lineage}] = i;
  }
  out.applied.assign(events.size(), false);
  for (size_t ei = 0; ei < events.size(); ++ei) {
    const Event& event = *events[ei].event;
    // The payload as triggered_by carries it: copied once for the event (on its first count),
    // then shared by every job it counts for.
    std::shared_ptr<const nlohmann::json> payload;
    // Only a failed or killed program event can be an upstream failure, which puts the job's
    // state back as it was: the copy of the state (its partition lists) is made for those
    // events alone, not for every event and schedule.
    const bool may_fail_upstream =
        event.type == EventType::kProgram &&
        (event.program.status == ProgramStatus::kFailed || event.program.status == ProgramStatus::kKilled);
    for (int64_t sid : events[ei].schedule_ids) {
      const ScheduleView* s = schedules(sid);
      if (!s) continue;
      const Schedule& schedule = *s->schedule;
      // Outside its active period a schedule behaves as suspended: its events are ignored.
      if (schedule.active && !schedule.active->Contains(now)) continue;
      const bool correlated = correlation && IsCorrelated(schedule.trigger);
      // A correlated trigger holds only program leaves (the parser sees to it).
      std::string lineage = correlated && event.type == EventType::kProgram ? EventLineage(event.program) : "";
      std::pair<int64_t, std::string> key{sid, lineage};
      auto it = open.find(key);
      TriggerState probe;
      TriggerState* state;
      if (it != open.end()) {
        state = &out.jobs[it->second].state;
      } else {
        probe = NewTriggerState(schedule.trigger);
        state = &probe;
      }
      std::optional<TriggerState> before;
      if (may_fail_upstream) before = *state;
      ApplyResult r = ApplyEvent(schedule.trigger, schedule.id(), event, *state, now);
      if (r.upstream_failure) {
        out.applied[ei] = true;
        if (it != open.end()) {
          OpenJob& job = out.jobs[it->second];
          TRIGD_CHECK(before.has_value());
          job.state = std::move(*before);
          job.discarded = true;
          job.discard_reason = "upstream_failed";
          add_history(job, schedule.trigger,
                      {.kind = HistoryRecord::Kind::kDiscardedUpstream,
                       .status = event.program.status,
                       .event = event.id,
                       .extra = event.program.program});
          open.erase(it);
        }
        if (correlated && failed.insert(key).second) {
          Millis memory = schedule.timeout ? schedule.timeout->after : kFailedLineageMemory;
          out.failed_lineages.push_back({sid, lineage, now + memory});
        }
        // Published whether or not a job was open, so the failure travels down the DAG.
        out.published.push_back(UpstreamFailedEvent(schedule, event, now));
        continue;
      }
      if (!r.changed) continue;
      // A lineage that failed for this schedule opens nothing (SPEC §10).
      if (correlated && it == open.end() && failed.contains(key)) continue;
      out.applied[ei] = true;
      if (it == open.end()) {
        OpenJob job;
        job.schedule_id = sid;
        job.schedule_version = s->version;
        job.lineage = lineage;
        job.state = std::move(probe);
        job.opened_at = now;
        out.jobs.push_back(std::move(job));
        add_history(out.jobs.back(), schedule.trigger,
                    {.kind = HistoryRecord::Kind::kOpened,
                     .has_lineage = correlated,
                     .event = event.id,
                     .extra = correlated ? lineage : std::string()});
        it = open.emplace(key, out.jobs.size() - 1).first;
      }
      OpenJob& job = out.jobs[it->second];
      job.changed = true;
      if (job.triggered_by.size() < kMaxTriggeringEvents) {
        if (!payload && events[ei].payload) payload = std::make_shared<const nlohmann::json>(event.payload);
        job.triggered_by.push_back({event.id, EventTypeName(event.type), payload});
      }
      // The leaves the event counted, as they stand now (described alone, not every leaf of the
      // trigger; as text only when the entry is written as text).
      HistoryRecord counted{.kind = HistoryRecord::Kind::kCounted, .event = event.id};
      std::vector<int>& leaves = r.leaves;  // sorted in place: r is read no more
      std::sort(leaves.begin(), leaves.end());
      leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());
      counted.leaves.reserve(leaves.size());
      for (int leaf : leaves) {
        // A state of another definition of the trigger reads as nothing counted (as in
        // DescribeProgress); ApplyEvent has reset such a state already.
        LeafState copy;
        if (static_cast<size_t>(leaf) < job.state.leaves.size()) {
          const LeafState& l = job.state.leaves[static_cast<size_t>(leaf)];
          copy = LeafState{l.count, l.bytes, {}, l.satisfied, l.last_arrival};
        }
        counted.leaves.push_back({leaf, std::move(copy)});
      }
      add_history(job, schedule.trigger, std::move(counted));
      if (IsComplete(schedule.trigger, job.state)) {
        job.complete = true;
        add_history(job, schedule.trigger, {.kind = HistoryRecord::Kind::kComplete});
        // A completed job is never changed again: the next event opens a new job.
        open.erase(it);
      }
    }
  }
  return out;
}

}  // namespace

}  // namespace trigd
