// A client whose brokers cannot be reached says so on stderr (trigd and trigd-worker started
// with a wrong --kafka ran forever without a word), and keeps retrying.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "log/kafka.h"

namespace trigd {
namespace {

// Polls `poll` for up to `within`, until stderr holds "cannot reach Kafka at <bootstrap>"; what
// stderr held then.
template <class Poll>
std::string StderrWhileUnreachable(const std::string& bootstrap, Poll poll,
                                   std::chrono::seconds within = std::chrono::seconds(10)) {
  testing::internal::CaptureStderr();
  const auto deadline = std::chrono::steady_clock::now() + within;
  std::string seen;
  while (std::chrono::steady_clock::now() < deadline) {
    poll();
    seen += testing::internal::GetCapturedStderr();
    testing::internal::CaptureStderr();
    if (seen.find("cannot reach Kafka at " + bootstrap) != std::string::npos) break;
  }
  seen += testing::internal::GetCapturedStderr();
  return seen;
}

TEST(KafkaUnreachableTest, ConsumerSaysItCannotReachKafkaAndRetries) {
  const std::string bootstrap = "127.0.0.1:1";
  auto consumer = Consumer::Create(bootstrap, "unreachable.group", {"unreachable.topic"},
                                   [](const std::vector<std::pair<std::string, int>>& parts) {
                                     return std::vector<std::optional<int64_t>>(parts.size(), std::nullopt);
                                   });
  ASSERT_TRUE(consumer.ok()) << consumer.status().ToString();
  MessageBatch batch;
  std::string err = StderrWhileUnreachable(bootstrap, [&] { (*consumer)->PollBatch(batch, 10, 200, 0); });
  // librdkafka's reason follows, e.g. "127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: ...".
  EXPECT_NE(err.find("cannot reach Kafka at 127.0.0.1:1: 127.0.0.1:1/bootstrap: "), std::string::npos) << err;
  EXPECT_NE(err.find("; retrying\n"), std::string::npos) << err;
  // One line, not one per error event (a connection error, then "1/1 brokers are down").
  std::string more = StderrWhileUnreachable(
      bootstrap, [&] { (*consumer)->PollBatch(batch, 10, 200, 0); }, std::chrono::seconds(3));
  EXPECT_EQ(more.find("cannot reach Kafka"), std::string::npos) << more;
  EXPECT_TRUE((*consumer)->FatalError().empty());
}

TEST(KafkaUnreachableTest, ProducerSaysItCannotReachKafka) {
  const std::string bootstrap = "127.0.0.1:1";
  auto producer = Producer::Create(bootstrap);
  ASSERT_TRUE(producer.ok()) << producer.status().ToString();
  std::vector<bool> ok;
  std::string err = StderrWhileUnreachable(bootstrap, [&] {
    ok = (*producer)->ProduceAndWait({{"unreachable.topic", "k", "v"}}, 1000);
  });
  EXPECT_NE(err.find("cannot reach Kafka at 127.0.0.1:1: "), std::string::npos) << err;
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_FALSE(ok[0]);
}

}  // namespace
}  // namespace trigd
