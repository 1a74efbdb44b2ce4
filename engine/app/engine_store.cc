// PgStore behind EngineStore: each call forwarded as is.
#include "app/engine_store.h"

namespace trigd {
namespace {

class PgEngineStore final : public EngineStore {
 public:
  explicit PgEngineStore(std::unique_ptr<PgStore> pg) : pg_(std::move(pg)) {}

  Result<ScheduleChanges> LoadScheduleChanges(int64_t after_seq) override {
    return pg_->LoadScheduleChanges(after_seq);
  }
  Result<std::vector<std::optional<int64_t>>> LoadOffsets(
      const std::string& group, const std::vector<std::pair<std::string, int>>& parts) override {
    return pg_->LoadOffsets(group, parts);
  }
  Result<IngestResult> ApplyBatch(const IngestBatch& batch) override { return pg_->ApplyBatch(batch); }
  Result<CheckerResult> CheckDueJobs(size_t limit) override { return pg_->CheckDueJobs(limit); }
  Result<TickResult> TickTimeTriggers(size_t limit) override { return pg_->TickTimeTriggers(limit); }
  Result<SweepResult> SweepRuns() override { return pg_->SweepRuns(); }
  Status MarkCaughtUp(const std::string& group, const std::vector<PartitionRange>& ranges, Millis age) override {
    return pg_->MarkCaughtUp(group, ranges, age);
  }
  Result<std::map<std::string, int64_t>> CountJobs() override { return pg_->CountJobs(); }
  Result<PgStore::ChangeCounts> TakeChangeCounts() override { return pg_->TakeChangeCounts(); }
  Result<std::map<std::string, int64_t>> TakeOperatorActions() override { return pg_->TakeOperatorActions(); }
  Status Prune(Millis keep) override { return pg_->Prune(keep); }
  Result<OutboxClaim> ClaimOutbox(size_t limit) override { return pg_->ClaimOutbox(limit); }
  Result<std::vector<double>> CompleteOutbox(const std::vector<int64_t>& confirmed) override {
    return pg_->CompleteOutbox(confirmed);
  }
  Result<int> FailUnpublishable(const std::vector<int64_t>& refused) override {
    return pg_->FailUnpublishable(refused);
  }

 private:
  std::unique_ptr<PgStore> pg_;
};

}  // namespace

EngineStoreFactory PgEngineStoreFactory(std::string pg, std::string topic_prefix) {
  // One cache of parsed schedules for every connection of the engine (checkers, ingest, relay).
  return [pg = std::move(pg), prefix = std::move(topic_prefix),
          cache = ScheduleCache()](const EngineStoreOptions& o) -> Result<std::unique_ptr<EngineStore>> {
    auto s = PgStore::Connect(pg, prefix);
    if (!s.ok()) return s.status();
    (*s)->ShareScheduleCache(cache);
    (*s)->SetFastPath(o.fast_path);
    (*s)->SetCheckerShard(o.shard, o.shards);
    (*s)->SetConsumerGroup(o.group);
    return std::unique_ptr<EngineStore>(std::make_unique<PgEngineStore>(std::move(*s)));
  };
}

}  // namespace trigd
