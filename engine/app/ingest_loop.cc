// The ingest loop: consume, route through the reverse index, apply in one transaction with the
// positions, then commit to Kafka.
#include "app/engine_loops.h"
#include "core/rewind.h"

namespace trigd::engine_internal {

using nlohmann::json;

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
  IngestBatch in;                                          // positions filled by Finish
  std::vector<Position> positions;                         // a handful: linear search beats a map keyed by strings
  std::vector<PartitionOffset> offsets;                    // for Kafka's group once committed (Finish)
  std::array<int64_t, std::size(kEventTypes)> no_match{};  // by EventType
  int64_t own_ticks = 0;                                   // trigd's own ticks (IsOwnTick): applied when published
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

  explicit IngestCommitter(Shared& sh) : sh_(sh), store_(sh.config, sh.store_factory, "ingest"), counters_(sh.metrics) {
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
      EngineStore* pg = store_.Get();
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

// The reverse index, following the schedule change log (apply, update, delete, suspend).
struct IndexFollower {
  ScheduleIndex index;
  int64_t seq = 0;
  bool loaded = false;
  Clock::time_point last_refresh{};

  // Every 200 ms, and at once when a batch met a change its routing had not seen (Expire).
  // False when the store failed (reported to `store`).
  bool Refresh(EngineStore& pg, StoreHandle& store) {
    if (loaded && Clock::now() - last_refresh <= std::chrono::milliseconds(200)) return true;
    auto changes = pg.LoadScheduleChanges(loaded ? seq : 0);
    if (!changes.ok()) {
      store.Failed(changes.status());
      return false;
    }
    for (const ScheduleKeys& k : changes->schedules) {
      if (k.active)
        index.Put(k.id, k.event_keys);
      else
        index.Remove(k.id);
    }
    if (!loaded) Log("reverse index loaded: " + std::to_string(index.schedule_count()) + " schedules");
    seq = changes->last_seq;
    loaded = true;
    last_refresh = Clock::now();
    return true;
  }
  void Expire() { last_refresh = Clock::time_point{}; }
};

// Whether PostgreSQL's positions `store` for `parts` are behind those copied to the Kafka group
// (core/rewind.h): then trigd halts before consuming anything from them, saying so. Checked at
// every assignment and re-positioning, so after a failover too. When the group's offsets cannot
// be read the check is skipped, with a log line (docs/adr/0235-a-store-behind-the-group-stops-consumption.md).
bool StoreWentBack(Shared& sh, const std::vector<std::pair<std::string, int>>& parts,
                   const std::vector<std::optional<int64_t>>& store) {
  auto group = QueryGroupOffsets(sh.config.kafka, sh.config.group, parts);
  if (!group.ok()) {
    Log("consumer: positions not compared with the group's: " + group.status().ToString());
    return false;
  }
  std::vector<PositionPair> pairs;
  for (size_t i = 0; i < parts.size(); ++i) {
    pairs.push_back({parts[i].first, parts[i].second, store[i], i < group->size() ? (*group)[i] : std::nullopt});
  }
  const std::vector<Rewind> rewinds = FindRewinds(pairs);
  if (rewinds.empty()) return false;
  sh.Halt(Invalid(DescribeRewinds(rewinds, sh.config.group)));
  return true;
}

// The event consumer, positioned from PostgreSQL's positions (committed with the jobs), after
// the batch in flight so they include it. Null (logged) when Kafka refused to make one.
std::unique_ptr<Consumer> MakeConsumer(Shared& sh, const TopicNames& topics, IngestCommitter& committer,
                                       StoreHandle& store) {
  // What librdkafka may queue ahead (see Consumer::Create): about a second of events at the
  // rates a backlog is consumed at (~1M small events/s), 128 MiB at most.
  constexpr size_t kPrefetchMessages = 500000, kPrefetchKbytes = 128 * 1024;
  ConsumerOptions options;
  options.prefetch_messages = kPrefetchMessages;
  options.prefetch_kbytes = kPrefetchKbytes;
  options.instance_id = sh.config.instance_id;
  auto c = Consumer::Create(
      sh.config.kafka, sh.config.group, topics.Events(),
      [&sh, &committer, &store](const std::vector<std::pair<std::string, int>>& parts) {
        committer.WaitIdle();
        for (int attempt = 0; attempt < 30 && !sh.Stopping(); ++attempt) {
          if (EngineStore* p = store.Get()) {
            auto r = p->LoadOffsets(sh.config.group, parts);
            if (r.ok()) {
              if (StoreWentBack(sh, parts, *r))
                return std::vector<std::optional<int64_t>>(parts.size(), kCommittedOffset);
              return *r;
            }
            store.Failed(r.status());
          }
          std::this_thread::sleep_for(std::chrono::seconds(1));
        }
        // Stopping (a stop can come while the store is unreachable, after a failed batch's
        // rewind): the loop consumes and commits nothing more, so where the consumer would start
        // does not matter. Kafka's committed offsets, never ahead of PostgreSQL's, stand in.
        if (sh.Stopping()) return std::vector<std::optional<int64_t>>(parts.size(), kCommittedOffset);
        TRIGD_FAIL("cannot load the consumer positions: restart to position safely");
      },
      options);
  if (!c.ok()) {
    Log("consumer: " + c.status().ToString());
    return nullptr;
  }
  return std::move(*c);
}

// What the consumer reports besides messages: the program topic's ends for the sweep
// (ReportWatch), once a second, and the lag gauges, every 2 s.
class ConsumerWatch {
 public:
  explicit ConsumerWatch(std::string program) : program_(std::move(program)) {}
  void Observe(Shared& sh, Consumer& consumer) {
    // Asked of the broker: while it cannot be reached, no observation, and no run is declared
    // lost for silence.
    if (Clock::now() - last_watch_ >= std::chrono::seconds(1)) {
      last_watch_ = Clock::now();
      if (auto ranges = consumer.AssignedRanges(program_, 1000); ranges.ok()) {
        if (!ranges->empty()) sh.report_watch.Add({last_watch_, std::move(*ranges)});
      }
    }
    if (Clock::now() - last_lag_ > std::chrono::seconds(2)) {
      // A partition this instance no longer holds (a rebalance gave it to another) reads 0 here,
      // not its last value for good: the sum over instances is the group's lag.
      std::set<std::pair<std::string, int>> reported;
      for (const PartitionLag& l : consumer.Lag()) {
        sh.metrics.ConsumerLag(l.topic, l.partition).Set(static_cast<double>(l.lag));
        reported.emplace(l.topic, l.partition);
      }
      for (const auto& [topic, partition] : lag_reported_) {
        if (!reported.count({topic, partition})) sh.metrics.ConsumerLag(topic, partition).Set(0);
      }
      lag_reported_ = std::move(reported);
      last_lag_ = Clock::now();
    }
  }

 private:
  std::string program_;
  Clock::time_point last_watch_{}, last_lag_{};
  std::set<std::pair<std::string, int>> lag_reported_;
};

// Fenced: a newer member joined with this instance id. Re-joining would fence it in turn, so
// this process stops (what is in flight commits first, in IngestLoop).
void HaltFenced(Shared& sh, const std::string& fatal) {
  sh.Halt(Invalid("consumer: " + fatal +
                  (sh.config.instance_id.empty()
                       ? ""
                       : " (is another trigd running with --instance-id " + sh.config.instance_id + "?)")));
}

// The consumer loop: event topics -> jobs, in one transaction per batch with the offsets.
// While one batch commits (IngestCommitter), the next is polled and parsed; if the commit
// fails or is fenced, that next batch is dropped too and the consumer re-reads from
// PostgreSQL's positions.
void IngestLoop(Shared& sh) {
  constexpr size_t kMaxPoll = 5000;    // messages per poll
  constexpr size_t kMaxBatch = 20000;  // messages per transaction
  StoreHandle store(sh.config, sh.store_factory, "ingest index");
  IngestCommitter committer(sh);
  IndexFollower follower;
  // Batches refused in a row because a schedule changed after they were routed. Under a stream
  // of changes faster than batches commit, the next batch goes without the check rather than
  // never (its events then meet the index as it was, at most 200 ms old).
  constexpr int kMaxStale = 3;
  int stale_in_a_row = 0;
  std::unique_ptr<Consumer> consumer;
  const TopicNames topics(sh.config.topic_prefix);
  ConsumerWatch watch(topics.events_program);
  MessageBatch messages;
  PreparedBatch next;  // polled, waiting for the batch in flight
  std::vector<PartitionOffset> in_flight_offsets;
  KafkaCommits kafka_commits;
  while (!sh.Stopping()) {
    EngineStore* pg = store.Get();
    if (!pg) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    if (!follower.Refresh(*pg, store)) continue;
    if (!consumer) {
      consumer = MakeConsumer(sh, topics, committer, store);
      if (!consumer) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        continue;
      }
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
        HaltFenced(sh, fatal);
        break;
      }
    }
    const bool behind = messages.size() == kMaxPoll;
    watch.Observe(sh, *consumer);
    if (next.empty()) next.in.index_seq = stale_in_a_row < kMaxStale ? follower.seq : -1;
    Prepare(messages, follower.index, next);
    messages.Clear();
    if (committer.InFlight()) {
      if (!committer.Done() && next.messages + kMaxPoll <= kMaxBatch) continue;
      const IngestCommitter::Outcome outcome = committer.Wait();
      stale_in_a_row = outcome == IngestCommitter::Outcome::kStaleIndex ? stale_in_a_row + 1 : 0;
      if (outcome != IngestCommitter::Outcome::kCommitted) {
        if (outcome == IngestCommitter::Outcome::kFenced) {
          Log("batch refused: another consumer moved a position first; re-reading from PostgreSQL");
        }
        if (outcome == IngestCommitter::Outcome::kStaleIndex) follower.Expire();
        // What was polled meanwhile goes too: everything after PostgreSQL's positions is read again.
        next = PreparedBatch();
        consumer->Rewind();
        if (outcome == IngestCommitter::Outcome::kFailed) std::this_thread::sleep_for(std::chrono::milliseconds(200));
        continue;
      }
      // Kafka's group gets a batch's positions only once PostgreSQL committed them.
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

}  // namespace trigd::engine_internal
