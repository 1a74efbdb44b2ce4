#include "core/trigger_eval.h"

#include <algorithm>
#include <limits>

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

bool ApplyPartition(const PartitionTrigger& leaf, const PartitionPayload& event, LeafState& state) {
  SortDistinct(state);
  bool counted = false;
  for (const std::string& partition : event.partitions) {
    if (leaf.match && !GlobMatch(*leaf.match, partition)) continue;
    counted = AddDistinct(partition, state) || counted;
  }
  if (!counted) return false;
  // Saturating: two partitions of 5e18 bytes would wrap the sum negative, so the leaf would
  // never hold. Envelope bytes are never negative.
  if (event.bytes) {
    state.bytes = *event.bytes > std::numeric_limits<int64_t>::max() - state.bytes ? std::numeric_limits<int64_t>::max()
                                                                                   : state.bytes + *event.bytes;
  }
  if (PartitionSatisfied(leaf, state)) state.satisfied = true;
  return true;
}

bool ApplyCustom(const EventTrigger& leaf, const Event& event, LeafState& state) {
  if (!WhereMatches(leaf, event.payload)) return false;
  SortDistinct(state);
  if (!AddDistinct(event.custom.key, state)) return false;
  if (state.count >= leaf.count) state.satisfied = true;
  return true;
}

// TriggerLeaves(trigger).size(), without building the list.
size_t CountLeaves(const Trigger& trigger) {
  if (!IsComposite(trigger)) return 1;
  size_t n = 0;
  for (const Trigger& child : trigger.children) n += CountLeaves(child);
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
      return detail + " of " + p.dataset + (p.match ? " matching \"" + *p.match + "\"" : "");
    }
    case TriggerKind::kEvent: {
      const EventTrigger& e = leaf.event;
      return Progress(state.count, e.count, "distinct keys") + " of " + e.name + (e.where.empty() ? "" : " (where)");
    }
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
  const std::string prefix = path + "." + TriggerKindName(trigger.kind) + "[";
  for (size_t i = 0; i < trigger.children.size(); ++i) {
    const Trigger& child = trigger.children[i];
    std::string child_path = prefix + std::to_string(i) + "]";
    // A leaf inside a composite is named by its kind, as in the schedule document.
    if (!IsComposite(child)) child_path += std::string(".") + TriggerKindName(child.kind);
    Describe(child, child_path, state, next_leaf, out, only);
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
  const std::vector<const Trigger*> leaves = TriggerLeaves(trigger);
  if (state.leaves.size() != leaves.size()) state = NewTriggerState(trigger);

  ApplyResult result;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Trigger& leaf = *leaves[i];
    LeafState& leaf_state = state.leaves[i];
    bool counted = false;
    // Satisfied leaves keep counting: the events still belong to this open job and travel
    // with its launch request, and a satisfied leaf never becomes unsatisfied.
    switch (leaf.kind) {
      case TriggerKind::kPartition:
        if (event.type == EventType::kPartition && event.partition.dataset == leaf.partition.dataset) {
          counted = ApplyPartition(leaf.partition, event.partition, leaf_state);
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
          counted = ApplyCustom(leaf.event, event, leaf_state);
        }
        break;
      case TriggerKind::kAll:
      case TriggerKind::kAny: break;
    }
    if (counted) {
      result.changed = true;
      result.leaves.push_back(static_cast<int>(i));
    }
  }
  return result;
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

std::vector<LeafProgress> DescribeProgress(const Trigger& trigger, const TriggerState& state) {
  const TriggerState fresh = NewTriggerState(trigger);
  const TriggerState& current = state.leaves.size() == fresh.leaves.size() ? state : fresh;
  std::vector<LeafProgress> out;
  size_t next_leaf = 0;
  Describe(trigger, "trigger", current, next_leaf, out);
  return out;
}

}  // namespace trigd
