#include "log/topics.h"
#include "source_paths.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

namespace trigd {
namespace {

// Needs the real broker that tools/test starts; fails (never skips) when unreachable.
std::string Kafka() {
  const char* k = std::getenv("TRIGD_KAFKA");
  return k ? k : "127.0.0.1:9092";
}

std::string UniquePrefix() {
  return "test" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ".";
}

int PartitionCount(const std::string& topic) {
  char err[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", Kafka().c_str(), err, sizeof err);
  std::unique_ptr<rd_kafka_t, decltype(&rd_kafka_destroy)> rk(rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err),
                                                              &rd_kafka_destroy);
  const rd_kafka_metadata_t* md = nullptr;
  if (rd_kafka_metadata(rk.get(), 1, nullptr, &md, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR) return -1;
  int n = -1;
  for (int i = 0; i < md->topic_cnt; ++i) {
    if (topic == md->topics[i].topic && md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR)
      n = md->topics[i].partition_cnt;
  }
  rd_kafka_metadata_destroy(md);
  return n;
}

TEST(TopicsTest, ShippedDefinitionsLoadWithPrefix) {
  auto specs = LoadTopicSpecs(TRIGD_SOURCE_DIR "/topics", "trigd.");
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  std::vector<std::string> names;
  for (const auto& s : *specs) names.push_back(s.name);
  for (const char* want : {"trigd.events.data", "trigd.events.program", "trigd.events.time", "trigd.launch.default",
                           "trigd.dead", "trigd.control"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
}

TEST(TopicsTest, BadDefinitionNamesFileAndField) {
  auto dir = std::filesystem::temp_directory_path() / "trigd_bad_topics";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "t.json") << R"([{"name": "x", "partitions": 0}])";
  auto specs = LoadTopicSpecs(dir.string(), "p.");
  ASSERT_FALSE(specs.ok());
  EXPECT_EQ(specs.status().message(), "t.json[0].partitions: expected an integer >= 1");
}

TEST(TopicsTest, ReplicationFactorThreeAddsMinInsyncReplicasUnlessSet) {
  std::vector<TopicSpec> specs = {{"a", 4, {{"retention.ms", "1"}}}, {"b", 1, {{"min.insync.replicas", "3"}}}};
  ASSERT_TRUE(SetReplicationFactor(specs, 3).ok());
  EXPECT_EQ(specs[0].replication_factor, 3);
  EXPECT_EQ(specs[0].config,
            (std::vector<std::pair<std::string, std::string>>{{"retention.ms", "1"}, {"min.insync.replicas", "2"}}));
  EXPECT_EQ(specs[1].config, (std::vector<std::pair<std::string, std::string>>{{"min.insync.replicas", "3"}}));
  std::vector<TopicSpec> one = {{"c", 1, {}}};
  ASSERT_TRUE(SetReplicationFactor(one, 1).ok());
  EXPECT_EQ(one[0].replication_factor, 1);
  EXPECT_TRUE(one[0].config.empty());
  Status bad = SetReplicationFactor(one, 0);
  EXPECT_EQ(bad.message(), "--replication-factor: expected an integer from 1 to 32767, got 0");
}

TEST(TopicsTest, CreatesOnRealBrokerAndIsIdempotent) {
  auto specs = LoadTopicSpecs(TRIGD_SOURCE_DIR "/topics", UniquePrefix());
  ASSERT_TRUE(specs.ok());
  auto first = CreateTopics(Kafka(), *specs);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->size(), specs->size());
  for (const auto& c : *first) EXPECT_TRUE(c.created) << c.name;
  for (const auto& s : *specs) EXPECT_EQ(PartitionCount(s.name), s.partitions) << s.name;

  auto second = CreateTopics(Kafka(), *specs);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  for (const auto& c : *second) EXPECT_FALSE(c.created) << c.name;
}

TEST(TopicsTest, UnreachableBrokerIsUnavailable) {
  auto r = CreateTopics("127.0.0.1:1", {{"x", 1, {}}}, 2000);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
}

// trigctl events emit and lag look topics up first: a wrong --topic-prefix is named at once
// instead of a 10 s wait for a delivery report (emit) or an empty table (lag).
TEST(TopicsTest, MissingTopicsNamesOnlyTheAbsentOnes) {
  const std::string prefix = UniquePrefix();
  auto created = CreateTopics(Kafka(), {{prefix + "here", 1, {}}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto missing = MissingTopics(Kafka(), {prefix + "gone", prefix + "here", prefix + "also.gone"});
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_EQ(*missing, (std::vector<std::string>{prefix + "gone", prefix + "also.gone"}));
  // Asking does not create them (whatever the broker's auto.create.topics.enable).
  EXPECT_EQ(PartitionCount(prefix + "gone"), -1);
}

TEST(TopicsTest, MissingTopicsOfAnUnreachableBrokerIsUnavailable) {
  auto r = MissingTopics("127.0.0.1:1", {"x"}, 2000);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("cannot reach Kafka at 127.0.0.1:1"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace trigd
