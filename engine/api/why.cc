#include "api/why.h"

#include <sstream>

#include "core/constraint_checker.h"
#include "core/trigger_eval.h"
#include "model/job.h"

namespace trigd {

using nlohmann::json;

namespace {

std::optional<TimePoint> MillisField(const json& row, const char* field) {
  if (!row.contains(field) || !row[field].is_number()) return std::nullopt;
  return TimePoint(Millis(row[field].get<int64_t>()));
}

std::string Str(const json& row, const char* field) {
  return row.contains(field) && row[field].is_string() ? row[field].get<std::string>() : "";
}

// A time branch still waiting for its tick: when the tick comes (time_triggers.next_fire_at),
// or that none will, and whether the timeout comes first (a job sure to be discarded would
// otherwise read only "waiting for a tick (cron ...)"). Added to `leaf`'s JSON and detail.
void AddNextFire(json& leaf, const TimeTrigger& time, int index, const JobInspection& in,
                 std::optional<TimePoint> deadline) {
  // Not an optional: g++ 12 at -O2 warns (maybe-uninitialized) on reading one here.
  const bool suspended = in.schedule_state == "suspended";
  const bool has_next =
      !suspended && in.time_trigger && in.time_trigger->leaf == index && in.time_trigger->next_fire_at.has_value();
  const TimePoint next = has_next ? *in.time_trigger->next_fire_at : TimePoint{};
  std::string note;
  if (suspended) {
    note = "no tick will come while the schedule is suspended";
  } else if (!has_next) {
    note = "no next fire time: no tick will come";
  } else {
    note = "next fire " + FormatTime(next);
    if (time.cron) note += ", local " + LocalClock(time.timezone, next);
    if (deadline && next > *deadline) {
      note += ", after the timeout";
      leaf["after_timeout"] = true;
    }
  }
  leaf["next_fire_at"] = has_next ? json(FormatTime(next)) : json(nullptr);
  std::string detail = leaf.value("detail", "");
  if (!detail.empty() && detail.back() == ')') {
    detail.insert(detail.size() - 1, "; " + note);
  } else {
    detail += " (" + note + ")";
  }
  leaf["detail"] = detail;
}

// The checks a launch by timeout (action run) went past, from its history entry: "time_window
// (outside window ...)", "trigger (incomplete)". Empty for any other entry.
std::string IgnoredChecks(const json& entry) {
  if (entry.value("what", "").rfind("launched by timeout", 0) != 0) return "";
  if (!entry.contains("checks") || !entry["checks"].is_array()) return "";
  std::string out;
  for (const auto& c : entry["checks"]) {
    if (!c.is_object() || c.value("result", "") == "satisfied") continue;
    const std::string name = c.value("constraint", "");
    if (!out.empty()) out += ", ";
    out += name == "trigger" ? std::string("trigger (incomplete)") : name + " (" + c.value("reason", "") + ")";
  }
  return out;
}

}  // namespace

json ExplainJob(const JobInspection& in) {
  const json& job = in.job;
  json out = {{"job", job.value("id", int64_t{0})},
              {"schedule", Str(job, "schedule_name")},
              {"schedule_version", job.value("schedule_version", 0)},
              {"schedule_state", in.schedule_state},
              {"state", Str(job, "state")},
              {"checked_at", FormatTime(in.now)}};
  if (!Str(job, "run_id").empty()) out["run_id"] = Str(job, "run_id");
  if (!Str(job, "discard_reason").empty()) out["discard_reason"] = Str(job, "discard_reason");
  out["history"] = job.value("history", json::array());
  std::string state = Str(job, "state");
  bool pending = state == "pending_trigger" || state == "pending_constraint";
  if (!pending) {
    out["summary"] =
        state == "discarded" ? "discarded: " + Str(job, "discard_reason")
        : job.value("request_unpublished", false)
            ? "launched as run " + Str(job, "run_id") + "; the relay has not published its launch request yet"
            : "launched as run " + Str(job, "run_id");
    return out;
  }
  if (!in.schedule) {
    out["summary"] = "its schedule is " + in.schedule_state + ": the checker discards it at its next check";
    return out;
  }
  const Schedule& s = *in.schedule;
  TriggerState ts = TriggerStateFromJson(job.value("trigger_state", json::array()));
  JobFacts facts{MillisField(job, "opened_at_ms").value_or(in.now), MillisField(job, "ready_at_ms")};
  // A quiet period or silence that has ended completes its leaf now, as the checker's next look
  // will; one still running is what the job waits for (SPEC §11).
  if (state == "pending_trigger") SettleTimedLeaves(s.trigger, ts, in.now);
  bool complete = state == "pending_constraint" || IsComplete(s.trigger, ts);
  if (!complete) {
    facts.trigger_wakes_at = NextLeafDeadline(s.trigger, ts);
    facts.trigger_wait = DescribeLeafDeadline(s.trigger, ts);
  }
  std::optional<TimePoint> deadline;
  if (s.timeout) deadline = facts.opened_at + s.timeout->after;
  json trigger = json::array();
  // One entry per leaf, in TriggerLeaves' order (the numbering time_triggers.leaf uses).
  const std::vector<const Trigger*> leaves = TriggerLeaves(s.trigger);
  const std::vector<LeafProgress> progress = DescribeProgress(s.trigger, ts);
  for (size_t i = 0; i < progress.size(); ++i) {
    const LeafProgress& p = progress[i];
    json leaf = {{"path", p.path}, {"satisfied", p.satisfied}, {"detail", p.detail}};
    // The other branches of a complete `any` hold nothing up: not "[unmet]" under a job that
    // waits only on a constraint.
    if (complete && !p.satisfied) leaf["needed"] = false;
    if (!p.satisfied && i < leaves.size() && leaves[i]->kind == TriggerKind::kTime) {
      AddNextFire(leaf, leaves[i]->time, static_cast<int>(i), in, deadline);
    }
    trigger.push_back(std::move(leaf));
  }
  out["trigger"] = trigger;
  CheckOutcome check = CheckJob(s, facts, complete, in.facts, in.now);
  json constraints = json::array();
  for (const ConstraintCheck& c : check.checks) {
    if (c.constraint == "trigger") continue;  // the trigger's own progress is listed above
    json e = {{"constraint", c.constraint}, {"result", ConstraintResultName(c.result)}, {"reason", c.reason}};
    if (c.next_check_at) e["next_check_at"] = FormatTime(*c.next_check_at);
    // The checker's reason leaves the local time now out (it is stored, and must not change
    // every minute); shown here, live.
    if (c.constraint == "time_window" && c.result != ConstraintResult::kSatisfied && s.constraints.time_window) {
      e["local_now"] = LocalClock(s.constraints.time_window->timezone, in.now);
    }
    constraints.push_back(std::move(e));
  }
  out["constraints"] = constraints;
  out["decision_now"] = DecisionName(check.decision);
  out["summary"] = check.reason;
  if (auto next = MillisField(job, "next_check_at_ms")) {
    out["next_check_at"] = FormatTime(*next);
  } else {
    out["next_check_at"] = nullptr;
  }
  if (check.decision == Decision::kWait && check.wakes_on_run_end && complete) {
    out["wakes_on"] = "a run of this schedule or its concurrency group ending";
  }
  if (!complete) {
    // The events of its unmet branches (a time branch's tick at its next fire time), or the
    // clock at a quiet period's or silence's end.
    out["wakes_on"] = facts.trigger_wakes_at ? "an event for an unmet trigger branch, or the clock at " +
                                                   FormatTime(*facts.trigger_wakes_at) + " (" + facts.trigger_wait + ")"
                                             : "an event for an unmet trigger branch";
  }
  return out;
}

std::string FormatExplanation(const json& e) {
  std::ostringstream o;
  o << "job " << e.value("job", int64_t{0}) << "  " << e.value("schedule", "") << " v" << e.value("schedule_version", 0)
    << "  state " << e.value("state", "") << "\n";
  o << "why: " << e.value("summary", "") << "\n";
  if (e.contains("trigger")) {
    o << "trigger:\n";
    for (const auto& t : e["trigger"]) {
      o << "  " << (t.value("satisfied", false) ? "[met]   " : "[unmet] ") << t.value("path", "") << ": "
        << t.value("detail", "") << (t.value("needed", true) ? "" : " (not needed: the trigger is complete)") << "\n";
    }
  }
  if (e.contains("constraints") && !e["constraints"].empty()) {
    o << "constraints:\n";
    for (const auto& c : e["constraints"]) {
      std::string r = c.value("result", "");
      o << "  "
        << (r == "satisfied" ? "[ok]    "
            : r == "wait"    ? "[wait]  "
                             : "[skip]  ")
        << c.value("constraint", "") << ": " << c.value("reason", "");
      if (c.contains("local_now")) o << "; local time now " << c.value("local_now", "");
      o << "\n";
    }
  }
  if (e.contains("next_check_at")) {
    o << "next check: "
      << (e["next_check_at"].is_string() ? e["next_check_at"].get<std::string>()
          : e.contains("wakes_on")       ? "on " + e.value("wakes_on", "")
                                         : std::string("none scheduled"))
      << "\n";
    if (e["next_check_at"].is_string() && e.contains("wakes_on"))
      o << "or sooner on: " << e.value("wakes_on", "") << "\n";
  } else if (e.contains("wakes_on")) {
    o << "next check: on " << e.value("wakes_on", "") << "\n";
  }
  if (e.contains("run_id")) o << "run: " << e.value("run_id", "") << "\n";
  const json& h = e.value("history", json::array());
  if (!h.empty()) {
    o << "history:\n";
    for (const auto& entry : h) {
      o << "  " << entry.value("at", "") << "  " << entry.value("what", "");
      if (entry.contains("event")) o << " (event " << entry["event"].get<std::string>() << ")";
      if (entry.contains("leaves")) {
        for (const auto& l : entry["leaves"]) o << "; " << (l.is_string() ? l.get<std::string>() : l.dump());
      }
      if (entry.contains("run_id")) o << " run " << entry["run_id"].get<std::string>();
      // What a launch by timeout went past, in the text as in --json.
      if (std::string ignored = IgnoredChecks(entry); !ignored.empty()) o << ", ignoring: " << ignored;
      // Waiting entries say their next check in their reason already.
      o << "\n";
    }
  }
  return o.str();
}

}  // namespace trigd
