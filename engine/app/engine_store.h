// EngineStore: the engine loops' view of the store (app/engine_loops.h), beside its user. PgStore
// is the one production implementation (PgEngineStore, app/engine_store.cc); the loop tests hand
// the loops a fake with fault injection (tests/app_loops/fake_engine_store.h). The interface lives in
// app, not store, so store stays below app (docs/adr/0085-engine-store-interface.md).
// Adding a call a loop needs: add it here (pure virtual), forward it in PgEngineStore, and give
// the fake a default (docs/architecture.md, "EngineStore").
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "store/pg_store.h"

namespace trigd {

class EngineStore {
 public:
  virtual ~EngineStore() = default;

  // Ingest (PgStore's comments say what each does and returns).
  virtual Result<ScheduleChanges> LoadScheduleChanges(int64_t after_seq) = 0;
  virtual Result<std::vector<std::optional<int64_t>>> LoadOffsets(
      const std::string& group, const std::vector<std::pair<std::string, int>>& parts) = 0;
  virtual Result<IngestResult> ApplyBatch(const IngestBatch& batch) = 0;

  // Checker.
  virtual Result<CheckerResult> CheckDueJobs(size_t limit) = 0;
  virtual Result<TickResult> TickTimeTriggers(size_t limit) = 0;
  virtual Result<SweepResult> SweepRuns() = 0;
  virtual Status MarkCaughtUp(const std::string& group, const std::vector<PartitionRange>& ranges, Millis age) = 0;
  virtual Result<std::map<std::string, int64_t>> CountJobs() = 0;
  virtual Result<PgStore::ChangeCounts> TakeChangeCounts() = 0;
  virtual Result<std::map<std::string, int64_t>> TakeOperatorActions() = 0;
  virtual Status Prune(Millis keep) = 0;

  // Relay.
  virtual Result<OutboxClaim> ClaimOutbox(size_t limit) = 0;
  virtual Result<std::vector<double>> CompleteOutbox(const std::vector<int64_t>& confirmed) = 0;
  virtual Result<int> FailUnpublishable(const std::vector<int64_t>& refused) = 0;
};

// What a loop's connection is set up with (PgStore's Set* calls).
struct EngineStoreOptions {
  bool fast_path = true;
  int shard = 0, shards = 1;  // the checker's share (PgStore::SetCheckerShard)
  std::string group;          // the consumer group (PgStore::SetConsumerGroup)
};

// Opens one connection for one loop; kUnavailable while the store cannot be reached (the loop
// retries: StoreHandle). Called from the loops' threads, concurrently.
using EngineStoreFactory = std::function<Result<std::unique_ptr<EngineStore>>(const EngineStoreOptions&)>;

// PostgreSQL: PgStore::Connect(pg, topic_prefix) behind EngineStore.
EngineStoreFactory PgEngineStoreFactory(std::string pg, std::string topic_prefix);

}  // namespace trigd
