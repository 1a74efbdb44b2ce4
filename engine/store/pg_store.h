// PostgreSQL adapter for the engine's hot path. Only this module sees pqxx.
// One PgStore per thread (a pqxx connection is not thread-safe).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace trigd {

struct ScheduleRow {
  int64_t id = 0;
  std::string name;
  int version = 0;
  nlohmann::json document;
};

// An event that reached at least one schedule, with the schedules it reached.
struct MatchedEvent {
  std::string id;
  std::string type;
  nlohmann::json payload;
  std::vector<const ScheduleRow*> schedules;
};

struct ConsumedPosition {
  std::string topic;
  int partition = 0;
  int64_t first_offset = 0;  // of this batch
  int64_t next_offset = 0;   // last offset + 1
};

struct OutboxRow {
  int64_t id = 0;
  std::string topic;
  std::string key;
  std::string payload;
  std::optional<int64_t> job_id;
};

// A worker's report about one of trigd's runs.
struct RunReport {
  std::string run_id;
  std::string status;  // started, heartbeat, succeeded, failed, killed
};

struct SweepResult {
  int lost = 0;     // runs whose heartbeat timed out
  int retried = 0;  // launch requests re-sent for a next attempt
  int failed = 0;   // lost runs out of attempts: failed, with a `failed` program event
};

struct BatchResult {
  int jobs_launched = 0;
  int duplicates = 0;
  std::vector<bool> duplicate;  // per event, in the order given
};

class PgStore {
 public:
  static Result<std::unique_ptr<PgStore>> Connect(const std::string& pg);
  ~PgStore();

  // event key -> schedules, for every active schedule.
  Result<std::unordered_map<std::string, std::vector<ScheduleRow>>> LoadScheduleIndex();

  // Stored positions for (topic, partition) pairs of `group`.
  Result<std::vector<std::optional<int64_t>>> LoadOffsets(
      const std::string& group, const std::vector<std::pair<std::string, int>>& parts);

  // One transaction: de-duplicates events by id, opens a job per (event, schedule), creates
  // its run and launch request (outbox), writes dead letters to the outbox, and stores the
  // consumed positions. kAborted when another consumer moved a position first (the caller
  // rewinds and re-reads); nothing is then applied.
  Result<BatchResult> ApplyBatch(const std::string& group, const std::string& topic_prefix,
                                 const std::vector<MatchedEvent>& events,
                                 const std::vector<std::pair<std::string, std::string>>& dead,
                                 const std::vector<ConsumedPosition>& positions,
                                 const std::vector<RunReport>& reports = {});

  // Relay: unsent outbox rows, locked (SKIP LOCKED) until Complete/Release.
  Result<std::vector<OutboxRow>> ClaimOutbox(size_t limit);
  // Deletes the confirmed rows, marks their jobs launched, and ends the claim.
  Status CompleteOutbox(const std::vector<int64_t>& confirmed, const std::vector<int64_t>& job_ids);

  // One transaction: runs silent past their heartbeat timeout are lost; a lost run with attempts
  // left waits its backoff (retry_wait), else it fails and a `failed` program event (reason
  // "lost") goes to the outbox. Runs whose backoff has passed get their next attempt's launch
  // request (same run id) in the outbox. SKIP LOCKED: several trigd instances share the work.
  Result<SweepResult> SweepRuns(const std::string& topic_prefix);

 private:
  struct Conn;
  struct Claim;
  explicit PgStore(std::unique_ptr<Conn> c);
  std::unique_ptr<Conn> conn_;
  std::unique_ptr<Claim> claim_;
};

}  // namespace trigd

namespace trigd {

struct ScheduleDoc {
  std::string name;  // namespace/name
  nlohmann::json document;
  std::vector<std::string> event_keys;  // one per leaf trigger
};

struct ApplyOutcome {
  std::string name;
  int version = 0;
  bool changed = false;
};

// Applies every document in one transaction: a changed document bumps the version and
// discards the schedule's open and waiting jobs; an unchanged one keeps its version.
Result<std::vector<ApplyOutcome>> ApplySchedules(const std::string& pg,
                                                 const std::vector<ScheduleDoc>& docs);

}  // namespace trigd

namespace trigd {

// Read-only queries for trigctl: each returns rows as JSON objects (column -> value).
// `filters` are column = value pairs over a fixed whitelist; kInvalid for others.
Result<nlohmann::json> QueryJobs(const std::string& pg, const std::optional<std::string>& state,
                                 const std::optional<std::string>& schedule, size_t limit);
Result<nlohmann::json> QueryJob(const std::string& pg, int64_t id);
Result<nlohmann::json> QueryRuns(const std::string& pg, size_t limit);
Result<nlohmann::json> QueryRun(const std::string& pg, const std::string& run_id);

}  // namespace trigd

namespace trigd {

Result<nlohmann::json> QuerySchedules(const std::string& pg);
Result<nlohmann::json> QuerySchedule(const std::string& pg, const std::string& name);

enum class ScheduleAction { kDelete, kSuspend, kResume };
// One transaction. Delete and suspend discard the schedule's open and waiting jobs (delete
// also removes its triggers, so no job of it launches afterwards); resume starts afresh.
// kNotFound when no schedule has that name.
Status ChangeSchedule(const std::string& pg, const std::string& name, ScheduleAction action);

}  // namespace trigd
