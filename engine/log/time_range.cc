#include "log/time_range.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <tuple>

#include <librdkafka/rdkafkacpp.h>

#include "log/kafka_internal.h"
#include "log/topics.h"

namespace trigd {
namespace {

struct PartitionRead {
  int64_t start = 0;
  int64_t end = 0;  // high watermark when the read began
  int64_t low = 0;
  bool done = false;
  bool first = true;
};

}  // namespace

Result<RangeRead> ReadTimeRange(const KafkaConfig& kafka, const std::vector<std::string>& topics, TimePoint from,
                                TimePoint to, int timeout_ms, const std::function<void(size_t)>& progress,
                                int64_t max_messages) {
  auto missing = MissingTopics(kafka, topics, timeout_ms);
  if (!missing.ok()) return missing.status();
  if (!missing->empty()) return NotFound(NoSuchTopics(*missing, kafka));
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string err;
  // A group id only because librdkafka's KafkaConsumer requires one: partitions are assigned by
  // hand, so the consumer never joins the group, and it commits nothing.
  kafka_internal::Settings settings = kafka_internal::ConsumerOwned();
  settings.insert(
      settings.end(),
      {{"group.id", "trigd-replay-unused"}, {"enable.auto.commit", "false"}, {"enable.auto.offset.store", "false"}});
  if (Status s = kafka_internal::Configure(conf->c_ptr_global(), kafka,
                                           {{"fetch.wait.max.ms", "50"}, {"log_level", "2"}}, settings);
      !s.ok()) {
    return s;
  }
  std::unique_ptr<RdKafka::KafkaConsumer> consumer(RdKafka::KafkaConsumer::create(conf.get(), err));
  if (!consumer) return Invalid("consumer: " + kafka.Redact(err));
  const auto unreachable = [&](const std::string& what, RdKafka::ErrorCode e) {
    return Unavailable("cannot reach Kafka at " + kafka.bootstrap + " (" + what + "): " + RdKafka::err2str(e));
  };
  std::map<std::pair<std::string, int>, PartitionRead> parts;
  std::vector<RdKafka::TopicPartition*> lookup;
  struct Owned {
    std::vector<RdKafka::TopicPartition*>& v;
    ~Owned() {
      for (auto* p : v) delete p;
    }
  } owned{lookup};
  RangeRead out;
  // Kafka's timestamps start at 1970 and a negative one asks for a special offset (-1 the end,
  // -2 the start; others fail as "API version not supported"): a `from` before 1970 asks for the
  // first message at or after 0, the earliest one left.
  const int64_t lookup_time = std::max<int64_t>(0, std::chrono::duration_cast<Millis>(from.time_since_epoch()).count());
  for (const std::string& topic : topics) {
    std::unique_ptr<RdKafka::Topic> handle(RdKafka::Topic::create(consumer.get(), topic, nullptr, err));
    if (!handle) return Internal("topic " + topic + ": " + err);
    RdKafka::Metadata* raw = nullptr;
    if (auto e = consumer->metadata(false, handle.get(), &raw, timeout_ms); e != RdKafka::ERR_NO_ERROR) {
      return unreachable("metadata of " + topic, e);
    }
    std::unique_ptr<RdKafka::Metadata> md(raw);
    for (const auto* t : *md->topics()) {
      if (t->topic() != topic) continue;
      for (const auto* p : *t->partitions()) {
        ++out.partitions;
        PartitionRead& r = parts[{topic, static_cast<int>(p->id())}];
        if (auto e = consumer->query_watermark_offsets(topic, p->id(), &r.low, &r.end, timeout_ms);
            e != RdKafka::ERR_NO_ERROR) {
          return unreachable("watermarks of " + topic + "/" + std::to_string(p->id()), e);
        }
        lookup.push_back(RdKafka::TopicPartition::create(topic, p->id(), lookup_time));
      }
    }
  }
  if (!lookup.empty()) {
    if (auto e = consumer->offsetsForTimes(lookup, timeout_ms); e != RdKafka::ERR_NO_ERROR) {
      return unreachable("offsets for " + FormatTime(from), e);
    }
  }
  std::vector<RdKafka::TopicPartition*> assign;
  struct OwnedAssign {
    std::vector<RdKafka::TopicPartition*>& v;
    ~OwnedAssign() {
      for (auto* p : v) delete p;
    }
  } owned_assign{assign};
  for (const auto* tp : lookup) {
    PartitionRead& r = parts[{tp->topic(), tp->partition()}];
    // No message at or after `from` (offset -1, the end): nothing of this partition is in range.
    r.start = tp->offset() < 0 ? r.end : tp->offset();
    r.done = r.start >= r.end;
    if (!r.done) assign.push_back(RdKafka::TopicPartition::create(tp->topic(), tp->partition(), r.start));
  }
  // Counted from the offsets before anything is read: each partition's messages from `from` to
  // the first after `to` (offsetsForTimes again), or to its end.
  int64_t in_range = 0;
  {
    const int64_t to_time = std::max<int64_t>(0, std::chrono::duration_cast<Millis>(to.time_since_epoch()).count() + 1);
    std::vector<RdKafka::TopicPartition*> until;
    struct OwnedUntil {
      std::vector<RdKafka::TopicPartition*>& v;
      ~OwnedUntil() {
        for (auto* p : v) delete p;
      }
    } owned_until{until};
    for (const auto* tp : assign)
      until.push_back(RdKafka::TopicPartition::create(tp->topic(), tp->partition(), to_time));
    if (!until.empty()) {
      if (auto e = consumer->offsetsForTimes(until, timeout_ms); e != RdKafka::ERR_NO_ERROR) {
        return unreachable("offsets for " + FormatTime(to), e);
      }
    }
    for (const auto* tp : until) {
      const PartitionRead& r = parts[{tp->topic(), tp->partition()}];
      const int64_t stop = tp->offset() < 0 ? r.end : std::min(tp->offset(), r.end);
      in_range += std::max<int64_t>(0, stop - r.start);
    }
  }
  if (in_range > max_messages) {
    return Invalid("the range holds up to " + std::to_string(in_range) + " messages from " + FormatTime(from) +
                   ", more than the limit of " + std::to_string(max_messages) +
                   " a replay reads into memory: replay a later --from or an earlier --to");
  }
  if (assign.empty()) return out;
  if (auto e = consumer->assign(assign); e != RdKafka::ERR_NO_ERROR) return Internal("assign: " + RdKafka::err2str(e));
  size_t left = assign.size();
  auto last_message = std::chrono::steady_clock::now();
  while (left > 0) {
    std::unique_ptr<RdKafka::Message> m(consumer->consume(100));
    if (m->err() == RdKafka::ERR__TIMED_OUT || m->err() == RdKafka::ERR__PARTITION_EOF) {
      if (std::chrono::steady_clock::now() - last_message > std::chrono::milliseconds(timeout_ms)) {
        return Unavailable("cannot reach Kafka at " + kafka.bootstrap + ": no message for " +
                           std::to_string(timeout_ms) + " ms while " + std::to_string(left) +
                           " partition(s) were not read to the end of the range");
      }
      continue;
    }
    if (m->err() != RdKafka::ERR_NO_ERROR) continue;  // a fetch error: retried by librdkafka
    last_message = std::chrono::steady_clock::now();
    auto it = parts.find({m->topic_name(), m->partition()});
    if (it == parts.end() || it->second.done) continue;
    PartitionRead& r = it->second;
    const TimePoint log_time = TimePoint(Millis(m->timestamp().timestamp));
    if (r.first) {
      r.first = false;
      // The read starts at the oldest message kept, older ones were deleted, and that message
      // is newer than `from`: the range lost its beginning to retention.
      if (m->offset() == r.low && r.low > 0 && log_time > from)
        out.cut.push_back({m->topic_name(), m->partition(), log_time});
    }
    if (log_time > to) {
      r.done = true;
    } else {
      out.messages.push_back({m->topic_name(), m->partition(), m->offset(), log_time,
                              std::string(static_cast<const char*>(m->payload()), m->len())});
      if (progress && out.messages.size() % 65536 == 0) progress(out.messages.size());
      if (m->offset() + 1 >= r.end) r.done = true;
    }
    if (r.done) --left;
  }
  consumer->close();
  return out;
}

}  // namespace trigd
