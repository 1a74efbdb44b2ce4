// PostgreSQL adapter for the engine's loops. Only engine/store sees pqxx.
// One PgStore per thread: a pqxx connection is not thread-safe.
//
// Every method is one transaction. Decisions are made by core's pure logic (Accumulate,
// CheckPlanner, ComputeDueFireTimes) on rows locked by the transaction, and written back before
// it commits: the store only loads, locks and writes.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "common/time.h"
#include "common/topic_names.h"
#include "core/accumulator.h"
#include "model/event.h"
#include "model/partition.h"

namespace trigd {

namespace pg_internal {
class OpenTransaction;
}

// Parsed schedules by (id, version), so a document is parsed once per version.
// Bounded: cleared when it grows past its capacity. A handle: copies share one cache, which is
// thread-safe (PgStore::ShareScheduleCache: every connection of one engine uses one, so a
// storm's schedules are parsed once, not once per checker that happens to tick them).
class ScheduleCache {
 public:
  explicit ScheduleCache(size_t capacity = 200000);
  // The parsed schedule, or nullptr if the stored document does not parse (never expected:
  // documents are validated before they are stored).
  std::shared_ptr<const Schedule> Get(int64_t id, int version, const std::string& document);
  std::shared_ptr<const Schedule> Find(int64_t id, int version) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// The reverse index's feed: schedules whose keys changed since a change-log position.
struct ScheduleKeys {
  int64_t id = 0;
  bool active = false;  // false: removed from the index (deleted or suspended)
  std::vector<std::string> event_keys;
};
struct ScheduleChanges {
  int64_t last_seq = 0;
  std::vector<ScheduleKeys> schedules;
};

struct ConsumedPosition {
  std::string topic;
  int partition = 0;
  int64_t first_offset = 0;  // of this batch
  int64_t next_offset = 0;   // last offset + 1
};

// A worker's report about one of trigd's runs (a program event with a run id).
struct RunReport {
  std::string run_id;
  std::string program;  // the report's payload.program: must be the run's
  ProgramStatus status = ProgramStatus::kStarted;
  int64_t attempt = 0;  // 0: any attempt
  size_t event = 0;     // its index in the batch
  bool own =
      false;  // trigd's own report (a lost run's failed, a deleted schedule's killed), published after the run moved
};

struct DeadLetter {
  std::string key;
  std::string payload;  // JSON: reason, topic, partition, offset, original
};

struct IngestBatch {
  std::string group;
  std::vector<ConsumedPosition> positions;
  std::vector<Event> events;                       // well-formed events
  std::vector<std::vector<int64_t>> schedule_ids;  // per event: reached through the index
  std::vector<DeadLetter> dead;
  // Where each event came from (parallel to `events`), for a dead letter decided in the
  // transaction (a report naming another program than its run's); may be left empty.
  struct Source {
    std::string topic;
    int partition = 0;
    int64_t offset = 0;
  };
  std::vector<Source> sources;
  // Set for trigd's own ticks (model/event.h, OwnTickId), which their time trigger's row lock
  // makes unique: no de-duplication record is written or looked up for them.
  bool own_ticks = false;
  // The schedule change log's position (schedule_changes.seq) of the reverse index the events
  // were routed with; -1: not checked. A batch routed before a change that had committed when
  // the batch's transaction began is not applied (IngestResult::stale_index).
  int64_t index_seq = -1;
};

struct CheckerResult {
  int checked = 0;
  int launched = 0;
  int discarded = 0;
  int waiting = 0;
  int cancelled = 0;  // runs cancelled by max_concurrent_runs on_unmet cancel_oldest (reason overlap)
  std::map<std::string, int> lineage_outcomes;  // lineages ended by a discard: succeeded, failed
  // (constraint, result) -> count, for trigd_constraint_checks_total.
  std::map<std::pair<std::string, std::string>, int> checks;
};

struct IngestResult {
  bool fenced = false;  // another consumer moved a position first: nothing applied; rewind
  // The batch was routed with a reverse index older than the change log (IngestBatch::index_seq):
  // nothing applied; refresh the index, rewind and route the events again.
  bool stale_index = false;
  std::vector<EventOutcome> outcome;  // per event; kDead: see dead_reasons
  // Reasons of the events this transaction sent to the dead-letter topic (outcome kDead): a
  // run's report that names another program than the run's.
  std::vector<DeadLetterReason> dead_reasons;
  int jobs_opened = 0;
  int jobs_ready = 0;
  int jobs_discarded = 0;
  std::map<std::string, int> run_outcomes;      // succeeded, failed, killed
  std::map<std::string, int> lineage_outcomes;  // lineages that ended: succeeded, failed
  int published = 0;                            // upstream_failed events written to the outbox
  // The checker step run inside the same transaction for the jobs this batch made ready (and
  // the waiting jobs its ended runs woke): see PgStore::ApplyBatch.
  CheckerResult checker;
};

struct TickResult {
  int produced = 0;
  int skipped = 0;
  IngestResult applied;  // the ticks applied to their schedules' jobs
};

// One message to publish; the messages of a bundle row share its id.
struct OutboxRow {
  int64_t id = 0;
  std::string topic;
  std::string key;
  std::string payload;
};

// What one claim of the outbox took, in id order, and whether it took as many rows as it may
// (more may be waiting: the relay claims again at once instead of waiting for a wake).
struct OutboxClaim {
  std::vector<OutboxRow> messages;
  bool full = false;
};

// A run that ended (or was given up): its schedule's and group's slot is freed.
struct EndedRun {
  int64_t schedule_id = 0;
  std::optional<std::string> group;
};

struct SweepResult {
  int lost = 0;       // runs whose heartbeat timed out
  int retried = 0;    // launch requests re-sent for a next attempt
  int failed = 0;     // lost runs out of attempts: failed, with a `failed` program event
  int killed = 0;     // runs waiting for a retry whose schedule was deleted
  int timed_out = 0;  // runs past their schedule's run_timeout (retried or failed, reason timeout)
};

class PgStore {
 public:
  static Result<std::unique_ptr<PgStore>> Connect(const std::string& pg, const std::string& topic_prefix);
  ~PgStore();

  // At most this many due jobs are decided by an ingest or tick transaction's fast path.
  static constexpr size_t kFastPathLimit = 5000;

  // The fast path of ApplyBatch and TickTimeTriggers (jobs they make ready are checked, and
  // launched if they can, in the same transaction). On by default; off leaves every ready job
  // to CheckDueJobs (tests of the checker step on its own).
  void SetFastPath(bool on) { fast_path_ = on; }
  // Parsed schedules from `cache` (shared with the stores given the same), instead of this
  // store's own. Only for stores of one database: entries are keyed by schedule id and version.
  void ShareScheduleCache(const ScheduleCache& cache) { cache_ = cache; }
  // With several checker loops in a process: this one's CheckDueJobs claims only the jobs of
  // schedules with schedule_id % count == index, so two checkers never wait for each other's
  // run counters (a job of a concurrency group may still wait for the group's). Each shard is
  // claimed in priority order.
  void SetCheckerShard(int index, int count) {
    shard_index_ = index;
    shard_count_ = count;
  }
  // The consumer group whose positions in the program topic tell SweepRuns how far trigd has
  // read workers' reports: a run is lost after heartbeat_timeout of silence counted up to the
  // moment every partition of the topic was last read to its end (MarkCaughtUp), not up to
  // now. Unset (tests, tools): up to now.
  void SetConsumerGroup(std::string group) { consumer_group_ = std::move(group); }

  // How long a generic plan lives before RenewPlans drops it (1 s; tests set it).
  void SetPlanLifetime(std::chrono::milliseconds lifetime) { plan_lifetime_ = lifetime; }
  // Changes after `after_seq` (0: every active schedule, for start-up).
  Result<ScheduleChanges> LoadScheduleChanges(int64_t after_seq);

  // Stored positions for (topic, partition) pairs of `group`.
  Result<std::vector<std::optional<int64_t>>> LoadOffsets(const std::string& group,
                                                          const std::vector<std::pair<std::string, int>>& parts);

  // Ingestion, one transaction: a compare-and-set of the positions (fencing a consumer that
  // lost a partition), de-duplication by event id, the open jobs of the reached schedules
  // locked and accumulated (core/accumulator.h), run reports, dead letters and published
  // events into the outbox; then the checker step (CheckDueJobs) for the due jobs of the
  // schedules and groups whose jobs became ready or whose runs ended, so a job that can
  // launch at once is launched by this commit. kAborted: a race with another instance;
  // rerun it as is.
  Result<IngestResult> ApplyBatch(const IngestBatch& batch);

  // The constraint checker: claims up to `limit` due jobs (highest priority first, then
  // readiness; SKIP LOCKED so instances share them), locks the run counters of their schedules
  // and groups, decides with core's CheckPlanner, and writes launches (run + outbox), waits and
  // discards.
  Result<CheckerResult> CheckDueJobs(size_t limit);

  // Relay: unsent outbox rows, locked (SKIP LOCKED) until CompleteOutbox: up to `limit` single
  // messages and a few bundles (outbox_bundle.h).
  Result<OutboxClaim> ClaimOutbox(size_t limit);
  // Deletes the confirmed rows and ends the claim. Returns, per launch request among them,
  // seconds from its job's trigger completing to the claim (for the latency histogram). The jobs
  // were marked launched when decided: the outbox row is what guaranteed the publication.
  Result<std::vector<double>> CompleteOutbox(const std::vector<int64_t>& confirmed);
  // Within the relay's claim, before CompleteOutbox: launch requests the broker refused for
  // good (outbox ids) are withdrawn and their runs end `failed`, reason `unpublishable`,
  // announced on the program topic (downstream triggers see the failure) and the control topic,
  // their slots freed. Not retried: the same request would be refused again. Returns how many
  // runs ended (a request whose run moved on meanwhile is withdrawn without ending it).
  Result<int> FailUnpublishable(const std::vector<int64_t>& refused);

  // Lost runs (no heartbeat within heartbeat_timeout): retried with capped exponential
  // backoff while attempts remain, else failed with a published `failed` event (reason lost).
  // Runs whose backoff passed get their next attempt's launch request (same run id).
  Result<SweepResult> SweepRuns();

  // Records that `group` has committed in PostgreSQL everything produced to these partitions
  // until `age` ago: each partition whose committed position has reached its range's end gets
  // caught_up_at = now() - age. An empty partition (begin == end) with no position yet gets
  // one at its end, so it counts; one with messages and no position is left alone (a
  // position past messages never read would skip them).
  Status MarkCaughtUp(const std::string& group, const std::vector<PartitionRange>& ranges, Millis age);

  // The due time ticks (SPEC §5 "Time triggers"): applied to their schedules' jobs in this
  // transaction (as ApplyBatch would, de-duplicated by the tick's id, fast path included)
  // and written to the outbox for trigd.events.time, where ingestion sees them as duplicates.
  Result<TickResult> TickTimeTriggers(size_t limit);

  // EXPLAIN of the prepared statement `name` (kPrepared) with `params` NULL arguments, as this
  // connection would run it now (its cached generic plan): for tests of plan renewal.
  Result<std::string> ExplainPrepared(const std::string& name, int params);

  // Job counts by state (open and waiting states only) for the trigd_jobs gauge, and as
  // "pending_launch" the launched jobs whose request the relay has not published yet.
  Result<std::map<std::string, int64_t>> CountJobs();

  // What schedule changes made by trigctl discarded (jobs) and killed (runs, withdrawn by a
  // delete) since the last call by any instance: each change's counts are taken once. Zero
  // when a change is in progress (the change log is locked; taken at a later call).
  struct ChangeCounts {
    int64_t jobs_discarded = 0;
    int64_t runs_killed = 0;
  };
  Result<ChangeCounts> TakeChangeCounts();
  // trigctl's operator actions since the last take (store/operate.h TakeOperatorActions).
  Result<std::map<std::string, int64_t>> TakeOperatorActions();

  // Housekeeping: drops de-duplication ids older than `keep` and old change-log rows.
  Status Prune(Millis keep);

 private:
  struct Conn;
  struct TxContext;  // the open transaction and what the steps below share
  // Private structs of the steps below (store/pg_store_parts.h).
  struct FreshJob;
  struct CheckFilter;
  class CheckStep;   // CheckJobs, phase by phase (pg_checker.cc)
  class IngestStep;  // ApplyEvents, phase by phase (pg_ingest.cc)
  struct Relevant;
  static Relevant FindRelevant(const IngestBatch& batch, IngestResult& result);
  // ApplyBatch without isolating a failing schedule: `*data_error` set when it failed in a way
  // no rerun fixes (pg_internal::IsDataError).
  Result<IngestResult> ApplyBatchOnce(const IngestBatch& batch, std::string* data_error);
  // One ApplyBatch transaction; `seen_before` set (and nothing written) when the plain insert of
  // the event ids met an id recorded before. kRollback runs every statement and then rolls back
  // (a probe of ApplyIsolating).
  enum class TxEnd { kCommit, kRollback };
  Result<IngestResult> ApplyBatchTx(const IngestBatch& batch, bool on_conflict, bool& seen_before,
                                    TxEnd end = TxEnd::kCommit, std::string* data_error = nullptr);
  // A batch that failed with `error` (a data error) applied without the (event, schedule) pairs
  // that fail, each dead-lettered with reason schedule_failed (store/poison.cc).
  struct Isolation;
  Result<IngestResult> ApplyIsolating(const IngestBatch& batch, const std::string& error);
  Status AddPairs(Isolation& iso, size_t from, size_t to, const std::string* fails_with);
  // Schedules that failed a batch lately: their pairs are tried last, so a batch that reaches
  // them again is isolated in fewer probes. Cleared when it grows past kMaxSuspects.
  std::set<int64_t> poison_suspects_;
  static constexpr size_t kMaxSuspects = 1000;
  void ApplyEvents(const TxContext& ctx, const IngestBatch& batch, Relevant& relevant, IngestResult& result);
  bool RetryFailedAttempt(const TxContext& ctx, const RunReport& rep);
  // Producer ticks that repeat a fire time trigd produced: their inputs' indexes (see the .cc).
  std::set<size_t> CheckProducerTicks(const TxContext& ctx, const std::vector<AccumulateInput>& inputs);
  CheckerResult CheckJobs(const TxContext& ctx, size_t limit, const CheckFilter* filter, bool& claim_backlog);
  PgStore(std::unique_ptr<Conn> c, std::string topic_prefix);
  std::unique_ptr<Conn> conn_;
  // The relay's claim: its open transaction, and its launch requests' ages by id (id order).
  std::unique_ptr<pg_internal::OpenTransaction> claim_;
  std::vector<std::pair<int64_t, double>> claim_ages_;
  std::chrono::steady_clock::time_point claim_started_;  // when the claim's transaction began
  TopicNames topics_;
  ScheduleCache cache_;
  // Each schedule's program as its launch requests carry it (ProgramJson), by schedule id: the
  // version it was serialised at and the text. A schedule version's program never changes, so
  // it is serialised once per connection, not once per check (a storm launches each schedule
  // once per check). Cleared when it holds kProgramJsonEntries.
  std::unordered_map<int64_t, std::pair<int, std::string>> program_json_;
  static constexpr size_t kProgramJsonEntries = 200000;
  // The last claim of due jobs was full: a backlog (e.g. a storm of schedules due at once).
  bool claim_backlog_ = false;
  bool fast_path_ = true;
  // Batches left to record their event ids with ON CONFLICT DO NOTHING (see ApplyBatch).
  int on_conflict_batches_ = 0;
  static constexpr int kOnConflictBatches = 100;
  int shard_index_ = 0, shard_count_ = 1;
  std::string consumer_group_;  // SetConsumerGroup
  // Drops this connection's cached plans when they are plan_lifetime_ old (see Connect); called
  // before the transactions that run the prepared statements.
  void RenewPlans();
  std::chrono::milliseconds plan_lifetime_ = std::chrono::seconds(1);
  std::chrono::steady_clock::time_point plans_made_{};
};

}  // namespace trigd
