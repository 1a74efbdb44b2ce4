#include "core/trigger_eval.h"

#include <algorithm>
#include <limits>

#include "common/check.h"
#include "core/glob.h"

namespace trigd {
namespace {

bool IsComposite(const Trigger& trigger) {
  return trigger.kind == TriggerKind::kAll || trigger.kind == TriggerKind::kAny;
}

// The partition count a leaf waits for: `count`, or 1 when neither count nor min_bytes is
// set; none when only min_bytes is set (then only bytes count).
std::optional<int64_t> PartitionTarget(const PartitionTrigger& leaf) {
  if (leaf.count) return leaf.count;
  if (leaf.min_bytes) return std::nullopt;
  return 1;
}

bool PartitionSatisfied(const PartitionTrigger& leaf, const LeafState& state) {
  std::optional<int64_t> target = PartitionTarget(leaf);
  if (target && state.count >= *target) return true;
  return leaf.min_bytes && state.bytes >= *leaf.min_bytes;
}

bool Wants(const ProgramTrigger& leaf, ProgramStatus status) {
  return std::find(leaf.statuses.begin(), leaf.statuses.end(), status) != leaf.statuses.end();
}

// Counts the partitions of `event` that `state` has not seen. Bytes are the event's, not a
// partition's, so they are added once for an event that brings at least one new partition:
// a re-sent partition adds neither count nor bytes.
// Adds `name` to the sorted distinct names of `state` (partitions, or custom event keys);
// false when it was there.
bool AddDistinct(const std::string& name, LeafState& state) {
  auto it = std::lower_bound(state.partitions.begin(), state.partitions.end(), name);
  if (it != state.partitions.end() && *it == name) return false;
  state.partitions.insert(it, name);
  ++state.count;
  return true;
}

// State read back from storage is normally sorted; binary search depends on it.
void SortDistinct(LeafState& state) {
  if (!std::is_sorted(state.partitions.begin(), state.partitions.end())) {
    std::sort(state.partitions.begin(), state.partitions.end());
    state.partitions.erase(std::unique(state.partitions.begin(), state.partitions.end()), state.partitions.end());
  }
}

// A matching arrival on a quiet leaf still collecting restarts its quiet period, even one that
// brings no new partition or key (the feed is still writing).
bool Arrived(const std::optional<Millis>& quiet, LeafState& state, TimePoint at) {
  if (!quiet || state.satisfied) return false;
  state.last_arrival = at;
  return true;
}

bool ApplyPartition(const PartitionTrigger& leaf, const PartitionPayload& event, LeafState& state, TimePoint at) {
  SortDistinct(state);
  bool counted = false;
  bool matched = false;
  for (const std::string& partition : event.partitions) {
    if (leaf.match && !GlobMatch(*leaf.match, partition)) continue;
    matched = true;
    counted = AddDistinct(partition, state) || counted;
  }
  const bool restarted = matched && Arrived(leaf.quiet, state, at);
  if (!counted) return restarted;
  // Saturating: two partitions of 5e18 bytes would wrap the sum negative, so the leaf would
  // never hold. Envelope bytes are never negative.
  if (event.bytes) {
    state.bytes = *event.bytes > std::numeric_limits<int64_t>::max() - state.bytes ? std::numeric_limits<int64_t>::max()
                                                                                   : state.bytes + *event.bytes;
  }
  // A quiet leaf is satisfied by the clock (SettleTimedLeaves), not by its count.
  if (!leaf.quiet && PartitionSatisfied(leaf, state)) state.satisfied = true;
  return true;
}

bool ApplyCustom(const EventTrigger& leaf, const Event& event, LeafState& state, TimePoint at) {
  if (!WhereMatches(leaf, event.payload)) return false;
  SortDistinct(state);
  const bool restarted = Arrived(leaf.quiet, state, at);
  if (!AddDistinct(event.custom.key, state)) return restarted;
  if (!leaf.quiet && state.count >= leaf.count) state.satisfied = true;
  return true;
}

// An arrival of the silence leaf's dataset or event: it arms the silence again (once it has
// completed, it stays complete for this job; the next job is armed by the next arrival).
bool ApplySilence(const SilenceTrigger& leaf, const Event& event, LeafState& state, TimePoint at) {
  const bool matches = leaf.dataset ? event.type == EventType::kPartition && event.partition.dataset == *leaf.dataset
                                    : event.type == EventType::kCustom && event.custom.name == leaf.event;
  if (!matches || state.satisfied) return false;
  state.last_arrival = at;
  ++state.count;
  return true;
}

// Whether a quiet leaf's count or bytes are reached (its quiet period then runs).
bool QuietReached(const Trigger& leaf, const LeafState& state) {
  if (leaf.kind == TriggerKind::kPartition) return PartitionSatisfied(leaf.partition, state);
  return state.count >= leaf.event.count;
}

std::optional<Millis> QuietOf(const Trigger& leaf) {
  if (leaf.kind == TriggerKind::kPartition) return leaf.partition.quiet;
  if (leaf.kind == TriggerKind::kEvent) return leaf.event.quiet;
  return std::nullopt;
}

// What a quiet leaf's detail adds: where its quiet period stands.
std::string QuietDetail(const Trigger& leaf, const LeafState& state) {
  const std::optional<Millis> quiet = QuietOf(leaf);
  if (!quiet) return "";
  if (!state.last_arrival) return "; quiet " + FormatDuration(*quiet) + " after the last arrival";
  const std::string last = FormatTime(*state.last_arrival);
  if (state.satisfied) return "; quiet since " + last;
  if (!QuietReached(leaf, state))
    return "; quiet " + FormatDuration(*quiet) + " after the last arrival (last at " + last + ")";
  return "; quiet until " + FormatTime(*state.last_arrival + *quiet) + ", last arrival at " + last;
}

std::string SilenceDetail(const SilenceTrigger& leaf, const LeafState& state) {
  const std::string what = leaf.dataset ? "partitions of " + *leaf.dataset : "events " + leaf.event.value_or("");
  if (!state.last_arrival) return "no " + what + " for " + FormatDuration(leaf.after) + ": armed by the next arrival";
  const std::string since = FormatTime(*state.last_arrival);
  const std::string fires = FormatTime(*state.last_arrival + leaf.after);
  if (state.satisfied) return "no " + what + ": silent since " + since + ", fired at " + fires;
  return "no " + what + " for " + FormatDuration(leaf.after) + ": silent since " + since + ", fires at " + fires;
}

// TriggerLeaves(trigger).size(), without building the list.
size_t CountLeaves(const Trigger& trigger) {
  size_t n = 0;
  ForEachLeaf(trigger, [&n](const Trigger&) { ++n; });
  return n;
}

bool Evaluate(const Trigger& trigger, const TriggerState& state, size_t& next_leaf) {
  if (!IsComposite(trigger)) return state.leaves[next_leaf++].satisfied;
  // Every child is evaluated (no short-circuit) so that leaf numbering stays in step.
  bool all = true;
  bool any = false;
  for (const Trigger& child : trigger.children) {
    bool satisfied = Evaluate(child, state, next_leaf);
    all = all && satisfied;
    any = any || satisfied;
  }
  return trigger.kind == TriggerKind::kAll ? all : any;
}

std::string StatusList(const std::vector<ProgramStatus>& statuses) {
  std::string out;
  for (size_t i = 0; i < statuses.size(); ++i) {
    if (i > 0) out += i + 1 == statuses.size() ? " or " : ", ";
    out += ProgramStatusName(statuses[i]);
  }
  return out;
}

// "2 of 4 partitions"; past what is needed (events keep counting while an `all` waits for its
// other branches) "5 partitions (4 needed)", not "5 of 4".
std::string Progress(int64_t have, int64_t need, const std::string& what) {
  if (have > need) return std::to_string(have) + " " + what + " (" + std::to_string(need) + " needed)";
  return std::to_string(have) + " of " + std::to_string(need) + " " + what;
}

std::string DescribeLeaf(const Trigger& leaf, const LeafState& state) {
  switch (leaf.kind) {
    case TriggerKind::kPartition: {
      const PartitionTrigger& p = leaf.partition;
      std::optional<int64_t> target = PartitionTarget(p);
      std::string detail;
      if (target) {
        detail = Progress(state.count, *target, "partitions");
        if (p.min_bytes) detail += " or " + Progress(state.bytes, *p.min_bytes, "bytes");
      } else {
        detail = Progress(state.bytes, *p.min_bytes, "bytes") + " (" + std::to_string(state.count) + " partitions)";
      }
      return detail + " of " + p.dataset + (p.match ? " matching \"" + *p.match + "\"" : "") + QuietDetail(leaf, state);
    }
    case TriggerKind::kEvent: {
      const EventTrigger& e = leaf.event;
      return Progress(state.count, e.count, "distinct keys") + " of " + e.name + (e.where.empty() ? "" : " (where)") +
             QuietDetail(leaf, state);
    }
    case TriggerKind::kSilence: return SilenceDetail(leaf.silence, state);
    case TriggerKind::kProgram: {
      const ProgramTrigger& p = leaf.program;
      return Progress(state.count, p.count, StatusList(p.statuses) + " events") + " of " + p.program;
    }
    case TriggerKind::kTime: {
      const TimeTrigger& t = leaf.time;
      std::string when =
          t.cron ? "cron \"" + *t.cron + "\" in " + t.timezone : "every " + FormatDuration(t.every.value_or(Millis(0)));
      return (state.satisfied ? "ticked" : "waiting for a tick") + std::string(" (") + when + ")";
    }
    case TriggerKind::kAll:
    case TriggerKind::kAny: break;
  }
  return {};
}

// The path of a composite's child `i`, as the schedule document names it: "trigger.all[1]", and
// a leaf inside a composite by its kind ("trigger.all[1].partition").
std::string ChildPath(const Trigger& composite, const std::string& path, size_t i) {
  std::string child_path = path + "." + TriggerKindName(composite.kind) + "[" + std::to_string(i) + "]";
  const Trigger& child = composite.children[i];
  if (!IsComposite(child)) child_path += std::string(".") + TriggerKindName(child.kind);
  return child_path;
}

// `only`, when given: the leaf numbers to describe (ascending); the others are passed over.
void Describe(const Trigger& trigger, const std::string& path, const TriggerState& state, size_t& next_leaf,
              std::vector<LeafProgress>& out, const std::vector<int>* only = nullptr) {
  if (!IsComposite(trigger)) {
    const size_t leaf = next_leaf++;
    if (only && !std::binary_search(only->begin(), only->end(), static_cast<int>(leaf))) return;
    const LeafState& leaf_state = state.leaves[leaf];
    out.push_back({path, leaf_state.satisfied, DescribeLeaf(trigger, leaf_state)});
    return;
  }
  for (size_t i = 0; i < trigger.children.size(); ++i) {
    Describe(trigger.children[i], ChildPath(trigger, path, i), state, next_leaf, out, only);
  }
}

}  // namespace

const nlohmann::json* PayloadAt(const nlohmann::json& payload, std::string_view path) {
  const nlohmann::json* at = &payload;
  while (true) {
    if (!at->is_object()) return nullptr;
    const size_t dot = path.find('.');
    auto it = at->find(std::string(path.substr(0, dot)));
    if (it == at->end()) return nullptr;
    at = &*it;
    if (dot == std::string_view::npos) return at;
    path.remove_prefix(dot + 1);
  }
}

bool WhereMatches(const EventTrigger& leaf, const nlohmann::json& payload) {
  for (const WhereCondition& c : leaf.where) {
    const nlohmann::json* value = PayloadAt(payload, c.path);
    if (value == nullptr || value->is_structured()) return false;
    if (std::find(c.values.begin(), c.values.end(), *value) == c.values.end()) return false;
  }
  return true;
}

TriggerState NewTriggerState(const Trigger& trigger) {
  TriggerState state;
  state.leaves.resize(CountLeaves(trigger));
  return state;
}

ApplyResult ApplyEvent(const Trigger& trigger, const ScheduleName& schedule, const Event& event, TriggerState& state) {
  return ApplyEvent(trigger, schedule, event, state, event.time);
}

ApplyResult ApplyEvent(const Trigger& trigger, const ScheduleName& schedule, const Event& event, TriggerState& state,
                       TimePoint at) {
  if (state.leaves.size() != CountLeaves(trigger)) state = NewTriggerState(trigger);
  // A quiet period or silence that ended before this arrival completed its leaf then: the
  // arrival does not restart it.
  SettleTimedLeaves(trigger, state, at);

  ApplyResult result;
  size_t i = 0;
  ForEachLeaf(trigger, [&](const Trigger& leaf) {
    LeafState& leaf_state = state.leaves[i];
    bool counted = false;
    // Satisfied leaves keep counting: the events still belong to this open job and travel
    // with its launch request, and a satisfied leaf never becomes unsatisfied.
    switch (leaf.kind) {
      case TriggerKind::kPartition:
        if (event.type == EventType::kPartition && event.partition.dataset == leaf.partition.dataset) {
          counted = ApplyPartition(leaf.partition, event.partition, leaf_state, at);
        }
        break;
      case TriggerKind::kProgram:
        if (event.type != EventType::kProgram || event.program.program != leaf.program.program) {
          break;
        }
        if (Wants(leaf.program, event.program.status)) {
          ++leaf_state.count;
          if (leaf_state.count >= leaf.program.count) leaf_state.satisfied = true;
          counted = true;
        } else if ((event.program.status == ProgramStatus::kFailed || event.program.status == ProgramStatus::kKilled) &&
                   leaf.program.on_upstream_failure == UpstreamFailurePolicy::kDiscard) {
          result.upstream_failure = true;
        }
        break;
      case TriggerKind::kTime:
        if (event.type == EventType::kTick && event.tick.schedule == schedule.value()) {
          ++leaf_state.count;
          leaf_state.satisfied = true;
          counted = true;
        }
        break;
      case TriggerKind::kEvent:
        if (event.type == EventType::kCustom && event.custom.name == leaf.event.name) {
          counted = ApplyCustom(leaf.event, event, leaf_state, at);
        }
        break;
      case TriggerKind::kSilence: counted = ApplySilence(leaf.silence, event, leaf_state, at); break;
      case TriggerKind::kAll:
      case TriggerKind::kAny: break;
    }
    if (counted) {
      result.changed = true;
      result.leaves.push_back(static_cast<int>(i));
    }
    ++i;
  });
  return result;
}

std::optional<TimePoint> LeafDeadline(const Trigger& leaf, const LeafState& state) {
  if (state.satisfied || !state.last_arrival) return std::nullopt;
  if (leaf.kind == TriggerKind::kSilence) return *state.last_arrival + leaf.silence.after;
  const std::optional<Millis> quiet = QuietOf(leaf);
  if (!quiet || !QuietReached(leaf, state)) return std::nullopt;
  return *state.last_arrival + *quiet;
}

bool SettleTimedLeaves(const Trigger& trigger, TriggerState& state, TimePoint now) {
  if (state.leaves.size() != CountLeaves(trigger)) return false;
  bool settled = false;
  size_t i = 0;
  ForEachLeaf(trigger, [&](const Trigger& leaf) {
    LeafState& leaf_state = state.leaves[i++];
    const std::optional<TimePoint> deadline = LeafDeadline(leaf, leaf_state);
    if (deadline && *deadline <= now) {
      leaf_state.satisfied = true;
      settled = true;
    }
  });
  return settled;
}

std::optional<TimePoint> NextLeafDeadline(const Trigger& trigger, const TriggerState& state) {
  if (state.leaves.size() != CountLeaves(trigger)) return std::nullopt;
  std::optional<TimePoint> next;
  size_t i = 0;
  ForEachLeaf(trigger, [&](const Trigger& leaf) {
    const std::optional<TimePoint> d = LeafDeadline(leaf, state.leaves[i++]);
    if (d && (!next || *d < *next)) next = d;
  });
  return next;
}

std::string DescribeLeafDeadline(const Trigger& trigger, const TriggerState& state) {
  const std::vector<const Trigger*> leaves = TriggerLeaves(trigger);
  if (state.leaves.size() != leaves.size()) return "";
  std::optional<TimePoint> next;
  size_t which = 0;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const std::optional<TimePoint> d = LeafDeadline(*leaves[i], state.leaves[i]);
    if (d && (!next || *d < *next)) {
      next = d;
      which = i;
    }
  }
  if (!next) return "";
  const LeafState& l = state.leaves[which];
  if (leaves[which]->kind == TriggerKind::kSilence) {
    return DescribeProgress(trigger, state)[which].path + ": silent since " + FormatTime(*l.last_arrival) +
           ", fires at " + FormatTime(*next);
  }
  return DescribeProgress(trigger, state)[which].path + ": quiet until " + FormatTime(*next) + ", last arrival at " +
         FormatTime(*l.last_arrival);
}

bool ArmSilence(const Trigger& trigger, TriggerState& state, TimePoint at) {
  const std::vector<const Trigger*> leaves = TriggerLeaves(trigger);
  if (state.leaves.size() != leaves.size()) state = NewTriggerState(trigger);
  bool any = false;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (leaves[i]->kind != TriggerKind::kSilence) continue;
    any = true;
    if (!state.leaves[i].last_arrival && !state.leaves[i].satisfied) state.leaves[i].last_arrival = at;
  }
  return any;
}

bool HasSilence(const Trigger& trigger) {
  for (const Trigger* leaf : TriggerLeaves(trigger)) {
    if (leaf->kind == TriggerKind::kSilence) return true;
  }
  return false;
}

bool IsComplete(const Trigger& trigger, const TriggerState& state) {
  // A state from another definition of the trigger says nothing about this one.
  if (state.leaves.size() != CountLeaves(trigger)) return false;
  size_t next_leaf = 0;
  return Evaluate(trigger, state, next_leaf);
}

std::vector<LeafProgress> DescribeLeaves(const Trigger& trigger, const TriggerState& state,
                                         const std::vector<int>& leaves) {
  // A state of another definition of the trigger reads as nothing counted (as in DescribeProgress).
  TriggerState fresh;
  const TriggerState* current = &state;
  if (state.leaves.size() != CountLeaves(trigger)) {
    fresh = NewTriggerState(trigger);
    current = &fresh;
  }
  std::vector<int> only = leaves;
  std::sort(only.begin(), only.end());
  std::vector<LeafProgress> out;
  size_t next_leaf = 0;
  Describe(trigger, "trigger", *current, next_leaf, out, &only);
  return out;
}

namespace {

// The leaf numbered `leaf` (depth-first, as Describe numbers them) and its path, as Describe
// names it.
const Trigger* FindLeaf(const Trigger& trigger, const std::string& path, size_t& next_leaf, size_t leaf,
                        std::string& leaf_path) {
  if (!IsComposite(trigger)) {
    if (next_leaf++ != leaf) return nullptr;
    leaf_path = path;
    return &trigger;
  }
  for (size_t i = 0; i < trigger.children.size(); ++i) {
    const size_t leaves = CountLeaves(trigger.children[i]);
    if (leaf >= next_leaf + leaves) {
      next_leaf += leaves;  // the leaf is past this child: no path built for it
      continue;
    }
    return FindLeaf(trigger.children[i], ChildPath(trigger, path, i), next_leaf, leaf, leaf_path);
  }
  return nullptr;
}

}  // namespace

LeafProgress DescribeLeafAt(const Trigger& trigger, int leaf, const LeafState& state) {
  std::string path;
  size_t next_leaf = 0;
  const Trigger* node = FindLeaf(trigger, "trigger", next_leaf, static_cast<size_t>(leaf), path);
  TRIGD_CHECK(node != nullptr);
  return {std::move(path), state.satisfied, DescribeLeaf(*node, state)};
}

std::vector<LeafProgress> DescribeProgress(const Trigger& trigger, const TriggerState& state) {
  const TriggerState fresh = NewTriggerState(trigger);
  const TriggerState& current = state.leaves.size() == fresh.leaves.size() ? state : fresh;
  std::vector<LeafProgress> out;
  size_t next_leaf = 0;
  Describe(trigger, "trigger", current, next_leaf, out);
  return out;
}

}  // namespace trigd
