// Reading the event topics over a range of time, for the what-if replay (SPEC §12): every
// partition from Kafka's offset for `from` (offsetsForTimes, by the messages' log timestamps)
// up to the first message after `to`, or the partition's end as it was when the read began.
// Outside any consumer group: no membership, no commits; it produces nothing. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "log/kafka_config.h"

namespace trigd {

struct RangeMessage {
  std::string topic;
  int partition = 0;
  int64_t offset = 0;
  TimePoint log_time;  // the message's Kafka timestamp
  std::string value;
};

// A partition whose oldest kept message is newer than `from`, with messages already deleted
// (retention): what lies between `from` and `earliest` is gone.
struct RetentionCut {
  std::string topic;
  int partition = 0;
  TimePoint earliest;
};

struct RangeRead {
  std::vector<RangeMessage> messages;  // per partition in offset order, partitions one after another
  std::vector<RetentionCut> cut;
  size_t partitions = 0;  // every partition of the topics
};

// The most messages one replay reads into memory (several GB of events at their usual size).
inline constexpr int64_t kMaxRangeMessages = 10'000'000;

// kNotFound naming the topics the broker lacks; kUnavailable when it cannot be reached within
// timeout_ms (or stops answering for that long mid-read); kInvalid, before any message is read,
// when the offsets from `from` to the partitions' ends hold more than `max_messages`.
// `progress` (when set) is called now and then with the number of messages read so far.
Result<RangeRead> ReadTimeRange(const KafkaConfig& kafka, const std::vector<std::string>& topics, TimePoint from,
                                TimePoint to, int timeout_ms = 10000,
                                const std::function<void(size_t)>& progress = nullptr,
                                int64_t max_messages = kMaxRangeMessages);

}  // namespace trigd
