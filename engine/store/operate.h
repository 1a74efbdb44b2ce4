// The operator's verbs on PostgreSQL (SPEC §9): run now, cancel, rerun, backfill progress, next
// fire times, apply's dry run. Each returns its result as a struct with ToJson(), separate from
// its printing (trigctl prints it; the HTTP API serves the same JSON). Each call opens its own
// connection and is one transaction. The decisions are core's (core/operate.h,
// core/run_lifecycle.h); this executes them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "common/status.h"
#include "common/time.h"
#include "core/operate.h"
#include "model/schedule.h"
#include "store/audit.h"

namespace trigd {

// `schedules next`: the next fire times of the schedule's time trigger, in UTC and in the
// trigger's time zone. kNotFound for an unknown schedule; kInvalid for one without a time trigger.
struct NextFireTimes {
  std::string schedule;
  std::string state;  // active, suspended
  bool active_now = true;
  std::string timezone;
  std::vector<TimePoint> times;
  nlohmann::json ToJson() const;
};
Result<NextFireTimes> QueryNextFireTimes(const std::string& pg, const std::string& name, size_t count);

// `schedules apply --dry-run`: what applying would do, writing nothing.
struct DryRunEntry {
  std::string schedule;
  std::string outcome;  // new, changed, unchanged
  int version = 0;      // the version it would have
  std::vector<FieldChange> diff;
  int64_t jobs_discarded = 0;  // open or waiting jobs the change would discard
  nlohmann::json ToJson() const;
};
Result<std::vector<DryRunEntry>> DryRunApply(const std::string& pg, const std::vector<Schedule>& schedules);

// Every verb below that changes something writes its audit row (store/audit.h) in its
// transaction, naming `actor`.

// `runs start` and `runs rerun`: the job opened (trigger complete), and its run once launched.
struct StartedJob {
  int64_t job_id = 0;
  std::string schedule;
  std::optional<std::string> run_id;
  std::string state;  // the job's state when last read
  std::optional<std::string> rerun_of;
  nlohmann::json ToJson() const;
};
// A job of schedule `name` whose trigger counts as complete, with one triggered_by entry of type
// manual (payload: {"args": override} when given), waiting on its constraints unless `force`.
// kNotFound: no schedule; kFailedPrecondition: the schedule is suspended or outside its active
// period.
Result<StartedJob> StartRun(const std::string& pg, const std::string& name, const nlohmann::json& args, bool force,
                            const Actor& actor);
// A new job of the run's schedule with the same triggered_by (and args), under the schedule's
// current version. kNotFound: no run, or its schedule is gone.
Result<StartedJob> RerunRun(const std::string& pg, const std::string& run_id, bool force, const Actor& actor);
// The job's state and its run, if launched.
Result<StartedJob> QueryStartedJob(const std::string& pg, int64_t job_id);

// `runs cancel`: the run ends killed (reason cancelled), its slot freed, a `killed` program event
// and a control message written to the outbox in the same transaction (published at once by
// trigd's relay, and after a restart if trigd stops between the two). kFailedPrecondition for a
// finished run (the message names its state); kNotFound for none.
struct CancelledRun {
  std::string run_id;
  std::string schedule;
  std::string previous_state;
  int64_t attempt = 0;
  std::string reason;
  nlohmann::json ToJson() const;
};
Result<CancelledRun> CancelRun(const std::string& pg, const std::string& topic_prefix, const std::string& run_id,
                               const std::string& why, const Actor& actor);

// `schedules backfill`: the fire times of [from, to) and how far they have come. kInvalid for a
// schedule without a time trigger or a range of more than `max` fire times.
struct BackfillPlan {
  std::string schedule;
  std::vector<TimePoint> fire_times;
  int64_t already_done = 0;  // decided before: produced by trigd or ticked
  int64_t launched = 0;      // whose job has launched
  int64_t waiting = 0;       // whose job waits on its constraints
  nlohmann::json ToJson() const;
};
Result<BackfillPlan> PlanBackfill(const std::string& pg, const std::string& name, TimePoint from, TimePoint to,
                                  size_t max);

// Records a backfill once its ticks are delivered, in one transaction: `ticks` counted for
// trigd's counters, and its audit row (the fire times' range [from, to), how many were sent).
// The ticks are on Kafka already: an error here says they were sent but not recorded.
Status RecordBackfill(const std::string& pg, const std::string& schedule, TimePoint from, TimePoint to, int64_t ticks,
                      const Actor& actor);

// The operator actions recorded since the last take, by action (start, rerun, cancel,
// backfill_tick), deleted as they are taken: each is counted by one trigd instance once.
Result<std::map<std::string, int64_t>> TakeOperatorActions(pqxx::connection& c);

}  // namespace trigd
