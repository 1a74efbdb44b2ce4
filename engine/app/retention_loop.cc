// The retention loop: ended jobs and runs older than TRIGD_RETENTION deleted.
#include "app/engine_loops.h"

namespace trigd::engine_internal {

using nlohmann::json;

// History retention (TRIGD_RETENTION): a pass 10 s after start and then every hour, one
// transaction of 2,000 jobs at a time with a pause between them, so the hot paths keep their
// share of PostgreSQL. Every instance prunes; two passes at once delete each row once.
void RetentionLoop(Shared& sh) {
  constexpr auto kEvery = std::chrono::hours(1);
  auto next = Clock::now() + std::chrono::seconds(10);
  while (!sh.Stopping()) {
    if (Clock::now() < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    next = Clock::now() + kEvery;
    auto pruner = HistoryPruner::Start(sh.config.pg, sh.config.retention);
    if (!pruner.ok()) {
      Log("retention: " + pruner.status().ToString());
      next = Clock::now() + std::chrono::minutes(1);
      continue;
    }
    PruneTotals total;
    while (!(*pruner)->done() && !sh.Stopping()) {
      auto t = (*pruner)->Step();
      if (!t.ok()) {
        if (t.status().code() == StatusCode::kAborted) sh.metrics.TransactionRetries().Increment();
        Log("retention: " + t.status().ToString());
        next = Clock::now() + std::chrono::minutes(1);
        break;
      }
      total.jobs += t->jobs;
      total.runs += t->runs;
      total.audit += t->audit;
      sh.metrics.HistoryPruned("jobs").Increment(static_cast<double>(t->jobs));
      sh.metrics.HistoryPruned("runs").Increment(static_cast<double>(t->runs));
      sh.metrics.HistoryPruned("audit").Increment(static_cast<double>(t->audit));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (total.jobs > 0 || total.runs > 0 || total.audit > 0) {
      Log("retention: deleted " + std::to_string(total.jobs) + " jobs and " + std::to_string(total.runs) +
          " runs that finished before " + FormatTime((*pruner)->cutoff()) + ", and " + std::to_string(total.audit) +
          " audit rows of changes before it");
    }
  }
}

}  // namespace trigd::engine_internal
