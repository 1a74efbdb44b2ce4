// The runs trigd really launched for a schedule over a range of time, for `schedules replay
// --compare` (SPEC §12): read in a read-only transaction, nothing written.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace trigd {

struct RecordedRun {
  std::string run_id;
  TimePoint launched_at;
  std::optional<TimePoint> finished_at;
  std::string state;
  std::vector<std::string> triggered_by;  // the ids of the launch request's triggering events
};

// The runs of schedule `name` (namespace/name, every version) launched in [from, to], oldest
// first. kUnavailable when PostgreSQL cannot be reached.
Result<std::vector<RecordedRun>> QueryRecordedRuns(const std::string& pg, const std::string& name, TimePoint from,
                                                   TimePoint to);

}  // namespace trigd
