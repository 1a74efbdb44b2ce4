// What the loop tests share: librdkafka's mock cluster with trigd's topics, and one engine loop
// on its own thread over a fake store (fake_engine_store.h).
#pragma once

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "app/engine_loops.h"
#include "fake_engine_store.h"

namespace trigd::testing {

using engine_internal::Clock;
using engine_internal::Shared;

constexpr int kPartitions = 2;

// A mock cluster with trigd's event topics (prefix "t."), a producer for them, and the group's
// committed offsets as Kafka holds them.
class MockKafka {
 public:
  MockKafka() {
    char err[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    cluster_ = rd_kafka_mock_cluster_new(rk_, 1);
    bootstraps_ = rd_kafka_mock_cluster_bootstraps(cluster_);
    for (const std::string& t : TopicNames("t.").Events())
      rd_kafka_mock_topic_create(cluster_, t.c_str(), kPartitions, 1);
  }
  ~MockKafka() {
    rd_kafka_mock_cluster_destroy(cluster_);
    rd_kafka_destroy(rk_);
  }
  MockKafka(const MockKafka&) = delete;
  MockKafka& operator=(const MockKafka&) = delete;
  const std::string& bootstraps() const { return bootstraps_; }
  rd_kafka_mock_cluster_t* cluster() { return cluster_; }
  void CreateTopic(const std::string& topic, int partitions) {
    rd_kafka_mock_topic_create(cluster_, topic.c_str(), partitions, 1);
  }

  void Produce(int n) {
    auto p = Producer::Create(bootstraps_);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    std::vector<OutMessage> out;
    for (int i = 0; i < n; ++i) out.push_back({"t.events.data", "k" + std::to_string(i), "{}"});
    for (bool ok : (*p)->ProduceAndWait(out, 10000)) ASSERT_TRUE(ok);
  }

  // The group's committed next offset per partition of t.events.data (-1: none).
  std::vector<int64_t> Committed(const std::string& group) {
    char err[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps_.c_str(), err, sizeof(err));
    rd_kafka_conf_set(conf, "group.id", group.c_str(), err, sizeof(err));
    rd_kafka_t* c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(kPartitions);
    for (int i = 0; i < kPartitions; ++i) rd_kafka_topic_partition_list_add(parts, "t.events.data", i);
    std::vector<int64_t> out(kPartitions, -2);
    if (rd_kafka_committed(c, parts, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      for (int i = 0; i < parts->cnt; ++i) out[parts->elems[i].partition] = parts->elems[i].offset;
    }
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_destroy(c);
    return out;
  }

  // The payloads on partition `partition` of `topic`, in offset order: all of them, up to the
  // partition's end (its high watermark) when called.
  std::vector<std::string> Read(const std::string& topic, int partition) {
    char err[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps_.c_str(), err, sizeof(err));
    rd_kafka_conf_set(conf, "group.id", "reader", err, sizeof(err));  // assigned, never committed
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof(err));
    rd_kafka_t* c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    int64_t low = 0, high = 0;
    std::vector<std::string> out;
    if (rd_kafka_query_watermark_offsets(c, topic.c_str(), partition, &low, &high, 10000) ==
        RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(1);
      rd_kafka_topic_partition_list_add(parts, topic.c_str(), partition)->offset = low;
      rd_kafka_assign(c, parts);
      rd_kafka_topic_partition_list_destroy(parts);
      int64_t next = low;
      const auto until = Clock::now() + std::chrono::seconds(10);
      while (next < high && Clock::now() < until) {
        rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 100);
        if (!m) continue;
        if (!m->err) {
          out.emplace_back(static_cast<const char*>(m->payload), m->len);
          next = m->offset + 1;
        }
        rd_kafka_message_destroy(m);
      }
    }
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    return out;
  }

 private:
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
  std::string bootstraps_;
};

// One engine loop (`loop`, given the loops' Shared) on its own thread over a fake store, until
// Stop.
class LoopHarness {
 public:
  LoopHarness(const std::string& bootstraps, FakeStoreState& st, std::function<void(Shared&)> loop,
              const std::string& instance_id = "") {
    config_.instance_id = instance_id;
    config_.kafka = bootstraps;
    config_.topic_prefix = "t.";
    config_.group = "g";
    shared_.reset(new Shared{config_, stop_, metrics_, FakeEngineStoreFactory(st), {}, {}});
    thread_ = std::thread([this, loop = std::move(loop)] { loop(*shared_); });
  }
  ~LoopHarness() { (void)Stop(); }
  LoopHarness(const LoopHarness&) = delete;
  LoopHarness& operator=(const LoopHarness&) = delete;
  // Waits up to 30 s for `done` (under the store's lock).
  static bool WaitFor(FakeStoreState& st, const std::function<bool()>& done) {
    const auto until = Clock::now() + std::chrono::seconds(30);
    while (Clock::now() < until) {
      {
        std::lock_guard<std::mutex> l(st.mu);
        if (done()) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  bool Halted() const { return shared_->halted.load(); }
  Metrics& metrics() { return metrics_; }
  Shared& shared() { return *shared_; }
  Status Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return shared_->why;
  }

 private:
  Config config_;
  std::atomic<bool> stop_{false};
  Metrics metrics_;
  std::unique_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace trigd::testing
