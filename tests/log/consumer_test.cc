#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "log/kafka.h"
#include "log/topics.h"

namespace trigd {
namespace {

// Needs the real broker that tools/test starts; fails (never skips) when unreachable.
std::string Kafka() {
  const char* k = std::getenv("TRIGD_KAFKA");
  return k ? k : "127.0.0.1:9092";
}

// PollBatch's first wait is honoured even when it is a single millisecond: the ingest loop polls
// with 1 ms while a batch commits, and a wait rounded down to 0 made it spin on the consumer
// (half of a core in clock_gettime, and the commit it was waiting for starved). 200 polls of an
// empty topic must therefore take at least 200 ms; a lower bound only, so a slow machine cannot
// fail it.
TEST(ConsumerTest, OneMillisecondFirstWaitIsWaited) {
  const std::string topic =
      "test" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ".empty";
  auto created = CreateTopics(Kafka(), {{topic, 1, {}}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto consumer = Consumer::Create(Kafka(), topic + ".group", {topic},
                                   [](const std::vector<std::pair<std::string, int>>& parts) {
                                     return std::vector<std::optional<int64_t>>(parts.size(), std::nullopt);
                                   });
  ASSERT_TRUE(consumer.ok()) << consumer.status().ToString();
  MessageBatch batch;
  constexpr int kPolls = 200;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kPolls; ++i) {
    (*consumer)->PollBatch(batch, 100, 1, 0);
    EXPECT_TRUE(batch.empty());
  }
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(kPolls))
      << "200 polls with a 1 ms wait returned after "
      << std::chrono::duration_cast<std::chrono::microseconds>(waited).count() << " us";
}

}  // namespace
}  // namespace trigd
