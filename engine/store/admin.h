// PostgreSQL operations for trigctl: schedule management and read-only inspection. Each call
// opens its own connection and is one transaction.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "common/time.h"
#include "core/constraint_checker.h"
#include "model/schedule.h"
#include "store/audit.h"

namespace trigd {

struct ApplyOutcome {
  std::string name;
  int version = 0;
  bool changed = false;
};

// Applies every schedule in one transaction (all or nothing). A changed document bumps the
// version, discards the schedule's open and waiting jobs (counting starts afresh) and replaces
// its event keys; an unchanged one keeps its version and changes nothing. Each new or changed
// schedule gets an audit row naming `actor` (store/audit.h): its version, the one before and the
// paths of the fields that changed.
Result<std::vector<ApplyOutcome>> ApplySchedules(const std::string& pg, const std::vector<Schedule>& schedules,
                                                 const Actor& actor);

enum class ScheduleAction { kDelete, kSuspend, kResume };
// One transaction. Delete and suspend discard the schedule's open and waiting jobs; delete
// also withdraws launch requests not yet published, so no job of it launches afterwards, and
// kills its runs not yet started or waiting for a retry, each announced by a `killed` event
// (reason schedule_deleted) on <topic_prefix>events.program.
// Resume starts afresh (time triggers count from now). kNotFound for an unknown name.
// Suspending a suspended schedule or resuming an active one changes nothing (its open job and
// its time trigger's phase stay): `*changed` (if given) says whether anything changed. A change
// gets an audit row naming `actor` (store/audit.h); a no-op none.
Status ChangeSchedule(const std::string& pg, const std::string& topic_prefix, const std::string& name,
                      ScheduleAction action, const Actor& actor, bool* changed = nullptr);

// Read-only queries: rows as JSON objects (column -> value).
//
// The lists read at most `limit` rows through an index, newest first, however long the history
// (kept forever unless a retention prunes it, store/retention.h): jobs by id, runs by run id (UUIDv7: the time of the
// first launch), a schedule's by jobs_by_schedule and runs_by_schedule_time. `schedule` is a name: its jobs and runs
// are those of every schedule id it has had (a name deleted and applied again is a new row, schema/013). kNotFound when
// no schedule of that name exists or ever existed.
Result<nlohmann::json> QueryJobs(const std::string& pg, const std::optional<std::string>& state,
                                 const std::optional<std::string>& schedule, size_t limit);
Result<nlohmann::json> QueryJob(const std::string& pg, int64_t id);
Result<nlohmann::json> QueryRuns(const std::string& pg, const std::optional<std::string>& schedule, size_t limit);
Result<nlohmann::json> QueryRun(const std::string& pg, const std::string& run_id);
// By name; the first `limit` of them (all without one).
Result<nlohmann::json> QuerySchedules(const std::string& pg, std::optional<size_t> limit = std::nullopt);

// The statements behind the lists, for tests that check their plans (EXPLAIN them with the same
// parameters). `schedule_ids`: a name's ids, as a PostgreSQL array ("{3,17}"); none: those of
// every schedule.
struct ListStatement {
  std::string sql;
  std::vector<std::optional<std::string>> params;
};
ListStatement JobsListStatement(const std::optional<std::string>& state, const std::optional<std::string>& schedule_ids,
                                size_t limit);
ListStatement RunsListStatement(const std::optional<std::string>& schedule_ids, size_t limit);
ListStatement SchedulesListStatement(std::optional<size_t> limit);

Result<nlohmann::json> QuerySchedule(const std::string& pg, const std::string& name);
// The documents a schedule name has had, newest first, at most `limit`:
// [{version, applied_at, document}]. kNotFound when the name has no stored version.
Result<nlohmann::json> QueryScheduleVersions(const std::string& pg, const std::string& name, size_t limit);
// Every schedule, by name, with what the dependency graph shows of it:
// [{name, state, document, open_jobs, last_run_state}] (last_run_state null before a first run).
Result<nlohmann::json> QueryScheduleGraphRows(const std::string& pg);
// Stored consumer positions: [{group, topic, partition, next_offset}].
Result<nlohmann::json> QueryOffsets(const std::string& pg);

// Sets `group`'s consumed positions (topic, partition, next offset), for `trigctl positions
// resolve --skip` while no trigd runs.
Status SetOffsets(const std::string& pg, const std::string& group,
                  const std::vector<std::tuple<std::string, int, int64_t>>& offsets);

// Everything `trigctl jobs why` needs about one job, read in one snapshot.
struct JobInspection {
  nlohmann::json job;                // the job row
  std::optional<Schedule> schedule;  // its schedule if it still exists at the job's version
  std::string schedule_state;        // active, suspended, deleted, or "updated (vN)"
  RunFacts facts;                    // as the checker would see them now
  TimePoint now;                     // the database's clock
  // The schedule's time trigger (table time_triggers), when `schedule` is set and has a time
  // leaf: the leaf it ticks (depth-first number, TriggerLeaves) and its next fire time, unset
  // when none will come (stored as 'infinity': a suspended schedule, a cron with no more fire
  // times). Read in the same transaction as the job.
  struct TimeTriggerRow {
    int leaf = 0;
    std::optional<TimePoint> next_fire_at;
  };
  std::optional<TimeTriggerRow> time_trigger;
};
Result<JobInspection> InspectJob(const std::string& pg, int64_t id);

}  // namespace trigd
