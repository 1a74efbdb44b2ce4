// A launch request (SPEC §5): its model, its one serialiser, and the size of the requests a
// schedule can produce against what Kafka takes. Pure: no I/O.
//
// A request is stored in two parts (docs/adr/0075): the text of the fields every attempt of a
// run shares (LaunchRequestTemplate: program, run_id, schedule, schedule_version,
// triggered_by), and the attempt's own fields as columns of the runs and outbox rows (attempt,
// heartbeat_timeout, launched_at; start_by derived from them). The relay places the attempt's
// fields at publish time (RenderLaunchRequest), so a retry changes columns and never edits text.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/time.h"
#include "core/envelope.h"
#include "model/schedule.h"

namespace trigd {

// A launch request as published, its attempt's fields included: two thirds of what trigd
// publishes at most (kMaxPublishedBytes, under the broker's and the producer's message limits).
// The third left over was room for a retry's copy rendered from jsonb; retries now render the
// same template (docs/adr/0075), and the limit stays as ADR 0057 states it to users.
inline constexpr size_t kMaxLaunchRequestBytes = kMaxPublishedBytes * 2 / 3;
// What a launch request keeps for its triggering events at least: a longer list is cut to fit
// the room left (TriggeredByWithin), down to the ids of the newest events.
inline constexpr size_t kMinTriggeredByBytes = 64 * 1024;
// The request's other fields (attempt, heartbeat_timeout, launched_at, run_id,
// schedule_version, the keys, triggered_by_truncated) at most, with room for more.
inline constexpr size_t kLaunchRequestOverheadBytes = 1024;

// How long a launched run may wait for a worker to start it before it counts as lost (Airflow's
// task_queued_timeout): a backlog or a worker rebalance is not a lost run.
inline constexpr Millis kQueuedTimeout = std::chrono::minutes(10);

// How long after its launch an attempt may still be started: past it the sweep already counts
// the attempt lost (a queued attempt is lost after the greater of heartbeat_timeout and the
// queued timeout of silence since its launch; SweepRuns). Requests carry launched_at plus this
// as `start_by` (docs/adr/0060).
inline Millis StartWindow(Millis heartbeat_timeout) { return std::max(heartbeat_timeout, kQueuedTimeout); }

// The fields of a request that every attempt of its run shares, as JSON text where they are
// JSON (program, triggered_by): a schedule's program is serialised once for all its launches.
struct LaunchRequest {
  std::string program_json;  // {"args":...,"name":...,"target":...} (ProgramJson)
  std::string run_id;
  std::string schedule;  // namespace/name
  int64_t schedule_version = 0;
  std::string triggered_by_json;  // a JSON array, as the job stored it (or cut to fit)
  bool triggered_by_truncated = false;
  // What the args placeholders rendered to, a JSON object by name (core/arg_template.h), when
  // the schedule's program.args is templated; empty (and absent from the request) otherwise.
  std::string placeholders_json;
  std::string lineage;  // the run's lineage (SPEC §10); left out of the request when empty
};

// The fields of one attempt, kept as columns (runs, outbox) and placed at publish time.
struct LaunchAttempt {
  int64_t attempt = 1;
  Millis heartbeat_timeout{0};
  TimePoint launched_at;
  // launched_at plus StartWindow(heartbeat_timeout): the last moment a worker may start it.
  TimePoint StartBy() const { return launched_at + StartWindow(heartbeat_timeout); }
};

// A program as a launch request carries it: {"args":...,"name":...,"target":...}.
std::string ProgramJson(const Program& program);

// The stored text of `r`: a JSON object of the shared fields in the order a request carries
// them, {[ "placeholders":{...},]"program":...,"run_id":...,"schedule":...,"schedule_version":N,
// "triggered_by":[...][,"triggered_by_truncated":true][,"lineage":"..."]}.
std::string LaunchRequestTemplate(const LaunchRequest& r);

// The request a worker receives: `a`'s fields first, then the template's, in one object:
// {"attempt":N,"heartbeat_timeout":"2m","launched_at":"...Z","start_by":"...Z","program":...}.
// `template_text` must be a JSON object (LaunchRequestTemplate's, or one rendered by
// PostgreSQL from jsonb); an empty object gives the attempt's fields alone.
std::string RenderLaunchRequest(std::string_view template_text, const LaunchAttempt& a);

// The bytes RenderLaunchRequest adds to a template at most.
inline constexpr size_t kLaunchAttemptFieldsBytes = 160;

// The bytes of a launch request of `schedule` before its triggering events: its program (name,
// args, target), its name and kLaunchRequestOverheadBytes.
size_t LaunchRequestFixedBytes(const Schedule& schedule);

// Whether every launch request of `schedule` fits: LaunchRequestFixedBytes plus
// kMinTriggeredByBytes within kMaxLaunchRequestBytes. kInvalid naming program.args, its size,
// the limit and the most it may take.
Status CheckLaunchRequestFits(const Schedule& schedule);

}  // namespace trigd
