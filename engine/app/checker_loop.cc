// The checker loop: due jobs decided (PgStore::CheckDueJobs), time triggers ticked, runs swept.
#include "app/engine_loops.h"

namespace trigd::engine_internal {

using nlohmann::json;

// The control loop: constraint checks, lost runs and retries, time ticks, gauges.
// `index` 0 also sweeps runs, sets the job gauges and prunes; every checker claims due jobs
// and ticks (both SKIP LOCKED, so checkers, in one process or several, never take the same).
void CheckerLoop(Shared& sh, int index) {
  const std::string name = index == 0 ? "checker" : "checker-" + std::to_string(index + 1);
  StoreHandle store(sh.config, name.c_str(), index, sh.config.checkers);
  constexpr auto kTickInterval = std::chrono::milliseconds(100), kSweepInterval = std::chrono::milliseconds(500);
  auto last_tick = Clock::time_point{}, last_sweep = Clock::time_point{}, last_gauge = Clock::time_point{},
       last_prune = Clock::now();
  // As many ticks per transaction as its fast path launches.
  constexpr size_t kTickBatch = PgStore::kFastPathLimit;
  bool ticks_pending = false;
  while (!sh.Stopping()) {
    PgStore* pg = store.Get();
    if (!pg) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    bool more = false;
    auto r = pg->CheckDueJobs(1000);
    if (!r.ok()) {
      if (r.status().code() == StatusCode::kAborted) sh.metrics.TransactionRetries().Increment();
      store.Failed(r.status());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    RecordChecks(sh, *r);
    more = r->checked == 1000;
    // Time triggers are looked at every kTickInterval, so a fire time is noticed within that
    // (at the sweep's 500 ms period a fire time would be on average a quarter of a second late,
    // and a storm start that much later); a look that finds nothing due is one statement.
    const bool tick_due = Clock::now() - last_tick >= kTickInterval;
    if (tick_due) last_tick = Clock::now();
    const bool sweep_due = index == 0 && Clock::now() - last_sweep >= kSweepInterval;
    if (sweep_due) last_sweep = Clock::now();
    // A full batch of ticks means more are due now (a storm of schedules due in the same
    // second): produce the next batch at once instead of at the next look.
    if (tick_due || ticks_pending) {
      auto t = pg->TickTimeTriggers(kTickBatch);
      if (t.ok()) {
        if (t->produced > 0) sh.relay_wake.Wake();
        if (t->skipped > 0) sh.metrics.FireTimesSkipped().Increment(static_cast<double>(t->skipped));
        RecordApplied(sh, t->applied);
        for (size_t i = 0; i < t->applied.outcome.size(); ++i)
          sh.metrics.Event(EventType::kTick, t->applied.outcome[i]).Increment();
        ticks_pending = t->produced >= static_cast<int>(kTickBatch);
        more = more || ticks_pending;
      } else {
        ticks_pending = false;  // retried at the next look, not in a tight loop
        store.Failed(t.status());
        continue;
      }
    }
    if (sweep_due) {
      const auto now = Clock::now();
      if (auto seen = sh.report_watch.TakeSettled(now)) {
        // Backdated by the observation's age and a margin for the broker's answer in flight.
        constexpr Millis kMargin{2000};
        const Millis age = std::chrono::duration_cast<Millis>(now - seen->at) + kMargin;
        if (Status m = pg->MarkCaughtUp(sh.config.group, seen->ranges, age); !m.ok()) {
          store.Failed(m);
          continue;
        }
      }
      auto sw = pg->SweepRuns();
      if (sw.ok()) {
        sh.metrics.RunOutcome("lost").Increment(sw->lost);
        sh.metrics.RunOutcome("retried").Increment(sw->retried);
        sh.metrics.RunOutcome("failed").Increment(sw->failed);
        sh.metrics.RunOutcome("killed").Increment(sw->killed);
        if (sw->retried > 0 || sw->failed > 0) sh.relay_wake.Wake();
      } else {
        store.Failed(sw.status());
        continue;
      }
    }
    if (index == 0 && Clock::now() - last_gauge > std::chrono::seconds(2)) {
      last_gauge = Clock::now();
      if (auto c = pg->CountJobs(); c.ok()) {
        for (const auto& [state, n] : *c) sh.metrics.Jobs(state).Set(static_cast<double>(n));
      }
      // Jobs discarded and runs killed by schedule changes, which trigctl makes in its process.
      if (auto t = pg->TakeChangeCounts(); t.ok()) {
        if (t->jobs_discarded > 0)
          sh.metrics.JobTransition("discarded").Increment(static_cast<double>(t->jobs_discarded));
        if (t->runs_killed > 0) sh.metrics.RunOutcome("killed").Increment(static_cast<double>(t->runs_killed));
      }
    }
    if (index == 0 && Clock::now() - last_prune > std::chrono::hours(1)) {
      last_prune = Clock::now();
      // Event ids are kept longer than the event topics' retention (7 days).
      if (Status s = pg->Prune(std::chrono::hours(24 * 8)); !s.ok()) store.Failed(s);
    }
    if (!more) sh.checker_wake.Wait(std::chrono::milliseconds(100));
  }
}

}  // namespace trigd::engine_internal
