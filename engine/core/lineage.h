// Lineages (SPEC §10): the DAG run a run belongs to, and the state of a lineage. Pure: no I/O.
//
// A run whose job was triggered only by time, partition, manual or custom events starts a
// lineage (its id is the run's id). A run triggered by program events of upstream runs inherits
// their lineage; of several, the oldest. Lineage ids are run ids, UUIDv7, whose text sorts by
// the time of the run: the oldest is the smallest.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/run.h"

namespace trigd {

struct RunLineage {
  std::string lineage;           // the run's lineage
  std::vector<std::string> all;  // every lineage of its upstream runs, sorted (may be empty)
};

// The lineage of the run `run_id` of a job. `job_lineage`: the lineage a correlated job
// collected (empty otherwise). `triggered_by`: the job's triggering events (the launch request's
// triggered_by array); a program event's lineage is its payload's `lineage`, else its run id.
RunLineage DecideRunLineage(std::string_view job_lineage, const nlohmann::json& triggered_by, std::string_view run_id);

// The state of a lineage (SPEC §10): running while any run or job of it is active, then failed
// if any run of it failed, was killed or upstream_failed, else succeeded.
enum class LineageState { kRunning, kSucceeded, kFailed };
inline constexpr LineageState kAllLineageStates[] = {LineageState::kRunning, LineageState::kSucceeded,
                                                     LineageState::kFailed};
const char* LineageStateName(LineageState s);
std::optional<LineageState> LineageStateFromName(std::string_view name);

// `active`: runs not final plus open or waiting jobs of the lineage; `failed`: runs that ended
// failed or killed, and upstream failures remembered for it.
LineageState DecideLineageState(int64_t active, int64_t failed);

// One run of a lineage, as `lineages show` lays it out.
struct LineageRun {
  std::string run_id;
  std::string schedule;
  std::string program;
  std::string state;  // RunStateName
  int64_t attempt = 1;
  std::string launched_at;
  std::string ended_at;  // empty while active
  std::string worker;
  std::vector<std::string> upstream;  // run ids of the program events that triggered it
};

// The runs as a tree: each run after its first upstream run that is in the lineage (a root has
// none), children in launch order (`runs` is given in launch order). `depth` per position.
struct LineageTreeRow {
  size_t run = 0;  // index into `runs`
  int depth = 0;
};
std::vector<LineageTreeRow> LineageTree(const std::vector<LineageRun>& runs);

// The run ids of the program events in a triggered_by array (upstream runs), in order.
std::vector<std::string> UpstreamRunIds(const nlohmann::json& triggered_by);

}  // namespace trigd
