#include "log/kafka.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <tuple>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include "common/log.h"
#include "common/time.h"
#include "log/kafka_internal.h"
#include "log/topics.h"

namespace trigd {

MessageBatch& MessageBatch::operator=(MessageBatch&& other) noexcept {
  if (this != &other) {
    Clear();
    messages_ = std::move(other.messages_);
    other.messages_.clear();
  }
  return *this;
}

MessageView MessageBatch::operator[](size_t i) const {
  const rd_kafka_message_t* m = messages_[i];
  MessageView view;
  view.topic = rd_kafka_topic_name(m->rkt);
  view.partition = m->partition;
  view.offset = m->offset;
  if (m->key) view.key = std::string_view(static_cast<const char*>(m->key), m->key_len);
  if (m->payload) view.value = std::string_view(static_cast<const char*>(m->payload), m->len);
  return view;
}

void MessageBatch::Clear() {
  for (rd_kafka_message_t* m : messages_) rd_kafka_message_destroy(m);
  messages_.clear();
}

namespace {

// Says on stderr when a client cannot reach Kafka. librdkafka reconnects on its own and the
// process keeps running (a broker restart must not stop trigd), but in silence: log_level 2
// hides librdkafka's own logs, and trigd started with a wrong --kafka would run forever without
// a word. librdkafka raises its error events in the thread that polls the client.
//
// The line is written once every broker is down (ALL_BROKERS_DOWN), with the reason of the last
// connection error, and again on later connection errors while they stay down, at most once per
// kEvery per client. A connection error alone says little: one broker of several, or a
// bootstrap address no longer needed, going away leaves Kafka reachable.
//
// A failure that retrying cannot cure (wrong credentials, a certificate that does not verify, a
// denied principal: kafka_internal::Refusals) is said at once, and Why() returns it: the
// client's owner stops instead of retrying in silence. Everything librdkafka says passes
// through KafkaConfig::Redact first.
class BrokerWatch : public RdKafka::EventCb {
 public:
  static constexpr auto kEvery = std::chrono::seconds(30);

  // `in_group`: false for a consumer that only assigns partitions by hand; librdkafka still
  // looks up its group's coordinator, which a principal without a group ACL is refused: not a
  // refusal of this client.
  explicit BrokerWatch(const KafkaConfig& kafka, bool in_group = true)
      : bootstrap_(kafka.bootstrap), kafka_(kafka), in_group_(in_group) {}

  void event_cb(RdKafka::Event& e) override {
    if (e.type() == RdKafka::Event::EVENT_LOG) {
      // Up to the user's level (2, critical ones, unless the file says otherwise): librdkafka
      // logs up to kWatchedLogLevel here, for the connection failures only its logs tell.
      if (kafka_internal::IsProtocolHint(e.str())) Report(RdKafka::ERR__TRANSPORT, e.str());
      if (static_cast<int>(e.severity()) <= kafka_.LogLevel()) {
        LogLine(kafka_.Redact("kafka: " + e.fac() + ": " + e.str()));
      }
      return;
    }
    if (e.type() != RdKafka::Event::EVENT_ERROR) return;
    Report(static_cast<int>(e.err()), e.str());
    if (e.err() == RdKafka::ERR__TRANSPORT || e.err() == RdKafka::ERR__RESOLVE) {
      reason_ = kafka_.Redact(e.str());  // e.g. "127.0.0.1:9099/bootstrap: Connect to ipv4#127.0.0.1:9099 failed: ..."
    } else if (e.err() == RdKafka::ERR__ALL_BROKERS_DOWN) {
      down_ = true;
      if (reason_.empty()) reason_ = kafka_.Redact(e.str());  // "1/1 brokers are down"
    } else {
      return;  // fatal errors reach the caller through LastError and FatalError
    }
    const auto now = std::chrono::steady_clock::now();
    if (!down_ || (said_ && now - said_at_ < kEvery)) return;
    said_ = true;
    said_at_ = now;
    LogLine("cannot reach Kafka at " + bootstrap_ + ": " + reason_ + "; retrying");
  }

  // An error of librdkafka's, from an error event or a consumed message's error.
  void Report(int err, const std::string& text) {
    if (!in_group_ && err == RdKafka::ERR_GROUP_AUTHORIZATION_FAILED) return;
    refusals_.Report(static_cast<rd_kafka_resp_err_t>(err), kafka_.Redact(text));
    if (std::string why = refusals_.Why(); !why.empty() && !said_refusal_.exchange(true)) LogLine(why);
  }

  // Not empty once the broker refused this client for good (Refusals::Why).
  std::string Why() const { return refusals_.Why(); }

  // The client just heard from the broker (a delivery report, a message, an assignment):
  // librdkafka has no event for brokers that are back.
  void Reachable() {
    refusals_.Reached();
    if (down_.exchange(false)) {
      reason_.clear();
      LogLine("Kafka at " + bootstrap_ + " reachable again");
    }
  }

 private:
  const std::string bootstrap_;
  const KafkaConfig kafka_;
  const bool in_group_;
  kafka_internal::Refusals refusals_;
  std::atomic<bool> said_refusal_{false};
  std::atomic<bool> down_{false};  // since ALL_BROKERS_DOWN, until Reachable
  std::string reason_;             // the last connection error
  bool said_ = false;
  std::chrono::steady_clock::time_point said_at_;
};

// Errors after which the same message can never be delivered: re-sending it is pointless.
bool IsPermanentProduceError(RdKafka::ErrorCode err) {
  switch (err) {
    case RdKafka::ERR_MSG_SIZE_TOO_LARGE:
    case RdKafka::ERR_INVALID_MSG_SIZE:
    case RdKafka::ERR_RECORD_LIST_TOO_LARGE:
    case RdKafka::ERR_INVALID_RECORD:
    case RdKafka::ERR_POLICY_VIOLATION:
    case RdKafka::ERR_TOPIC_EXCEPTION:
    case RdKafka::ERR_TOPIC_AUTHORIZATION_FAILED:
    case RdKafka::ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RdKafka::ERR_INVALID_MSG: return true;
    default: return false;
  }
}

class DeliveryCollector : public RdKafka::DeliveryReportCb {
 public:
  void dr_cb(RdKafka::Message& m) override {
    auto* index = static_cast<size_t*>(m.msg_opaque());
    if (index && *index < ok.size()) {
      ok[*index] = (m.err() == RdKafka::ERR_NO_ERROR);
      refused[*index] = IsPermanentProduceError(m.err());
    }
    if (m.err() != RdKafka::ERR_NO_ERROR && last_error.empty()) last_error = m.errstr();
    ++reported;
  }
  std::vector<bool> ok;
  std::vector<bool> refused;
  size_t reported = 0;
  std::string last_error;
};

class RdProducer : public Producer {
 public:
  std::vector<bool> ProduceAndWait(const std::vector<OutMessage>& messages, int timeout_ms) override {
    dr_.ok.assign(messages.size(), false);
    dr_.refused.assign(messages.size(), false);
    dr_.reported = 0;
    dr_.last_error.clear();
    std::vector<size_t> indexes(messages.size());
    size_t queued = 0;
    for (size_t i = 0; i < messages.size(); ++i) {
      indexes[i] = i;
      const OutMessage& m = messages[i];
      RdKafka::ErrorCode err;
      while (true) {
        err = producer_->produce(m.topic, RdKafka::Topic::PARTITION_UA, RdKafka::Producer::RK_MSG_COPY,
                                 const_cast<char*>(m.value.data()), m.value.size(),
                                 m.key.empty() ? nullptr : m.key.data(), m.key.size(), 0, &indexes[i]);
        if (err != RdKafka::ERR__QUEUE_FULL) break;
        producer_->poll(10);
      }
      if (err == RdKafka::ERR_NO_ERROR) {
        ++queued;
        continue;
      }
      dr_.refused[i] = IsPermanentProduceError(err);
      if (dr_.last_error.empty()) {
        // Refused before it was queued (too large, unknown topic): no delivery report follows.
        dr_.last_error = RdKafka::err2str(err) + " (" + m.topic + ", " + std::to_string(m.value.size()) + " bytes)";
      }
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (dr_.reported < queued && std::chrono::steady_clock::now() < deadline) producer_->poll(5);
    if (std::find(dr_.ok.begin(), dr_.ok.end(), true) != dr_.ok.end()) watch_->Reachable();
    return dr_.ok;
  }

  std::string LastError() override {
    if (std::string why = watch_->Why(); !why.empty()) return why;
    std::string fatal;
    if (producer_->fatal_error(fatal) != RdKafka::ERR_NO_ERROR) return "fatal: " + fatal;
    return dr_.last_error.empty() ? "no delivery report in time" : dr_.last_error;
  }

  const std::vector<bool>& Refused() const override { return dr_.refused; }

  std::unique_ptr<BrokerWatch> watch_;  // declared first: outlives the producer, which calls it
  std::unique_ptr<RdKafka::Producer> producer_;
  DeliveryCollector dr_;
};

class Rebalancer : public RdKafka::RebalanceCb {
 public:
  Rebalancer(OffsetLookup lookup, BrokerWatch& watch) : lookup_(std::move(lookup)), watch_(watch) {}
  void rebalance_cb(RdKafka::KafkaConsumer* c, RdKafka::ErrorCode err,
                    std::vector<RdKafka::TopicPartition*>& parts) override {
    // Cooperative (dynamic members) hands over only the partitions that change owner; eager
    // (static members) revokes and assigns the whole assignment each round.
    const bool cooperative = c->rebalance_protocol() == "COOPERATIVE";
    if (err == RdKafka::ERR__ASSIGN_PARTITIONS) {
      watch_.Reachable();
      Position(c, parts);
      if (cooperative) {
        c->incremental_assign(parts);
      } else {
        c->assign(parts);
        assigned_.clear();
      }
      for (auto* p : parts) assigned_.emplace_back(p->topic(), p->partition());
    } else if (cooperative) {
      c->incremental_unassign(parts);
      for (auto* p : parts) {
        std::erase(assigned_, std::make_pair(p->topic(), static_cast<int>(p->partition())));
      }
    } else {
      c->unassign();
      assigned_.clear();
    }
    // One line per change of ownership: when a partition is not consumed, the log says since when
    // no instance held it.
    std::string which;
    for (auto* p : parts)
      which += (which.empty() ? "" : ", ") + p->topic() + "[" + std::to_string(p->partition()) + "]";
    if (which.empty()) which = "no partitions";  // a rebalance that moved none of this member's
    LogLine(std::string("consumer: ") + (err == RdKafka::ERR__ASSIGN_PARTITIONS ? "assigned " : "revoked ") + which +
            " (" + std::to_string(assigned_.size()) + " held)");
  }
  // Positions come from the caller's store, never from Kafka's committed offsets.
  void Position(RdKafka::KafkaConsumer* c, std::vector<RdKafka::TopicPartition*>& parts) {
    std::vector<std::pair<std::string, int>> keys;
    for (auto* p : parts) keys.emplace_back(p->topic(), p->partition());
    auto offsets = lookup_(keys);
    bool ask_broker = c != nullptr;  // until a query fails: one timeout at most per assignment
    for (size_t i = 0; i < parts.size(); ++i) {
      int64_t offset = i < offsets.size() && offsets[i] ? *offsets[i] : Beginning(c, *parts[i], ask_broker);
      parts[i]->set_offset(offset == kCommittedOffset ? RdKafka::Topic::OFFSET_STORED : offset);
      if (offset >= 0) started_at_[keys[i]] = offset;
    }
  }
  // The beginning of a partition as a concrete offset (its low watermark), asked of the broker
  // now. librdkafka 2.0 resolves the logical OFFSET_BEGINNING itself, but a partition whose
  // leader it has not learnt yet when the assignment starts (usual right after a group join)
  // waits for its 500 ms offset-query timer: the other partitions are consumed alone meanwhile,
  // and the consumer then idles 200-300 ms with nothing fetched
  // (docs/adr/0041-new-partitions-start-at-their-low-watermark.md). This query waits for the
  // leader instead (about a millisecond a partition, at assignment only). Should it fail,
  // librdkafka resolves the logical offset itself, for
  // this partition and the assignment's others (`ask_broker` is cleared: the rebalance callback
  // waits for one timeout at most, well inside the group's session timeout); an offset that
  // retention removes in between is reset to the earliest (auto.offset.reset), as the logical
  // one would be.
  static int64_t Beginning(RdKafka::KafkaConsumer* c, const RdKafka::TopicPartition& p, bool& ask_broker) {
    int64_t low = 0, high = 0;
    if (ask_broker) {
      if (c->query_watermark_offsets(p.topic(), p.partition(), &low, &high, 2000) == RdKafka::ERR_NO_ERROR &&
          low >= 0) {
        return low;
      }
      ask_broker = false;
    }
    return RdKafka::Topic::OFFSET_BEGINNING;
  }
  OffsetLookup lookup_;
  BrokerWatch& watch_;
  std::vector<std::pair<std::string, int>> assigned_;
  // Where each partition was positioned (Position), for Lag until a message is consumed.
  std::map<std::pair<std::string, int>, int64_t> started_at_;
};

class RdConsumer : public Consumer {
 public:
  std::vector<Message> Poll(size_t max_messages, int first_wait_ms, int linger_ms) override {
    MessageBatch batch;
    PollBatch(batch, max_messages, first_wait_ms, linger_ms);
    std::vector<Message> out;
    out.reserve(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      MessageView m = batch[i];
      out.push_back({std::string(m.topic), m.partition, m.offset, std::string(m.key), std::string(m.value)});
    }
    return out;
  }

  // rd_kafka_consume_batch_queue on the consumer's queue, only ever from this thread and in
  // sequence with Rewind's seeks and the rebalance callback (which it serves), as librdkafka
  // 2.0's batch API requires; it drops messages a seek or an assignment made outdated.
  void PollBatch(MessageBatch& out, size_t max_messages, int first_wait_ms, int linger_ms) override {
    out.Clear();
    std::vector<rd_kafka_message_t*>& kept = Messages(out);
    if (max_messages == 0) return;
    buffer_.resize(max_messages);
    // The first message: a batch of one returns as soon as it arrives.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(first_wait_ms);
    while (kept.empty()) {
      // Rounded up: truncated, the 0.99 ms left of a 1 ms wait became 0, a poll that returns at
      // once, and the ingest loop spun (half of a core in clock_gettime while a batch committed).
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      const int wait = static_cast<int>(std::max<int64_t>(0, left.count()));
      if (Keep(rd_kafka_consume_batch_queue(queue_, wait, buffer_.data(), 1), kept)) return;
      if (wait == 0) break;
    }
    if (!kept.empty()) watch_->Reachable();
    if (kept.empty() || kept.size() >= max_messages) return;
    // Then more for up to linger_ms: at once when librdkafka has them queued already.
    Keep(rd_kafka_consume_batch_queue(queue_, linger_ms, buffer_.data(), max_messages - kept.size()), kept);
  }

  void Rewind() override {
    std::vector<RdKafka::TopicPartition*> parts;
    for (const auto& [t, p] : rebalancer_->assigned_) parts.push_back(RdKafka::TopicPartition::create(t, p));
    rebalancer_->Position(consumer_.get(), parts);
    // seek, not assign: under cooperative rebalancing the assignment only changes through
    // incremental_assign in the rebalance callback.
    for (auto* p : parts) {
      if (p->offset() >= 0 || p->offset() == RdKafka::Topic::OFFSET_BEGINNING) consumer_->seek(*p, 5000);
      delete p;
    }
  }

  void CommitKafka(const std::vector<Message>& batch) override {
    std::map<std::pair<std::string, int>, int64_t> next;
    for (const auto& m : batch) next[{m.topic, m.partition}] = m.offset + 1;
    std::vector<PartitionOffset> offsets;
    for (const auto& [tp, off] : next) offsets.push_back({tp.first, tp.second, off});
    CommitKafka(offsets);
  }

  void CommitKafka(const std::vector<PartitionOffset>& offsets) override {
    if (offsets.empty()) return;
    std::vector<RdKafka::TopicPartition*> parts;
    for (const PartitionOffset& o : offsets) {
      auto* p = RdKafka::TopicPartition::create(o.topic, o.partition);
      p->set_offset(o.next_offset);
      parts.push_back(p);
    }
    consumer_->commitAsync(parts);
    for (auto* p : parts) delete p;
  }

  void StoreOffset(const Message& m) override {
    std::vector<RdKafka::TopicPartition*> parts{RdKafka::TopicPartition::create(m.topic, m.partition, m.offset + 1)};
    consumer_->offsets_store(parts);  // ERR__STATE for a partition no longer assigned: nothing to commit
    delete parts[0];
  }

  std::vector<PartitionLag> Lag() override {
    std::vector<PartitionLag> out;
    std::vector<RdKafka::TopicPartition*> parts;
    for (const auto& [t, p] : rebalancer_->assigned_) parts.push_back(RdKafka::TopicPartition::create(t, p));
    consumer_->position(parts);
    for (auto* p : parts) {
      int64_t low = 0, high = 0;
      // No position until a message is consumed after the assignment: the offset it was
      // positioned at then (counting from the low watermark would show an idle partition's whole
      // size as lag); none known (positioned at its beginning by librdkafka): skipped
      // (docs/adr/0036-lag-metric-per-held-partition.md).
      int64_t pos = p->offset();
      if (pos < 0) {
        auto started = rebalancer_->started_at_.find({p->topic(), p->partition()});
        if (started != rebalancer_->started_at_.end()) pos = started->second;
      }
      if (pos >= 0 &&
          consumer_->get_watermark_offsets(p->topic(), p->partition(), &low, &high) == RdKafka::ERR_NO_ERROR &&
          high >= 0) {
        out.push_back({p->topic(), p->partition(), high, std::max<int64_t>(0, high - pos)});
      }
      delete p;
    }
    return out;
  }

  std::string FatalError() override {
    if (std::string refused = watch_->Why(); !refused.empty()) return refused;
    std::string why;
    if (consumer_->fatal_error(why) == RdKafka::ERR_NO_ERROR) return "";
    return why.empty() ? "fatal error" : why;
  }

  std::vector<std::pair<std::string, int>> Assignment() override { return rebalancer_->assigned_; }

  Result<std::vector<PartitionRange>> AssignedRanges(const std::string& topic, int timeout_ms) override {
    std::vector<PartitionRange> out;
    for (const auto& [t, p] : rebalancer_->assigned_) {
      if (t != topic) continue;
      int64_t low = 0, high = 0;
      if (auto e = consumer_->query_watermark_offsets(t, p, &low, &high, timeout_ms); e != RdKafka::ERR_NO_ERROR) {
        return Unavailable("watermarks of " + t + "/" + std::to_string(p) + ": " + RdKafka::err2str(e));
      }
      out.push_back({t, p, low, high});
    }
    return out;
  }

  ~RdConsumer() override {
    if (queue_) rd_kafka_queue_destroy(queue_);
    if (consumer_) consumer_->close();
  }

  // Keeps the messages of a batch call that carry one; true when the consumer hit a fatal
  // error (no point waiting for more).
  bool Keep(ssize_t n, std::vector<rd_kafka_message_t*>& kept) {
    bool fatal = false;
    for (ssize_t i = 0; i < n; ++i) {
      rd_kafka_message_t* m = buffer_[i];
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        kept.push_back(m);
      } else {
        // A consumer's errors come as messages: a denied group or topic among them.
        watch_->Report(m->err, rd_kafka_message_errstr(m));
        fatal = fatal || m->err == RD_KAFKA_RESP_ERR__FATAL || !watch_->Why().empty();
        rd_kafka_message_destroy(m);
      }
    }
    return fatal;
  }

  std::unique_ptr<BrokerWatch> watch_;  // declared first: outlives the consumer, which calls it
  std::unique_ptr<Rebalancer> rebalancer_;
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  rd_kafka_queue_t* queue_ = nullptr;  // the consumer group's queue (messages and rebalances)
  std::vector<rd_kafka_message_t*> buffer_;
};

// A librdkafka configuration as kafka_internal::Configure builds it.
Result<std::unique_ptr<RdKafka::Conf>> NewConf(const KafkaConfig& kafka, const kafka_internal::Settings& tunables,
                                               const kafka_internal::Settings& owned) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  if (Status s = kafka_internal::Configure(conf->c_ptr_global(), kafka, tunables, owned); !s.ok()) return s;
  // Every client made here has a BrokerWatch, which filters the logs to the user's level.
  if (Status s = kafka_internal::WatchConnectionLogs(conf->c_ptr_global(), kafka); !s.ok()) return s;
  return conf;
}

class RdTopicReader : public TopicReader {
 public:
  std::vector<Message> Poll(size_t max_messages, int wait_ms) override {
    std::vector<Message> out;
    while (out.size() < max_messages) {
      std::unique_ptr<RdKafka::Message> m(consumer_->consume(out.empty() ? wait_ms : 0));
      if (m->err() == RdKafka::ERR__TIMED_OUT) break;
      if (m->err() != RdKafka::ERR_NO_ERROR) {
        watch_->Report(m->err(), m->errstr());  // a denied topic is said; others are retried by librdkafka
        continue;
      }
      watch_->Reachable();
      next_[m->partition()] = m->offset() + 1;
      out.push_back({m->topic_name(), m->partition(), m->offset(), m->key() ? *m->key() : std::string(),
                     std::string(static_cast<const char*>(m->payload()), m->len())});
    }
    return out;
  }

  bool CaughtUp() override {
    for (const auto& [partition, end] : end_) {
      auto it = next_.find(partition);
      if (it == next_.end() || it->second < end) {
        // Nothing returned yet, or not up to the end: the position tells (an offset reset past
        // messages deleted by retention moves it without a message).
        std::vector<RdKafka::TopicPartition*> parts{RdKafka::TopicPartition::create(topic_, partition)};
        consumer_->position(parts);
        const int64_t pos = parts[0]->offset();
        delete parts[0];
        if (pos < end) return false;
        next_[partition] = pos;
      }
    }
    return true;
  }

  ~RdTopicReader() override {
    if (consumer_) consumer_->close();
  }

  std::string topic_;
  std::unique_ptr<BrokerWatch> watch_;  // outlives the consumer, which calls it
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  std::map<int, int64_t> end_;   // partition: its end when the reader was created (empty ones left out)
  std::map<int, int64_t> next_;  // partition: the offset after the last message returned
};

}  // namespace

Result<std::unique_ptr<Producer>> Producer::Create(const KafkaConfig& kafka) {
  auto p = std::make_unique<RdProducer>();
  p->watch_ = std::make_unique<BrokerWatch>(kafka);
  // linger.ms 0: callers produce a whole batch at once and then wait for its delivery reports
  // (the relay), so waiting for more only adds to every launch's latency; messages queued
  // while a request is in flight still go out together.
  auto made = NewConf(kafka, {{"linger.ms", "0"}, {"log_level", "2"}}, kafka_internal::ProducerOwned());
  if (!made.ok()) return made.status();
  std::unique_ptr<RdKafka::Conf> conf = std::move(*made);
  std::string err;
  conf->set("dr_cb", &p->dr_, err);
  conf->set("event_cb", static_cast<RdKafka::EventCb*>(p->watch_.get()), err);
  p->producer_.reset(RdKafka::Producer::create(conf.get(), err));
  if (!p->producer_) return Invalid("producer: " + kafka.Redact(err));
  return std::unique_ptr<Producer>(std::move(p));
}

Result<std::unique_ptr<Consumer>> Consumer::Create(const KafkaConfig& kafka, const std::string& group,
                                                   const std::vector<std::string>& topics, OffsetLookup lookup,
                                                   const ConsumerOptions& options) {
  auto c = std::make_unique<RdConsumer>();
  c->watch_ = std::make_unique<BrokerWatch>(kafka);
  c->rebalancer_ = std::make_unique<Rebalancer>(std::move(lookup), *c->watch_);
  kafka_internal::Settings tunables = {{"session.timeout.ms", "6000"},
                                       {"heartbeat.interval.ms", "1000"},
                                       {"fetch.wait.max.ms", "10"},
                                       {"log_level", "2"}};
  kafka_internal::Settings owned = kafka_internal::ConsumerOwned();
  owned.emplace_back("group.id", group);
  // librdkafka (2.0) stops fetching once its local queue holds queued.min.messages (counted
  // over the whole consumer queue) and looks again only at its next one-second wake-up: a
  // consumer that is slower than the fetcher, even slightly, drains the queue and then waits
  // for the rest of that second. trigd's ingest parses every event, so under a backlog it is
  // that consumer: with the default (100,000) it idled more than half the time. A deeper queue
  // holds about a second of events, bounded in bytes by queued.max.messages.kbytes too (the same
  // stop applies when that is reached).
  if (options.prefetch_messages > 0)
    tunables.emplace_back("queued.min.messages", std::to_string(options.prefetch_messages));
  if (options.prefetch_kbytes > 0)
    tunables.emplace_back("queued.max.messages.kbytes", std::to_string(options.prefetch_kbytes));
  if (options.commit_stored_every_ms > 0) {
    owned.insert(owned.end(), {{"enable.auto.commit", "true"},
                               {"enable.auto.offset.store", "false"},
                               {"auto.commit.interval.ms", std::to_string(options.commit_stored_every_ms)}});
  } else {
    owned.emplace_back("enable.auto.commit", "false");
  }
  // Dynamic members rebalance cooperatively: only the partitions that change owner move, so the
  // other instances keep consuming while a killed one's partitions are handed over. That takes
  // two rounds (the first takes the partitions from their owner, the second gives them to their
  // new one), and a static member restarted between them is handed its cached first-round
  // assignment without a rebalance: the partitions in transit would stay unowned until the
  // group's next rebalance, which may never come (docs/adr/0175-static-members-rebalance-eagerly.md).
  // Static members therefore rebalance eagerly, where every round hands out every partition;
  // their restarts cause no rebalance at all, which is what they are for.
  if (options.instance_id.empty()) {
    owned.emplace_back("partition.assignment.strategy", "cooperative-sticky");
  } else {
    owned.emplace_back("partition.assignment.strategy", "roundrobin");
    owned.emplace_back("group.instance.id", options.instance_id);
  }
  auto made = NewConf(kafka, tunables, owned);
  if (!made.ok()) return made.status();
  std::unique_ptr<RdKafka::Conf> conf = std::move(*made);
  std::string err;
  conf->set("rebalance_cb", c->rebalancer_.get(), err);
  conf->set("event_cb", static_cast<RdKafka::EventCb*>(c->watch_.get()), err);
  c->consumer_.reset(RdKafka::KafkaConsumer::create(conf.get(), err));
  if (!c->consumer_) return Invalid("consumer: " + kafka.Redact(err));
  c->queue_ = rd_kafka_queue_get_consumer(c->consumer_->c_ptr());
  if (auto e = c->consumer_->subscribe(topics); e != RdKafka::ERR_NO_ERROR) {
    return Unavailable("subscribe: " + RdKafka::err2str(e));
  }
  return std::unique_ptr<Consumer>(std::move(c));
}

Result<std::unique_ptr<TopicReader>> TopicReader::Create(const KafkaConfig& kafka, const std::string& topic,
                                                         int timeout_ms) {
  auto r = std::make_unique<RdTopicReader>();
  r->topic_ = topic;
  r->watch_ = std::make_unique<BrokerWatch>(kafka, /*in_group=*/false);
  // A group id only because librdkafka's KafkaConsumer requires one: partitions are assigned by
  // hand (assign), so the consumer never joins the group, and it commits nothing.
  kafka_internal::Settings owned = kafka_internal::ConsumerOwned();
  owned.insert(
      owned.end(),
      {{"group.id", "trigd-reader-unused"}, {"enable.auto.commit", "false"}, {"enable.auto.offset.store", "false"}});
  auto made = NewConf(kafka, {{"fetch.wait.max.ms", "100"}, {"log_level", "2"}}, owned);
  if (!made.ok()) return made.status();
  std::unique_ptr<RdKafka::Conf> conf = std::move(*made);
  std::string err;
  conf->set("event_cb", static_cast<RdKafka::EventCb*>(r->watch_.get()), err);
  r->consumer_.reset(RdKafka::KafkaConsumer::create(conf.get(), err));
  if (!r->consumer_) return Invalid("consumer: " + kafka.Redact(err));
  auto missing = MissingTopics(kafka, {topic}, timeout_ms);
  if (!missing.ok()) return missing.status();
  if (!missing->empty()) return NotFound(NoSuchTopics(*missing, kafka));
  std::unique_ptr<RdKafka::Topic> handle(RdKafka::Topic::create(r->consumer_.get(), topic, nullptr, err));
  if (!handle) return Internal("topic " + topic + ": " + err);
  RdKafka::Metadata* raw = nullptr;
  if (auto e = r->consumer_->metadata(false, handle.get(), &raw, timeout_ms); e != RdKafka::ERR_NO_ERROR) {
    return Unavailable("cannot reach Kafka at " + kafka.bootstrap + ": " + RdKafka::err2str(e));
  }
  std::unique_ptr<RdKafka::Metadata> md(raw);
  std::vector<RdKafka::TopicPartition*> parts;
  for (const auto* t : *md->topics()) {
    if (t->topic() != topic) continue;
    for (const auto* p : *t->partitions()) {
      int64_t low = 0, high = 0;
      if (auto e = r->consumer_->query_watermark_offsets(topic, p->id(), &low, &high, timeout_ms);
          e != RdKafka::ERR_NO_ERROR) {
        for (auto* q : parts) delete q;
        return Unavailable("watermarks of " + topic + "/" + std::to_string(p->id()) + ": " + RdKafka::err2str(e));
      }
      if (high > low) r->end_[p->id()] = high;
      parts.push_back(RdKafka::TopicPartition::create(topic, p->id(), RdKafka::Topic::OFFSET_BEGINNING));
    }
  }
  const RdKafka::ErrorCode assigned = r->consumer_->assign(parts);
  for (auto* p : parts) delete p;
  if (assigned != RdKafka::ERR_NO_ERROR) return Internal("assign " + topic + ": " + RdKafka::err2str(assigned));
  return std::unique_ptr<TopicReader>(std::move(r));
}

}  // namespace trigd

namespace trigd {

Result<std::vector<PartitionLag>> QueryEndOffsets(const KafkaConfig& kafka, const std::vector<std::string>& topics,
                                                  int timeout_ms) {
  // A producer handle for metadata and watermarks only: it sends no message (not idempotent,
  // which would ask for a producer id that a reader's principal is refused).
  auto made = NewConf(kafka, {{"log_level", "2"}}, {});
  if (!made.ok()) return made.status();
  std::unique_ptr<RdKafka::Conf> conf = std::move(*made);
  BrokerWatch watch(kafka);
  std::string err;
  conf->set("event_cb", static_cast<RdKafka::EventCb*>(&watch), err);
  std::unique_ptr<RdKafka::Producer> handle(RdKafka::Producer::create(conf.get(), err));
  if (!handle) return Invalid("kafka handle: " + kafka.Redact(err));
  RdKafka::Metadata* raw = nullptr;
  if (auto e = handle->metadata(true, nullptr, &raw, timeout_ms); e != RdKafka::ERR_NO_ERROR) {
    handle->poll(0);  // the error events that say why
    if (std::string why = watch.Why(); !why.empty()) return Invalid(why);
    return Unavailable("cannot reach Kafka at " + kafka.bootstrap + ": " + RdKafka::err2str(e));
  }
  std::unique_ptr<RdKafka::Metadata> md(raw);
  std::vector<PartitionLag> out;
  for (const std::string& topic : topics) {
    for (const auto* t : *md->topics()) {
      if (t->topic() != topic || t->err() != RdKafka::ERR_NO_ERROR) continue;
      for (const auto* p : *t->partitions()) {
        int64_t low = 0, high = 0;
        if (auto e = handle->query_watermark_offsets(topic, p->id(), &low, &high, timeout_ms);
            e != RdKafka::ERR_NO_ERROR) {
          return Unavailable("watermarks of " + topic + ": " + RdKafka::err2str(e));
        }
        out.push_back({topic, static_cast<int>(p->id()), high, 0});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const PartitionLag& a, const PartitionLag& b) {
    return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
  });
  return out;
}

}  // namespace trigd

namespace trigd {

namespace {

// A consumer of `group` that never subscribes: it reads and writes the group's offsets only.
Result<std::unique_ptr<RdKafka::KafkaConsumer>> GroupHandle(const KafkaConfig& kafka, const std::string& group) {
  kafka_internal::Settings owned = kafka_internal::ConsumerOwned();
  owned.insert(owned.end(), {{"group.id", group}, {"enable.auto.commit", "false"}});
  auto made = NewConf(kafka, {{"log_level", "2"}}, owned);
  if (!made.ok()) return made.status();
  std::string err;
  std::unique_ptr<RdKafka::KafkaConsumer> c(RdKafka::KafkaConsumer::create(made->get(), err));
  if (!c) return Internal("kafka consumer: " + kafka.Redact(err));
  return c;
}

std::vector<std::unique_ptr<RdKafka::TopicPartition>> Partitions(const std::vector<PartitionOffset>& offsets) {
  std::vector<std::unique_ptr<RdKafka::TopicPartition>> out;
  for (const PartitionOffset& o : offsets) {
    out.emplace_back(RdKafka::TopicPartition::create(o.topic, o.partition, o.next_offset));
  }
  return out;
}

std::vector<RdKafka::TopicPartition*> Raw(const std::vector<std::unique_ptr<RdKafka::TopicPartition>>& parts) {
  std::vector<RdKafka::TopicPartition*> raw;
  for (const auto& p : parts) raw.push_back(p.get());
  return raw;
}

}  // namespace

Result<std::vector<std::optional<int64_t>>> QueryGroupOffsets(const KafkaConfig& kafka, const std::string& group,
                                                              const std::vector<std::pair<std::string, int>>& parts,
                                                              int timeout_ms) {
  auto c = GroupHandle(kafka, group);
  if (!c.ok()) return c.status();
  std::vector<PartitionOffset> asked;
  for (const auto& [topic, partition] : parts) asked.push_back({topic, partition, 0});
  auto owned = Partitions(asked);
  auto raw = Raw(owned);
  if (auto e = (*c)->committed(raw, timeout_ms); e != RdKafka::ERR_NO_ERROR) {
    (*c)->close();
    return Unavailable("offsets of group " + group + " at " + kafka.bootstrap + ": " + RdKafka::err2str(e));
  }
  std::vector<std::optional<int64_t>> out;
  for (auto* p : raw) {
    out.push_back(p->err() == RdKafka::ERR_NO_ERROR && p->offset() >= 0 ? std::optional<int64_t>(p->offset())
                                                                        : std::nullopt);
  }
  (*c)->close();
  return out;
}

Status CommitGroupOffsets(const KafkaConfig& kafka, const std::string& group,
                          const std::vector<PartitionOffset>& offsets) {
  auto c = GroupHandle(kafka, group);
  if (!c.ok()) return c.status();
  auto owned = Partitions(offsets);
  auto raw = Raw(owned);
  RdKafka::ErrorCode e = (*c)->commitSync(raw);
  Status s;
  if (e != RdKafka::ERR_NO_ERROR) {
    // A group with members refuses a commit from outside it: a trigd still runs.
    const std::string m = "commit to group " + group + ": " + RdKafka::err2str(e);
    s = e == RdKafka::ERR_UNKNOWN_MEMBER_ID ? Invalid(m + " (a trigd is still a member: stop every instance first)")
                                            : Unavailable(m);
  } else {
    for (auto* p : raw) {
      if (p->err() != RdKafka::ERR_NO_ERROR) {
        s = Unavailable("commit to group " + group + ": " + p->topic() + "[" + std::to_string(p->partition()) +
                        "]: " + RdKafka::err2str(p->err()));
        break;
      }
    }
  }
  (*c)->close();
  return s;
}

}  // namespace trigd
