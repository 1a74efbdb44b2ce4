// A fake EngineStore for the loop tests (tests/app_loops/*_loop_test.cc): keeps the committed
// positions like PostgreSQL's offsets table and an outbox like the outbox table, records every
// call, and injects faults: fail the next N calls of a method with a status (kAborted,
// kUnavailable, kInternal...), fence the next batch (a position moved by another consumer),
// report the next batch's index stale. The checker's calls answer what the test queued.
#pragma once

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "app/engine_store.h"

namespace trigd::testing {

class FakeStoreState {
 public:
  // The next `n` calls of `method` ("ApplyBatch", "LoadScheduleChanges", ...) fail with `s`.
  void FailNext(const std::string& method, int n, Status s) {
    std::lock_guard<std::mutex> l(mu);
    for (int i = 0; i < n; ++i) faults[method].push_back(s);
  }
  void FenceNext(int n) {
    std::lock_guard<std::mutex> l(mu);
    fence += n;
  }
  void StaleNext(int n) {
    std::lock_guard<std::mutex> l(mu);
    stale += n;
  }

  std::mutex mu;
  std::map<std::string, std::deque<Status>> faults;
  int fence = 0, stale = 0;
  int connects = 0;
  std::map<std::string, int> calls;  // by method, failed ones included
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> call_log;  // every call, in order
  std::map<std::pair<std::string, int>, int64_t> positions;                             // committed next offsets
  std::vector<std::vector<ConsumedPosition>> applied;                                   // committed batches' positions
  std::vector<std::vector<ConsumedPosition>> refused;  // fenced or stale batches' positions
  int64_t committed_messages = 0;
  // The outbox: rows claimed in id order (a bundle's messages share their row's id) until
  // CompleteOutbox deletes them (ids in `completed`, in the order deleted) or FailUnpublishable
  // withdraws them (`unpublishable`).
  std::vector<OutboxRow> outbox;
  std::vector<int64_t> completed, unpublishable;
  // The checker's answers, one per call while queued (then empty results).
  std::deque<CheckerResult> checks;
  std::deque<TickResult> ticks;
  std::deque<SweepResult> sweeps;

  // Under mu: the fault for this call of `method`, if any.
  std::optional<Status> Take(const std::string& method) {
    ++calls[method];
    call_log.emplace_back(method, std::chrono::steady_clock::now());
    auto it = faults.find(method);
    if (it == faults.end() || it->second.empty()) return std::nullopt;
    Status s = it->second.front();
    it->second.pop_front();
    return s;
  }
};

class FakeEngineStore final : public EngineStore {
 public:
  explicit FakeEngineStore(FakeStoreState& st) : st_(st) {}

  Result<ScheduleChanges> LoadScheduleChanges(int64_t after_seq) override {
    std::lock_guard<std::mutex> l(st_.mu);
    if (auto f = st_.Take("LoadScheduleChanges")) return *f;
    ScheduleChanges c;
    c.last_seq = after_seq;
    return c;
  }
  Result<std::vector<std::optional<int64_t>>> LoadOffsets(
      const std::string&, const std::vector<std::pair<std::string, int>>& parts) override {
    std::lock_guard<std::mutex> l(st_.mu);
    if (auto f = st_.Take("LoadOffsets")) return *f;
    std::vector<std::optional<int64_t>> out;
    for (const auto& p : parts) {
      auto it = st_.positions.find(p);
      out.push_back(it == st_.positions.end() ? std::nullopt : std::optional<int64_t>(it->second));
    }
    return out;
  }
  Result<IngestResult> ApplyBatch(const IngestBatch& batch) override {
    std::lock_guard<std::mutex> l(st_.mu);
    if (auto f = st_.Take("ApplyBatch")) return *f;
    IngestResult r;
    r.outcome.assign(batch.events.size(), EventOutcome::kApplied);
    // The compare-and-set PostgreSQL does: a batch must start where the stored position is.
    bool moved = false;
    for (const ConsumedPosition& p : batch.positions) {
      auto it = st_.positions.find({p.topic, p.partition});
      if (it != st_.positions.end() && it->second != p.first_offset) moved = true;
    }
    if (st_.fence > 0 || moved) {
      if (st_.fence > 0) --st_.fence;
      st_.refused.push_back(batch.positions);
      r.fenced = true;
      return r;
    }
    if (st_.stale > 0 && batch.index_seq >= 0) {
      --st_.stale;
      st_.refused.push_back(batch.positions);
      r.stale_index = true;
      return r;
    }
    for (const ConsumedPosition& p : batch.positions) {
      st_.positions[{p.topic, p.partition}] = p.next_offset;
      st_.committed_messages += p.next_offset - p.first_offset;
    }
    st_.applied.push_back(batch.positions);
    return r;
  }
  Result<CheckerResult> CheckDueJobs(size_t) override { return Queued("CheckDueJobs", st_.checks); }
  Result<TickResult> TickTimeTriggers(size_t) override { return Queued("TickTimeTriggers", st_.ticks); }
  Result<SweepResult> SweepRuns() override { return Queued("SweepRuns", st_.sweeps); }
  Status MarkCaughtUp(const std::string&, const std::vector<PartitionRange>&, Millis) override {
    std::lock_guard<std::mutex> l(st_.mu);
    if (auto f = st_.Take("MarkCaughtUp")) return *f;
    return Status();
  }
  Result<std::map<std::string, int64_t>> CountJobs() override {
    return Simple<std::map<std::string, int64_t>>("CountJobs");
  }
  Result<PgStore::ChangeCounts> TakeChangeCounts() override {
    return Simple<PgStore::ChangeCounts>("TakeChangeCounts");
  }
  Result<std::map<std::string, int64_t>> TakeOperatorActions() override {
    return Simple<std::map<std::string, int64_t>>("TakeOperatorActions");
  }
  Status Prune(Millis) override {
    std::lock_guard<std::mutex> l(st_.mu);
    if (auto f = st_.Take("Prune")) return *f;
    return Status();
  }
  // Up to `limit` messages; full when it took that many.
  Result<OutboxClaim> ClaimOutbox(size_t limit) override {
    std::lock_guard<std::mutex> l(st_.mu);
    if (auto f = st_.Take("ClaimOutbox")) return *f;
    const size_t n = std::min(limit, st_.outbox.size());
    return OutboxClaim{{st_.outbox.begin(), st_.outbox.begin() + static_cast<std::ptrdiff_t>(n)}, n == limit};
  }
  // Deletes the confirmed rows; each one's event-to-launch age is 0.5 s.
  Result<std::vector<double>> CompleteOutbox(const std::vector<int64_t>& confirmed) override {
    std::lock_guard<std::mutex> l(st_.mu);
    if (auto f = st_.Take("CompleteOutbox")) return *f;
    const std::vector<int64_t> ids = Remove(confirmed);
    st_.completed.insert(st_.completed.end(), ids.begin(), ids.end());
    return std::vector<double>(ids.size(), 0.5);
  }
  Result<int> FailUnpublishable(const std::vector<int64_t>& refused) override {
    std::lock_guard<std::mutex> l(st_.mu);
    if (auto f = st_.Take("FailUnpublishable")) return *f;
    const std::vector<int64_t> ids = Remove(refused);
    st_.unpublishable.insert(st_.unpublishable.end(), ids.begin(), ids.end());
    return static_cast<int>(ids.size());
  }

 private:
  template <typename T>
  Result<T> Simple(const std::string& method) {
    std::lock_guard<std::mutex> l(st_.mu);
    if (auto f = st_.Take(method)) return *f;
    return T{};
  }
  template <typename T>
  Result<T> Queued(const std::string& method, std::deque<T>& answers) {
    std::lock_guard<std::mutex> l(st_.mu);
    if (auto f = st_.Take(method)) return *f;
    if (answers.empty()) return T{};
    T t = std::move(answers.front());
    answers.pop_front();
    return t;
  }
  // Under mu: the outbox rows with these ids removed; the ids that were there (once each).
  std::vector<int64_t> Remove(const std::vector<int64_t>& ids) {
    std::vector<int64_t> removed;
    std::erase_if(st_.outbox, [&](const OutboxRow& r) {
      if (std::find(ids.begin(), ids.end(), r.id) == ids.end()) return false;
      if (removed.empty() || removed.back() != r.id) removed.push_back(r.id);
      return true;
    });
    return removed;
  }
  FakeStoreState& st_;
};

// A factory over `st`; fails (as PgStore::Connect would) while "Connect" faults are queued.
inline EngineStoreFactory FakeEngineStoreFactory(FakeStoreState& st) {
  return [&st](const EngineStoreOptions&) -> Result<std::unique_ptr<EngineStore>> {
    {
      std::lock_guard<std::mutex> l(st.mu);
      if (auto f = st.Take("Connect")) return *f;
      ++st.connects;
    }
    return std::unique_ptr<EngineStore>(std::make_unique<FakeEngineStore>(st));
  };
}

}  // namespace trigd::testing
