// Thin librdkafka adapters: a producer that waits for delivery reports, and a consumer whose
// positions come from the caller (trigd keeps offsets in PostgreSQL). Not thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "log/kafka_config.h"
#include "model/partition.h"

struct rd_kafka_message_s;

namespace trigd {

struct Message {
  std::string topic;
  int partition = 0;
  int64_t offset = 0;
  std::string key;
  std::string value;
};

// A consumed message seen in place: views into librdkafka's buffers, valid while the
// MessageBatch that holds it lives.
struct MessageView {
  std::string_view topic;
  int partition = 0;
  int64_t offset = 0;
  std::string_view key;
  std::string_view value;
};

// Messages consumed by Consumer::PollBatch, owned (librdkafka's buffers, no copies) until the
// batch is cleared, refilled or destroyed. Move-only; not thread-safe.
class MessageBatch {
 public:
  MessageBatch() = default;
  MessageBatch(const MessageBatch&) = delete;
  MessageBatch& operator=(const MessageBatch&) = delete;
  MessageBatch(MessageBatch&& other) noexcept : messages_(std::move(other.messages_)) { other.messages_.clear(); }
  MessageBatch& operator=(MessageBatch&& other) noexcept;
  ~MessageBatch() { Clear(); }

  size_t size() const { return messages_.size(); }
  bool empty() const { return messages_.empty(); }
  MessageView operator[](size_t i) const;
  // Releases the messages (their buffers go back to librdkafka).
  void Clear();

 private:
  friend class Consumer;
  std::vector<rd_kafka_message_s*> messages_;
};

// Where a partition's consumption got to: the offset after the last message consumed.
struct PartitionOffset {
  std::string topic;
  int partition = 0;
  int64_t next_offset = 0;
};

struct PartitionLag {
  std::string topic;
  int partition = 0;
  int64_t end_offset = 0;  // high watermark
  int64_t lag = 0;         // end_offset - position (engine) or unused (QueryEndOffsets)
};

struct OutMessage {
  std::string topic;
  std::string key;
  std::string value;
};

class Producer {
 public:
  // Idempotent producer (enable.idempotence, acks=all): a retry inside one session never
  // duplicates, and a confirmed message is on every in-sync replica. kInvalid: a configuration
  // librdkafka refuses.
  static Result<std::unique_ptr<Producer>> Create(const KafkaConfig& kafka);
  virtual ~Producer() = default;
  // Produces all messages and waits for their delivery reports; returns one ok flag per
  // message (true: the broker confirmed it).
  virtual std::vector<bool> ProduceAndWait(const std::vector<OutMessage>& messages, int timeout_ms) = 0;
  // Why the last ProduceAndWait left messages unconfirmed ("fatal: ..." when the idempotent
  // producer hit a fatal error: the caller must create a new producer; the broker's refusal,
  // as RefusedConnection says it, when it refused the client's credentials, certificate or
  // principal).
  virtual std::string LastError() = 0;
  // One flag per message of the last ProduceAndWait: true when the broker or the client refused
  // it for good (too large, an invalid record, a policy), so sending it again cannot help.
  virtual const std::vector<bool>& Refused() const = 0;
};

// Called on assignment with the partitions assigned; returns the offset to start each at
// (std::nullopt: start at the beginning of the partition; kCommittedOffset: resume at the
// group's offset committed in Kafka, or the beginning when it has none).
inline constexpr int64_t kCommittedOffset = -1000;
using OffsetLookup =
    std::function<std::vector<std::optional<int64_t>>(const std::vector<std::pair<std::string, int>>&)>;

// How a consumer joins its group and how far librdkafka fetches ahead of it.
struct ConsumerOptions {
  // How much librdkafka may fetch ahead of the caller (queued.min.messages and
  // queued.max.messages.kbytes; 0: librdkafka's defaults, 100,000 messages and 64 MiB).
  size_t prefetch_messages = 0;
  size_t prefetch_kbytes = 0;
  // Static group membership (group.instance.id, KIP-345) when not empty: a member restarted
  // with the same id within the session timeout takes its partitions back without a rebalance,
  // and the group's other members go on undisturbed. A static member does not leave the group
  // when it closes: its partitions wait for the session timeout before they move. Two live
  // members with the same id fence the older one (FatalError).
  std::string instance_id;
  // When > 0, librdkafka commits the offsets the caller stores (Consumer::StoreOffset) itself
  // (enable.auto.commit, enable.auto.offset.store off): every commit_stored_every_ms while the
  // group is stable and only when one moved, those of partitions revoked just before they go
  // (librdkafka hands them over once the commit is answered), and all of them on close; none
  // while the group rebalances or after the assignment was lost. For trigd-worker, whose
  // positions are Kafka's: a commit the caller sends itself while the group rebalances is
  // refused (ILLEGAL_GENERATION) and librdkafka then drops the whole assignment as lost.
  int commit_stored_every_ms = 0;
};

class Consumer {
 public:
  static Result<std::unique_ptr<Consumer>> Create(const KafkaConfig& kafka, const std::string& group,
                                                  const std::vector<std::string>& topics, OffsetLookup lookup,
                                                  const ConsumerOptions& options = {});
  virtual ~Consumer() = default;
  // Up to max_messages: waits up to first_wait_ms for the first, then linger_ms for more.
  // Copies every message (see PollBatch for the hot path).
  virtual std::vector<Message> Poll(size_t max_messages, int first_wait_ms, int linger_ms) = 0;
  // The same into `out` (cleared first), without copying: librdkafka's batch consume.
  virtual void PollBatch(MessageBatch& out, size_t max_messages, int first_wait_ms, int linger_ms) = 0;
  // Re-positions every assigned partition from the lookup (after an aborted batch).
  virtual void Rewind() = 0;
  // Stores offsets in Kafka's group too (for `trigctl lag` and worker groups).
  virtual void CommitKafka(const std::vector<Message>& batch) = 0;
  virtual void CommitKafka(const std::vector<PartitionOffset>& offsets) = 0;
  // Marks `m` done with, for ConsumerOptions::commit_stored_every_ms: its partition is
  // committed past it at the next commit. Ignored when the partition is no longer assigned.
  virtual void StoreOffset(const Message& m) = 0;
  // Messages behind the end of each assigned partition, from the consumer's position and
  // librdkafka's cached high watermark (no broker round trip).
  virtual std::vector<PartitionLag> Lag() = 0;
  // The extent of each assigned partition of `topic`, asked of the broker now (a round trip per
  // partition, not librdkafka's cached watermarks, which go stale while the broker cannot be
  // reached). kUnavailable when a partition's leader does not answer within timeout_ms.
  virtual Result<std::vector<PartitionRange>> AssignedRanges(const std::string& topic, int timeout_ms) = 0;
  // Not empty once the consumer hit a fatal error (e.g. fenced by a newer member with the same
  // instance id) or the broker refused it for good (wrong credentials, a certificate that does
  // not verify, a denied group or topic): it consumes nothing more, and must be replaced or the
  // process stopped.
  virtual std::string FatalError() = 0;
  // The partitions this consumer holds, as (topic, partition), as of its last poll.
  virtual std::vector<std::pair<std::string, int>> Assignment() = 0;

 protected:
  static std::vector<rd_kafka_message_s*>& Messages(MessageBatch& batch) { return batch.messages_; }
};

// Every partition of one topic, read from its beginning outside any consumer group (no
// membership, no commits, no rebalance): for a topic that each process reads whole, as every
// worker reads the control topic. Partitions added to the topic after Create are not read.
class TopicReader {
 public:
  // kNotFound (NoSuchTopics' message) when the broker has no such topic; kUnavailable when it
  // cannot be reached within timeout_ms.
  static Result<std::unique_ptr<TopicReader>> Create(const KafkaConfig& kafka, const std::string& topic,
                                                     int timeout_ms = 5000);
  virtual ~TopicReader() = default;
  // Up to max_messages: waits up to wait_ms for the first, then takes those already fetched.
  virtual std::vector<Message> Poll(size_t max_messages, int wait_ms) = 0;
  // True once Poll returned every message the topic held when the reader was created.
  virtual bool CaughtUp() = 0;
};

// The next offsets `group` holds in Kafka for `parts`, in their order (nullopt: none), asked of
// the group's coordinator without joining it. kUnavailable when it cannot be reached.
Result<std::vector<std::optional<int64_t>>> QueryGroupOffsets(const KafkaConfig& kafka, const std::string& group,
                                                              const std::vector<std::pair<std::string, int>>& parts,
                                                              int timeout_ms = 5000);

// Commits `offsets` to `group` from outside it (no member may be active: Kafka refuses a commit
// from a non-member to a group with members: kInvalid saying so).
Status CommitGroupOffsets(const KafkaConfig& kafka, const std::string& group,
                          const std::vector<PartitionOffset>& offsets);

// End offsets (high watermarks) of every partition of `topics`, asked of the broker.
// kUnavailable when it cannot be reached within timeout_ms, kInvalid when it refuses the client
// (credentials, certificate); a missing topic is skipped.
Result<std::vector<PartitionLag>> QueryEndOffsets(const KafkaConfig& kafka, const std::vector<std::string>& topics,
                                                  int timeout_ms = 5000);

}  // namespace trigd
