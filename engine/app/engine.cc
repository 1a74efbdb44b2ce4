#include "app/engine.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/log.h"
#include "common/topic_names.h"
#include "core/envelope.h"
#include "core/event_router.h"
#include "core/schedule_index.h"
#include "log/kafka.h"
#include "log/topics.h"
#include "metrics/metrics.h"
#include "store/migrator.h"
#include "store/pg_store.h"
#include "store/retention.h"

namespace trigd {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// Lets one loop wake another early (a committed batch with ready jobs wakes the checker; a
// committed launch wakes the relay) instead of waiting for its next poll.
class Waker {
 public:
  void Wake() {
    {
      std::lock_guard<std::mutex> l(mu_);
      woken_ = true;
    }
    cv_.notify_one();
  }
  void Wait(std::chrono::milliseconds at_most) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, at_most, [&] { return woken_; });
    woken_ = false;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;
};

void Log(const std::string& what) { LogLine(what); }

// A store connection that reconnects after PostgreSQL went away (restart, failover). While it
// stays away each handle says so when it goes and then every kSayEvery, and once when it is
// back (a line a second from each of trigd's four loops would be 300 lines in a 75 s outage;
// the Kafka adapter says as much for Kafka).
class StoreHandle {
 public:
  StoreHandle(const Config& config, const char* name, int shard = 0, int shards = 1)
      : config_(config), name_(name), shard_(shard), shards_(shards) {}
  PgStore* Get() {
    if (store_) return store_.get();
    auto s = PgStore::Connect(config_.pg, config_.topic_prefix);
    if (!s.ok()) {
      Unreachable(s.status().message());
      return nullptr;
    }
    if (unreachable_) Log(std::string(name_) + ": PostgreSQL reachable again");
    unreachable_ = false;
    store_ = std::move(*s);
    store_->SetFastPath(config_.fast_path);
    store_->SetCheckerShard(shard_, shards_);
    store_->SetConsumerGroup(config_.group);
    return store_.get();
  }
  // Called with a failed status: drops the connection when it is gone.
  void Failed(const Status& s) {
    if (s.code() == StatusCode::kUnavailable) {
      Unreachable(s.ToString());
    } else {
      Log(std::string(name_) + ": " + s.ToString());
    }
    if (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kInternal) store_.reset();
  }

 private:
  static constexpr auto kSayEvery = std::chrono::seconds(30);
  void Unreachable(const std::string& why) {
    const auto now = Clock::now();
    if (!unreachable_ || now - said_ >= kSayEvery) {
      Log(std::string(name_) + ": " + why + "; retrying");
      said_ = now;
    }
    unreachable_ = true;
  }
  const Config& config_;
  const char* name_;
  int shard_, shards_;
  std::unique_ptr<PgStore> store_;
  bool unreachable_ = false;
  Clock::time_point said_{};
};

// The program topic's partitions as the ingest thread read their ends from the broker, for
// the sweep to tell how far trigd has read workers' reports (PgStore::MarkCaughtUp). An
// observation is used once it is kReportsSettle old: by then a healthy ingest has committed up
// to those ends, and one still behind them has not, so the mark waits for a later one.
class ReportWatch {
 public:
  static constexpr auto kReportsSettle = std::chrono::seconds(1);
  struct Observation {
    Clock::time_point at;
    std::vector<PartitionRange> ranges;
  };
  void Add(Observation o) {
    std::lock_guard<std::mutex> l(mu_);
    observations_.push_back(std::move(o));
    if (observations_.size() > 16) observations_.pop_front();
  }
  // The newest observation at least kReportsSettle old (older ones are dropped), if any.
  std::optional<Observation> TakeSettled(Clock::time_point now) {
    std::lock_guard<std::mutex> l(mu_);
    std::optional<Observation> out;
    while (!observations_.empty() && now - observations_.front().at >= kReportsSettle) {
      out = std::move(observations_.front());
      observations_.pop_front();
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::deque<Observation> observations_;
};

struct Shared {
  const Config& config;
  const std::atomic<bool>& stop;  // set by a signal
  Metrics& metrics;
  Waker checker_wake;
  Waker relay_wake;
  ReportWatch report_watch;
  // Set by a loop that cannot go on (Halt): every loop stops, and RunEngine returns `why`.
  std::atomic<bool> halted{false};
  std::mutex why_mu;
  Status why;

  bool Stopping() const { return stop.load() || halted.load(); }
  void Halt(Status s) {
    {
      std::lock_guard<std::mutex> lock(why_mu);
      if (why.ok()) why = std::move(s);
    }
    halted = true;
    checker_wake.Wake();
    relay_wake.Wake();
  }
};

void RecordChecks(Shared& sh, const CheckerResult& r) {
  for (const auto& [key, n] : r.checks) sh.metrics.ConstraintCheck(key.first, key.second).Increment(n);
  sh.metrics.JobTransition("discarded").Increment(r.discarded);
  if (r.launched > 0) sh.relay_wake.Wake();
}

// After a committed ingest batch or tick: metrics, and the loops that have work because of it.
void RecordApplied(Shared& sh, const IngestResult& r) {
  sh.metrics.JobTransition("opened").Increment(r.jobs_opened);
  sh.metrics.JobTransition("ready").Increment(r.jobs_ready);
  sh.metrics.JobTransition("discarded").Increment(r.jobs_discarded);
  for (const auto& [outcome, n] : r.run_outcomes) sh.metrics.RunOutcome(outcome).Increment(n);
  RecordChecks(sh, r.checker);
  // The fast path decided at most kFastPathLimit jobs; anything it left (still waiting, or
  // more than it took) is the checker loop's.
  if (r.jobs_ready > r.checker.launched + r.checker.discarded || !r.run_outcomes.empty()) sh.checker_wake.Wake();
  if (r.published > 0) sh.relay_wake.Wake();
}
// trigd_events_total's counters, looked up once (prometheus-cpp: keep the Counter&).
class EventCounters {
 public:
  explicit EventCounters(Metrics& metrics) {
    for (EventType type : kEventTypes) {
      for (EventOutcome o : kCountedEventOutcomes) {
        counters_[static_cast<size_t>(type)][static_cast<size_t>(o)] = &metrics.Event(type, o);
      }
    }
  }
  // `outcome`: applied, duplicate or no_match (IngestResult::outcome; kDead is counted by reason).
  prometheus::Counter& Get(EventType type, EventOutcome outcome) {
    return *counters_[static_cast<size_t>(type)][static_cast<size_t>(outcome)];
  }

 private:
  std::array<std::array<prometheus::Counter*, std::size(kCountedEventOutcomes)>, std::size(kEventTypes)> counters_{};
};

// Consumed messages made ready for one transaction. Events that match no schedule and report
// no run change nothing in PostgreSQL: they are only counted, and the positions cover them.
struct PreparedBatch {
  struct Position {
    std::string topic;
    int partition = 0;
    int64_t first_offset = 0, next_offset = 0;
  };
  IngestBatch in;                        // positions filled by Finish
  std::vector<Position> positions;       // a handful: linear search beats a map keyed by strings
  std::vector<PartitionOffset> offsets;  // for Kafka's group once committed (Finish)
  std::array<int64_t, std::size(kEventTypes)> no_match{};  // by EventType
  int64_t own_ticks = 0;                 // trigd's own ticks (IsOwnTick): applied when published
  std::vector<DeadLetterReason> dead_reasons;
  size_t messages = 0;

  bool empty() const { return messages == 0; }

  // Positions in (topic, partition) order, as before: instances lock offsets rows alike.
  void Finish() {
    std::sort(positions.begin(), positions.end(), [](const Position& a, const Position& b) {
      return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
    });
    for (const Position& p : positions) {
      in.positions.push_back({p.topic, p.partition, p.first_offset, p.next_offset});
      offsets.push_back({p.topic, p.partition, p.next_offset});
    }
  }
};

// Adds `messages` to `out`.
void Prepare(const MessageBatch& messages, const ScheduleIndex& index, PreparedBatch& out) {
  PreparedBatch::Position* last = nullptr;
  RouteEvents(
      messages.size(), index, [&](size_t i) { return messages[i].value; },
      [&](size_t i, RoutedEvent&& r) {
        const MessageView m = messages[i];
        if (!last || last->partition != m.partition || last->topic != m.topic) {
          last = nullptr;
          for (PreparedBatch::Position& p : out.positions) {
            if (p.partition == m.partition && p.topic == m.topic) last = &p;
          }
          if (!last)
            last = &out.positions.emplace_back(PreparedBatch::Position{std::string(m.topic), m.partition, m.offset, 0});
        }
        last->next_offset = m.offset + 1;
        ++out.messages;
        switch (r.kind) {
          case RoutedEvent::Kind::kOwnTick: ++out.own_ticks; break;
          case RoutedEvent::Kind::kNoMatch: ++out.no_match[static_cast<size_t>(r.type)]; break;
          case RoutedEvent::Kind::kInvalid:
            out.dead_reasons.push_back(r.reason);
            out.in.dead.push_back(
                {std::string(m.key), DeadLetterJson(r.error, m.topic, m.partition, m.offset, m.value)});
            break;
          case RoutedEvent::Kind::kMatch:
            out.in.schedule_ids.emplace_back(r.schedules.begin(), r.schedules.end());
            out.in.events.push_back(std::move(*r.event));
            out.in.sources.push_back({std::string(m.topic), m.partition, m.offset});
            break;
        }
      });
}

// Runs the ingest transactions, one batch at a time, on its own thread and PostgreSQL
// connection: the ingest loop polls and parses the next batch while this one commits. Each
// batch's positions are still committed in the same transaction as its jobs, and batches
// commit in the order they were polled (one in flight). Used by the ingest thread only.
class IngestCommitter {
 public:
  enum class Outcome { kCommitted, kFenced, kStaleIndex, kFailed };

  explicit IngestCommitter(Shared& sh) : sh_(sh), store_(sh.config, "ingest"), counters_(sh.metrics) {
    thread_ = std::thread([this] { Run(); });
  }
  ~IngestCommitter() {
    {
      std::lock_guard<std::mutex> l(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  bool InFlight() const { return in_flight_; }

  // Starts committing `batch`; none may be in flight (Wait first).
  void Submit(PreparedBatch batch) {
    {
      std::lock_guard<std::mutex> l(mu_);
      batch_ = std::move(batch);
      has_batch_ = true;
      done_ = false;
    }
    in_flight_ = true;
    cv_.notify_all();
  }

  // Whether the batch in flight is settled (Wait would not block).
  bool Done() {
    std::lock_guard<std::mutex> l(mu_);
    return done_;
  }

  // Blocks until the batch in flight is settled, leaving its outcome for Wait.
  void WaitIdle() {
    if (!in_flight_) return;
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return done_; });
  }

  // The outcome of the batch in flight, once settled.
  Outcome Wait() {
    WaitIdle();
    in_flight_ = false;
    return outcome_;
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> l(mu_);
    while (true) {
      cv_.wait(l, [&] { return quit_ || has_batch_; });
      if (!has_batch_) return;  // quit, nothing in flight
      has_batch_ = false;
      l.unlock();
      Outcome outcome = Commit(batch_);
      batch_ = PreparedBatch();
      l.lock();
      outcome_ = outcome;
      done_ = true;
      cv_.notify_all();
    }
  }

  Outcome Commit(const PreparedBatch& batch) {
    Result<IngestResult> r = Aborted("not run");
    for (int attempt = 0; attempt < 20 && !sh_.Stopping(); ++attempt) {
      PgStore* pg = store_.Get();
      if (!pg) return Outcome::kFailed;
      r = pg->ApplyBatch(batch.in);
      if (r.ok() || r.status().code() != StatusCode::kAborted) break;
      // A race with another instance (same schedule's open job, deadlock): rerun as is.
      sh_.metrics.TransactionRetries().Increment();
      std::this_thread::sleep_for(std::chrono::milliseconds(5 * (attempt + 1)));
    }
    if (!r.ok()) {
      // Not run because trigd is stopping: nothing to say (it logged "ingest: aborted: not run").
      if (!sh_.Stopping()) store_.Failed(r.status());
      return Outcome::kFailed;
    }
    if (r->fenced) return Outcome::kFenced;
    if (r->stale_index) return Outcome::kStaleIndex;
    // Counted and woken here, as soon as the transaction is durable.
    sh_.metrics.IngestTransactions().Increment();
    for (DeadLetterReason reason : batch.dead_reasons) sh_.metrics.DeadLetter(reason).Increment();
    for (DeadLetterReason reason : r->dead_reasons) sh_.metrics.DeadLetter(reason).Increment();
    if (!r->dead_reasons.empty()) sh_.relay_wake.Wake();
    for (size_t i = 0; i < batch.in.events.size(); ++i) {
      // A dead letter is counted as one (above), not as an event.
      if (r->outcome[i] != EventOutcome::kDead) counters_.Get(batch.in.events[i].type, r->outcome[i]).Increment();
    }
    for (EventType type : kEventTypes) {
      if (int64_t n = batch.no_match[static_cast<size_t>(type)])
        counters_.Get(type, EventOutcome::kNoMatch).Increment(static_cast<double>(n));
    }
    if (batch.own_ticks > 0)
      counters_.Get(EventType::kTick, EventOutcome::kDuplicate).Increment(static_cast<double>(batch.own_ticks));
    RecordApplied(sh_, *r);
    if (!batch.in.dead.empty()) sh_.relay_wake.Wake();
    return Outcome::kCommitted;
  }

  Shared& sh_;
  StoreHandle store_;
  EventCounters counters_;
  std::mutex mu_;
  std::condition_variable cv_;
  PreparedBatch batch_;                 // guarded by mu_ while handed over
  bool has_batch_ = false;              // guarded by mu_
  bool done_ = false;                   // guarded by mu_
  Outcome outcome_ = Outcome::kFailed;  // guarded by mu_
  bool quit_ = false;                   // guarded by mu_
  bool in_flight_ = false;              // the ingest thread's own view
  std::thread thread_;
};

// Positions of committed batches, copied to Kafka's group (for `trigctl lag` and Kafka's own
// tools; trigd reads its positions from PostgreSQL) at most once a second. A commit per batch
// (hundreds a second at 1,000 events/s) would queue on the group coordinator's connection, which
// the broker serves one request at a time, ahead of the heartbeats: when the broker's disk stalls,
// no heartbeat is answered within the 6 s session timeout, librdkafka gives the partitions up and
// rejoins, and consumption stops for seconds (docs/adr/0001-postgresql-holds-the-offsets.md).
class KafkaCommits {
 public:
  void Add(const std::vector<PartitionOffset>& offsets) {
    for (const PartitionOffset& o : offsets) {
      int64_t& next = pending_[{o.topic, o.partition}];
      next = std::max(next, o.next_offset);
    }
  }
  void MaybeSend(Consumer& consumer) {
    if (!pending_.empty() && Clock::now() - last_ >= kInterval) Send(consumer);
  }
  void Send(Consumer& consumer) {
    if (pending_.empty()) return;
    std::vector<PartitionOffset> offsets;
    for (const auto& [tp, next] : pending_) offsets.push_back({tp.first, tp.second, next});
    consumer.CommitKafka(offsets);
    pending_.clear();
    last_ = Clock::now();
  }

 private:
  static constexpr auto kInterval = std::chrono::seconds(1);
  std::map<std::pair<std::string, int>, int64_t> pending_;
  Clock::time_point last_{};
};

// The consumer loop: event topics -> jobs, in one transaction per batch with the offsets.
// While one batch commits (IngestCommitter), the next is polled and parsed; if the commit
// fails or is fenced, that next batch is dropped too and the consumer re-reads from
// PostgreSQL's positions.
void IngestLoop(Shared& sh) {
  constexpr size_t kMaxPoll = 5000;    // messages per poll
  constexpr size_t kMaxBatch = 20000;  // messages per transaction
  // What librdkafka may queue ahead (see Consumer::Create): about a second of events at the
  // rates a backlog is consumed at (~1M small events/s), 128 MiB at most.
  constexpr size_t kPrefetchMessages = 500000, kPrefetchKbytes = 128 * 1024;
  StoreHandle store(sh.config, "ingest index");
  IngestCommitter committer(sh);
  ScheduleIndex index;
  int64_t index_seq = 0;
  bool index_loaded = false;
  // Batches refused in a row because a schedule changed after they were routed. Under a stream
  // of changes faster than batches commit, the next batch goes without the check rather than
  // never (its events then meet the index as it was, at most 200 ms old).
  constexpr int kMaxStale = 3;
  int stale_in_a_row = 0;
  std::unique_ptr<Consumer> consumer;
  const TopicNames topics(sh.config.topic_prefix);
  const std::string& program = topics.events_program;
  auto last_refresh = Clock::time_point{};
  auto last_lag = Clock::time_point{};
  auto last_watch = Clock::time_point{};
  std::set<std::pair<std::string, int>> lag_reported;
  MessageBatch messages;
  PreparedBatch next;  // polled, waiting for the batch in flight
  std::vector<PartitionOffset> in_flight_offsets;
  KafkaCommits kafka_commits;
  while (!sh.Stopping()) {
    PgStore* pg = store.Get();
    if (!pg) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    // The reverse index follows the schedule change log (apply, update, delete, suspend): every
    // 200 ms, and at once when a batch met a change its routing had not seen.
    if (!index_loaded || Clock::now() - last_refresh > std::chrono::milliseconds(200)) {
      auto changes = pg->LoadScheduleChanges(index_loaded ? index_seq : 0);
      if (!changes.ok()) {
        store.Failed(changes.status());
        continue;
      }
      for (const ScheduleKeys& k : changes->schedules) {
        if (k.active)
          index.Put(k.id, k.event_keys);
        else
          index.Remove(k.id);
      }
      if (!index_loaded) Log("reverse index loaded: " + std::to_string(index.schedule_count()) + " schedules");
      index_seq = changes->last_seq;
      index_loaded = true;
      last_refresh = Clock::now();
    }
    if (!consumer) {
      ConsumerOptions options;
      options.prefetch_messages = kPrefetchMessages;
      options.prefetch_kbytes = kPrefetchKbytes;
      options.instance_id = sh.config.instance_id;
      auto c = Consumer::Create(
          sh.config.kafka, sh.config.group, topics.Events(),
          [&](const std::vector<std::pair<std::string, int>>& parts) {
            // Positions come from PostgreSQL, where they are committed with the jobs;
            // after the batch in flight, so they include it.
            committer.WaitIdle();
            for (int attempt = 0; attempt < 30 && !sh.Stopping(); ++attempt) {
              if (PgStore* p = store.Get()) {
                auto r = p->LoadOffsets(sh.config.group, parts);
                if (r.ok()) return *r;
                store.Failed(r.status());
              }
              std::this_thread::sleep_for(std::chrono::seconds(1));
            }
            TRIGD_FAIL("cannot load the consumer positions: restart to position safely");
          },
          options);
      if (!c.ok()) {
        Log("consumer: " + c.status().ToString());
        std::this_thread::sleep_for(std::chrono::seconds(1));
        continue;
      }
      consumer = std::move(*c);
    }
    // While a batch commits, what arrives meanwhile is polled and parsed into the next one, up
    // to kMaxBatch; and while the consumer is behind (polls come back full), the next batch
    // grows to kMaxBatch anyway. The transaction size follows the rate (one poll's worth when
    // events trickle in, many when they stream) and PostgreSQL's per-transaction cost is shared.
    // No linger after the first message: what arrives while a batch commits joins the next one
    // anyway, and lingering would only add to the latency of an event that arrives alone.
    consumer->PollBatch(messages, kMaxPoll, committer.InFlight() || !next.empty() ? 1 : 100, 0);
    if (messages.empty()) {
      if (std::string fatal = consumer->FatalError(); !fatal.empty()) {
        // Fenced: a newer member joined with this instance id. Re-joining would fence it in
        // turn, so this process stops (what is in flight commits first, below).
        sh.Halt(Invalid("consumer: " + fatal +
                        (sh.config.instance_id.empty()
                             ? ""
                             : " (is another trigd running with --instance-id " + sh.config.instance_id + "?)")));
        break;
      }
    }
    const bool behind = messages.size() == kMaxPoll;
    // The program topic's ends, once a second, for the sweep (ReportWatch). Asked of the broker:
    // while it cannot be reached, no observation, and no run is declared lost for silence.
    if (Clock::now() - last_watch >= std::chrono::seconds(1)) {
      last_watch = Clock::now();
      if (auto ranges = consumer->AssignedRanges(program, 1000); ranges.ok()) {
        if (!ranges->empty()) sh.report_watch.Add({last_watch, std::move(*ranges)});
      }
    }
    if (Clock::now() - last_lag > std::chrono::seconds(2)) {
      // A partition this instance no longer holds (a rebalance gave it to another) reads 0 here,
      // not its last value for good: the sum over instances is the group's lag.
      std::set<std::pair<std::string, int>> reported;
      for (const PartitionLag& l : consumer->Lag()) {
        sh.metrics.ConsumerLag(l.topic, l.partition).Set(static_cast<double>(l.lag));
        reported.emplace(l.topic, l.partition);
      }
      for (const auto& [topic, partition] : lag_reported) {
        if (!reported.count({topic, partition})) sh.metrics.ConsumerLag(topic, partition).Set(0);
      }
      lag_reported = std::move(reported);
      last_lag = Clock::now();
    }
    if (next.empty()) next.in.index_seq = stale_in_a_row < kMaxStale ? index_seq : -1;
    Prepare(messages, index, next);
    messages.Clear();
    if (committer.InFlight()) {
      if (!committer.Done() && next.messages + kMaxPoll <= kMaxBatch) continue;
      const IngestCommitter::Outcome outcome = committer.Wait();
      stale_in_a_row = outcome == IngestCommitter::Outcome::kStaleIndex ? stale_in_a_row + 1 : 0;
      if (outcome != IngestCommitter::Outcome::kCommitted) {
        if (outcome == IngestCommitter::Outcome::kFenced) {
          Log("batch refused: another consumer moved a position first; re-reading from PostgreSQL");
        }
        if (outcome == IngestCommitter::Outcome::kStaleIndex) last_refresh = Clock::time_point{};
        // What was polled meanwhile goes too: everything after PostgreSQL's positions is read again.
        next = PreparedBatch();
        consumer->Rewind();
        if (outcome == IngestCommitter::Outcome::kFailed) std::this_thread::sleep_for(std::chrono::milliseconds(200));
        continue;
      }
      kafka_commits.Add(in_flight_offsets);
    }
    kafka_commits.MaybeSend(*consumer);
    if (next.empty() || (behind && next.messages + kMaxPoll <= kMaxBatch)) continue;
    next.in.group = sh.config.group;
    next.Finish();
    in_flight_offsets = next.offsets;
    committer.Submit(std::move(next));
    next = PreparedBatch();
  }
  if (committer.InFlight() && committer.Wait() == IngestCommitter::Outcome::kCommitted) {
    kafka_commits.Add(in_flight_offsets);
  }
  if (consumer) kafka_commits.Send(*consumer);
}

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
      sh.metrics.HistoryPruned("jobs").Increment(static_cast<double>(t->jobs));
      sh.metrics.HistoryPruned("runs").Increment(static_cast<double>(t->runs));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (total.jobs > 0 || total.runs > 0) {
      Log("retention: deleted " + std::to_string(total.jobs) + " jobs and " + std::to_string(total.runs) +
          " runs that finished before " + FormatTime((*pruner)->cutoff()));
    }
  }
}

// Sends of a message the broker refuses for good (too large for the topic, a policy) before its
// run is failed as unpublishable: a few, in case the refusal came from a broker being reconfigured.
constexpr int kMaxRefusedSends = 5;

// Outbox rows whose every send the broker refused for good, by id: those refused
// kMaxRefusedSends times in a row are returned, and forgotten. A row sent or not refused is
// forgotten too, so the map holds only rows of the current claims.
class RefusedSends {
 public:
  std::vector<int64_t> Count(const std::vector<OutboxRow>& rows, const std::vector<bool>& refused) {
    std::map<int64_t, int> next;
    std::vector<int64_t> give_up;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!refused[i] || next.contains(rows[i].id)) continue;
      const int sends = tries_[rows[i].id] + 1;
      if (sends >= kMaxRefusedSends) {
        give_up.push_back(rows[i].id);
      } else {
        next[rows[i].id] = sends;
      }
    }
    tries_ = std::move(next);
    return give_up;
  }

 private:
  std::map<int64_t, int> tries_;
};

// The relay: publishes what committed transactions decided, deletes a row only once the
// broker confirmed it (a crash in between re-sends it: same run id).
void RelayLoop(Shared& sh) {
  StoreHandle store(sh.config, "relay");
  std::unique_ptr<Producer> producer;
  std::set<std::string> known_topics;
  RefusedSends refused_sends;
  while (!sh.Stopping()) {
    if (!producer) {
      auto p = Producer::Create(sh.config.kafka);
      if (!p.ok()) {
        Log("relay: " + p.status().ToString());
        std::this_thread::sleep_for(std::chrono::seconds(1));
        continue;
      }
      producer = std::move(*p);
    }
    PgStore* pg = store.Get();
    if (!pg) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    auto rows = pg->ClaimOutbox(5000);
    if (!rows.ok()) {
      store.Failed(rows.status());
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    if (rows->empty()) {
      sh.relay_wake.Wait(std::chrono::milliseconds(50));
      continue;
    }
    // A launch topic for a new target is created on first use (trigd.launch.<target>).
    std::vector<TopicSpec> missing;
    for (const auto& row : *rows) {
      if (known_topics.insert(row.topic).second) missing.push_back({row.topic, 4, {{"retention.ms", "604800000"}}});
    }
    if (!missing.empty()) {
      if (auto c = CreateTopics(sh.config.kafka, missing); !c.ok()) {
        Log("relay: creating topics: " + c.status().ToString());
        for (const auto& t : missing) known_topics.erase(t.name);
      }
    }
    std::vector<OutMessage> out;
    out.reserve(rows->size());
    for (const auto& row : *rows) out.push_back({row.topic, row.key, row.payload});
    std::vector<bool> ok = producer->ProduceAndWait(out, 10000);
    const std::vector<int64_t> given_up = refused_sends.Count(*rows, producer->Refused());
    if (!given_up.empty()) {
      auto failed = pg->FailUnpublishable(given_up);
      if (!failed.ok()) {
        store.Failed(failed.status());
        continue;
      }
      Log("relay: " + std::to_string(given_up.size()) + " launch requests refused by Kafka " +
          std::to_string(kMaxRefusedSends) + " times (" + producer->LastError() + "): " + std::to_string(*failed) +
          " runs failed as unpublishable");
      sh.metrics.RunOutcome("failed").Increment(*failed);
      sh.metrics.RunOutcome("unpublishable").Increment(*failed);
    }
    // A row is confirmed when all its messages are (a bundle's share its id; rows come in id order).
    std::vector<int64_t> confirmed;
    size_t unconfirmed = 0;
    for (size_t i = 0; i < rows->size();) {
      size_t end = i;
      if (std::find(given_up.begin(), given_up.end(), (*rows)[i].id) != given_up.end()) {  // withdrawn
        while (end < rows->size() && (*rows)[end].id == (*rows)[i].id) ++end;
        i = end;
        continue;
      }
      bool all = true;
      for (; end < rows->size() && (*rows)[end].id == (*rows)[i].id; ++end) {
        if (!ok[end]) ++unconfirmed, all = false;
      }
      if (all) confirmed.push_back((*rows)[i].id);
      i = end;
    }
    auto done = pg->CompleteOutbox(confirmed);
    if (!done.ok()) {
      store.Failed(done.status());
      continue;
    }
    sh.metrics.JobTransition("launched").Increment(static_cast<double>(done->size()));
    for (double s : *done) sh.metrics.EventToLaunch().Observe(s);
    if (unconfirmed > 0) {
      Log("relay: " + std::to_string(unconfirmed) + " messages not confirmed by Kafka (" + producer->LastError() +
          "); will re-send with a new producer");
      // A fresh producer: an idempotent producer can be left fenced or fatal after a broker
      // restart; the rows stay in the outbox and go again, with the same run ids.
      producer.reset();
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
}

// The topics trigd reads, the dead-letter topic and the control topic must exist before it
// starts: one started with a mistyped --topic-prefix would run against the shared database, take
// fire times from the real instances and publish their launch requests where no worker reads (the
// broker makes the topics on the first produce), and those runs would fail as lost 10 minutes
// later (docs/adr/0028-topics-must-exist.md). The control topic, made by the relay on first use,
// would have the relay's launch-topic settings, not those of topics/. Missing: refused (kInvalid).
// Kafka not reachable yet: waits, saying so.
Status CheckTopics(const Config& config, const std::atomic<bool>& stop) {
  const std::vector<std::string> needed = TopicNames(config.topic_prefix).Needed();
  auto said = Clock::time_point{};
  while (!stop.load()) {
    auto missing = MissingTopics(config.kafka, needed);
    if (missing.ok()) {
      if (missing->empty()) return Status();
      return Invalid(NoSuchTopics(*missing, config.kafka));
    }
    if (Clock::now() - said >= std::chrono::seconds(30)) {
      Log(missing.status().message() + " (looking up trigd's topics); retrying");
      said = Clock::now();
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return Status();
}

}  // namespace

Status RunEngine(const Config& config, const std::atomic<bool>& stop) {
  if (Status s = ApplyMigrations(config.pg, DefaultSchemaDir(), nullptr); !s.ok()) return s;
  if (Status s = CheckTopics(config, stop); !s.ok() || stop.load()) return s;
  Metrics metrics;
  if (Status s = metrics.Serve(config.metrics); !s.ok()) return s;
  Shared shared{config, stop, metrics, {}, {}};
  Log("running: kafka " + config.kafka + ", group " + config.group + ", topics " + config.topic_prefix +
      "*, metrics http://" + config.metrics + "/metrics" +
      (config.retention.count() > 0 ? ", retention " + FormatDuration(config.retention) : ""));
  std::thread ingest([&] { IngestLoop(shared); });
  std::vector<std::thread> checkers;
  for (int i = 0; i < config.checkers; ++i) checkers.emplace_back([&, i] { CheckerLoop(shared, i); });
  std::thread relay([&] { RelayLoop(shared); });
  std::thread retention;
  if (config.retention.count() > 0) retention = std::thread([&] { RetentionLoop(shared); });
  ingest.join();
  shared.checker_wake.Wake();
  shared.relay_wake.Wake();
  for (std::thread& t : checkers) t.join();
  relay.join();
  if (retention.joinable()) retention.join();
  std::lock_guard<std::mutex> lock(shared.why_mu);
  return shared.why;
}

}  // namespace trigd
