#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include "log/kafka.h"
#include "log/time_range.h"
#include "log/topics.h"

namespace trigd {
namespace {

// Needs the real broker that tools/test starts; fails (never skips) when unreachable.
std::string Kafka() {
  const char* k = std::getenv("TRIGD_KAFKA");
  return k ? k : "127.0.0.1:9092";
}

// PollBatch's first wait is honoured even when it is a single millisecond: the ingest loop polls
// with 1 ms while a batch commits, and a wait rounded down to 0 would make it spin on the consumer
// (half of a core in clock_gettime, and the commit it waits for starved). 200 polls of an
// empty topic must therefore take at least 200 ms; a lower bound only, so a slow machine cannot
// fail it.
TEST(ConsumerTest, OneMillisecondFirstWaitIsWaited) {
  const std::string topic =
      "test" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ".empty";
  auto created = CreateTopics(Kafka(), {{topic, 1, {}}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto consumer =
      Consumer::Create(Kafka(), topic + ".group", {topic}, [](const std::vector<std::pair<std::string, int>>& parts) {
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

using Assigned = std::vector<std::pair<std::string, int>>;

std::string UniqueTopic(const std::string& what) {
  return "test" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "." + what;
}

std::unique_ptr<Consumer> StaticMember(const std::string& topic, const std::string& instance) {
  ConsumerOptions options;
  options.instance_id = instance;
  auto c = Consumer::Create(
      Kafka(), topic + ".group", {topic},
      [](const std::vector<std::pair<std::string, int>>& parts) {
        return std::vector<std::optional<int64_t>>(parts.size(), std::nullopt);
      },
      options);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

Assigned Sorted(Assigned a) {
  std::sort(a.begin(), a.end());
  return a;
}

// Polls every consumer in turn (a rebalance is served inside a poll) until `done` holds or 30 s
// pass; `each` runs after every round.
template <class Done, class Each>
bool PollUntil(const std::vector<Consumer*>& consumers, Done done, Each each) {
  MessageBatch batch;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    for (Consumer* c : consumers) c->PollBatch(batch, 10, 50, 0);
    each();
    if (done()) return true;
  }
  return false;
}

// Deletes the records of `topic` partition 0 before `before` (Kafka's DeleteRecords, as
// retention does): the partition's first offset becomes `before`.
void DeleteRecordsBefore(const std::string& topic, int64_t before) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  ASSERT_EQ(rd_kafka_conf_set(conf, "bootstrap.servers", Kafka().c_str(), err, sizeof err), RD_KAFKA_CONF_OK) << err;
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  ASSERT_NE(rk, nullptr) << err;
  rd_kafka_topic_partition_list_t* offsets = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(offsets, topic.c_str(), 0)->offset = before;
  rd_kafka_DeleteRecords_t* del = rd_kafka_DeleteRecords_new(offsets);
  rd_kafka_topic_partition_list_destroy(offsets);
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_DeleteRecords(rk, &del, 1, nullptr, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 15000);
  ASSERT_NE(ev, nullptr) << "no DeleteRecords result within 15 s";
  EXPECT_EQ(rd_kafka_event_error(ev), RD_KAFKA_RESP_ERR_NO_ERROR) << rd_kafka_event_error_string(ev);
  const rd_kafka_topic_partition_list_t* done =
      rd_kafka_DeleteRecords_result_offsets(rd_kafka_event_DeleteRecords_result(ev));
  ASSERT_TRUE(done && done->cnt == 1);
  EXPECT_EQ(done->elems[0].err, RD_KAFKA_RESP_ERR_NO_ERROR) << rd_kafka_err2str(done->elems[0].err);
  rd_kafka_event_destroy(ev);
  rd_kafka_DeleteRecords_destroy(del);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
}

// A partition without a stored position starts at its beginning, which the consumer asks the
// broker for (the low watermark) instead of leaving the logical offset to librdkafka (whose
// offset query waits 500 ms for a partition whose leader it has not learnt yet). After
// DeleteRecords the beginning is not offset 0: the first record consumed is the first one
// left, and every one after it comes, once each, in order.
// A one-partition topic holding m0..m9 at offsets 0..9.
void CreateWithTenRecords(const std::string& topic) {
  auto created = CreateTopics(Kafka(), {{topic, 1, {}}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto producer = Producer::Create(Kafka());
  ASSERT_TRUE(producer.ok()) << producer.status().ToString();
  std::vector<OutMessage> out;
  for (int i = 0; i < 10; ++i) out.push_back({topic, "k", "m" + std::to_string(i)});
  std::vector<bool> ok = (*producer)->ProduceAndWait(out, 15000);
  ASSERT_EQ(std::count(ok.begin(), ok.end(), true), 10) << (*producer)->LastError();
}

TEST(ConsumerTest, PartitionWithoutPositionStartsAtItsFirstRemainingRecord) {
  const std::string topic = UniqueTopic("beginning");
  ASSERT_NO_FATAL_FAILURE(CreateWithTenRecords(topic));
  DeleteRecordsBefore(topic, 4);

  auto consumer =
      Consumer::Create(Kafka(), topic + ".group", {topic}, [](const std::vector<std::pair<std::string, int>>& parts) {
        return std::vector<std::optional<int64_t>>(parts.size(), std::nullopt);
      });
  ASSERT_TRUE(consumer.ok()) << consumer.status().ToString();
  std::vector<Message> got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (got.size() < 6 && std::chrono::steady_clock::now() < deadline) {
    for (Message& m : (*consumer)->Poll(100, 100, 0)) got.push_back(std::move(m));
  }
  ASSERT_EQ(got.size(), 6u) << "consumed " << got.size() << " of the 6 records left within 30 s";
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].offset, static_cast<int64_t>(4 + i));
    EXPECT_EQ(got[i].value, "m" + std::to_string(4 + i));
  }
}

// A partition positioned at its stored offset and idle since has no lag: trigd_consumer_lag
// counts from where it was positioned, not from the low watermark (which would show its whole
// size as lag while nothing is consumed).
TEST(ConsumerTest, AnIdlePartitionPositionedAtItsEndHasNoLag) {
  const std::string topic = UniqueTopic("lag");
  ASSERT_NO_FATAL_FAILURE(CreateWithTenRecords(topic));
  auto consumer =
      Consumer::Create(Kafka(), topic + ".group", {topic}, [](const std::vector<std::pair<std::string, int>>& parts) {
        return std::vector<std::optional<int64_t>>(parts.size(), int64_t{10});
      });
  ASSERT_TRUE(consumer.ok()) << consumer.status().ToString();
  std::vector<PartitionLag> lag;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  MessageBatch batch;
  while (lag.empty() && std::chrono::steady_clock::now() < deadline) {
    (*consumer)->PollBatch(batch, 100, 100, 0);
    EXPECT_TRUE(batch.empty());
    lag = (*consumer)->Lag();
  }
  ASSERT_EQ(lag.size(), 1u) << "no lag reported within 30 s";
  EXPECT_EQ(lag[0].end_offset, 10);
  EXPECT_EQ(lag[0].lag, 0);
}

// Static membership (--instance-id): an instance killed and restarted within the session
// timeout takes its own partitions back, and the other instance is not disturbed at all (no
// revocation, no extra partitions). With dynamic membership the closing member leaves the group
// and the other one takes its partitions at once (checked: this test fails then).
TEST(ConsumerTest, RestartedStaticMemberTakesItsPartitionsBackWithoutMovingTheOthers) {
  const std::string topic = UniqueTopic("static");
  auto created = CreateTopics(Kafka(), {{topic, 4, {}}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto a = StaticMember(topic, "instance-a");
  auto b = StaticMember(topic, "instance-b");
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(PollUntil(
      {a.get(), b.get()},
      [&] {
        return !a->Assignment().empty() && !b->Assignment().empty() &&
               a->Assignment().size() + b->Assignment().size() == 4;
      },
      [] {}))
      << "the two members never shared the 4 partitions";
  const Assigned a_before = Sorted(a->Assignment()), b_before = Sorted(b->Assignment());

  a.reset();  // closes without leaving the group, as a killed process would
  // Down for 2 s (the session timeout is 6 s): a dynamic member would have left the group, and
  // b would hold all four partitions by now.
  bool b_moved = false;
  MessageBatch batch;
  for (auto down_until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
       std::chrono::steady_clock::now() < down_until;) {
    b->PollBatch(batch, 10, 50, 0);
    b_moved = b_moved || Sorted(b->Assignment()) != b_before;
  }
  EXPECT_FALSE(b_moved) << "the other member took partitions while its peer was down";
  auto restarted = StaticMember(topic, "instance-a");
  ASSERT_TRUE(restarted);
  ASSERT_TRUE(PollUntil(
      {restarted.get(), b.get()}, [&] { return !restarted->Assignment().empty(); },
      [&] { b_moved = b_moved || Sorted(b->Assignment()) != b_before; }))
      << "the restarted member got no partitions back";
  EXPECT_EQ(Sorted(restarted->Assignment()), a_before);
  EXPECT_FALSE(b_moved) << "the other member's partitions changed while its peer restarted";
  EXPECT_EQ(Sorted(b->Assignment()), b_before);
  EXPECT_EQ(restarted->FatalError(), "");
}

// A static member killed between the two rounds of a rebalance: its restart must not freeze the
// group with partitions that no member holds. Member b holds all four partitions when a joins;
// b is then not polled (as if it hung, then was killed) for 3 s, the rebalance's first round,
// and restarted with its instance id within the session timeout. With cooperative-sticky the
// first round takes two partitions from b and gives a none; b's restart is handed that cached
// round-one assignment without a rebalance, and the second round, which would give a the two,
// never comes: this test fails then (two partitions unowned for good). Every partition must be
// held by one of the two within 30 s.
TEST(ConsumerTest, StaticMemberKilledMidRebalanceLeavesNoPartitionUnowned) {
  const std::string topic = UniqueTopic("midrebalance");
  auto created = CreateTopics(Kafka(), {{topic, 4, {}}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto b = StaticMember(topic, "instance-b");
  ASSERT_TRUE(b);
  ASSERT_TRUE(PollUntil(
      {b.get()}, [&] { return b->Assignment().size() == 4; }, [] {}))
      << "the first member never held the 4 partitions";
  auto a = StaticMember(topic, "instance-a");
  ASSERT_TRUE(a);
  MessageBatch batch;
  // A fixed window, not a wait for a condition: what must happen in it (b's first round, in
  // librdkafka's background) shows in no state the test can read without polling b.
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
       std::chrono::steady_clock::now() < until;) {
    a->PollBatch(batch, 10, 50, 0);
  }
  b.reset();  // closes without leaving the group, as a killed process would
  auto restarted = StaticMember(topic, "instance-b");
  ASSERT_TRUE(restarted);
  EXPECT_TRUE(PollUntil(
      {a.get(), restarted.get()}, [&] { return a->Assignment().size() + restarted->Assignment().size() == 4; }, [] {}))
      << "partitions held after 30 s: " << a->Assignment().size() << " by a, " << restarted->Assignment().size()
      << " by the restarted b, of 4";
  EXPECT_EQ(restarted->FatalError(), "");
}

// Two live consumers with the same instance id: the newer one fences the older, which reports a
// fatal error (trigd then stops with a message naming --instance-id) instead of consuming on.
TEST(ConsumerTest, SecondMemberWithTheSameInstanceIdFencesTheFirst) {
  const std::string topic = UniqueTopic("fenced");
  auto created = CreateTopics(Kafka(), {{topic, 2, {}}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto first = StaticMember(topic, "same-id");
  ASSERT_TRUE(first);
  ASSERT_TRUE(PollUntil(
      {first.get()}, [&] { return !first->Assignment().empty(); }, [] {}));
  EXPECT_EQ(first->FatalError(), "");
  auto second = StaticMember(topic, "same-id");
  ASSERT_TRUE(second);
  EXPECT_TRUE(PollUntil(
      {second.get(), first.get()}, [&] { return !first->FatalError().empty(); }, [] {}))
      << "the older member with the same instance id was not fenced";
  EXPECT_NE(first->FatalError().find("ence"), std::string::npos) << first->FatalError();
}

// ReadTimeRange (the what-if replay's reader): every record from Kafka's offset for `from`, and a
// beginning lost to retention named with the earliest time left.
TEST(TimeRangeTest, ReadsTheRangeAndNamesABeginningLostToRetention) {
  const std::string topic = UniqueTopic("range");
  ASSERT_NO_FATAL_FAILURE(CreateWithTenRecords(topic));
  const TimePoint now = std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now());
  const TimePoint long_ago = now - std::chrono::hours(1);
  auto whole = ReadTimeRange(Kafka(), {topic}, long_ago, now + std::chrono::minutes(1));
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  ASSERT_EQ(whole->messages.size(), 10u);
  EXPECT_EQ(whole->messages[0].value, "m0");
  EXPECT_TRUE(whole->cut.empty());

  DeleteRecordsBefore(topic, 3);
  auto cut = ReadTimeRange(Kafka(), {topic}, long_ago, now + std::chrono::minutes(1));
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  ASSERT_EQ(cut->messages.size(), 7u);
  EXPECT_EQ(cut->messages[0].value, "m3");
  ASSERT_EQ(cut->cut.size(), 1u);
  EXPECT_EQ(cut->cut[0].topic, topic);
  EXPECT_EQ(cut->cut[0].earliest, cut->messages[0].log_time);

  // A range after the last record holds nothing; `to` before `from`'s records stops at once.
  auto later = ReadTimeRange(Kafka(), {topic}, now + std::chrono::minutes(1), now + std::chrono::minutes(2));
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_TRUE(later->messages.empty());
  auto before = ReadTimeRange(Kafka(), {topic}, long_ago, long_ago + std::chrono::minutes(1));
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_TRUE(before->messages.empty());
}

TEST(TimeRangeTest, AMissingTopicIsNamed) {
  const std::string topic = UniqueTopic("missing");
  const TimePoint now = std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now());
  auto r = ReadTimeRange(Kafka(), {topic}, now - std::chrono::hours(1), now);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find(topic), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace trigd
