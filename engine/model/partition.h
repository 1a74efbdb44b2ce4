// Where a Kafka partition's messages lie, in the words both adapters use (the Kafka adapter
// reads it from the broker, the PostgreSQL adapter compares it with committed positions).
#pragma once

#include <cstdint>
#include <string>

namespace trigd {

// A partition's extent: its first offset still held (low watermark) and the offset after its
// last message (high watermark).
struct PartitionRange {
  std::string topic;
  int partition = 0;
  int64_t begin = 0;
  int64_t end = 0;
};

}  // namespace trigd
