// Routing (core/event_router.h): one message at a time, and a batch with the index prefetched
// ahead, which must decide exactly as the one-at-a-time routing does.
#include "core/event_router.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace trigd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Partition(const std::string& id, const std::string& dataset) {
  return R"({"id":")" + id + R"(","type":"partition","time":"2026-11-22T10:00:00Z","payload":{"dataset":")" + dataset +
         R"(","partitions":["dt=2026-11-22"]}})";
}
std::string Program(const std::string& program, const std::string& run_id) {
  return R"({"id":"p-1","type":"program","time":"2026-11-22T10:00:00Z","payload":{"program":")" + program +
         R"(","run_id":")" + run_id + R"(","status":"succeeded","attempt":1}})";
}
std::string Tick(const std::string& id, const std::string& schedule) {
  return R"({"id":")" + id + R"(","type":"tick","time":"2026-11-22T10:00:00Z","payload":{"schedule":")" + schedule +
         R"(","fire_time":"2026-11-22T10:00:00Z"}})";
}

ScheduleIndex TestIndex() {
  ScheduleIndex index;
  index.Put(1, {"partition:feed.a"});
  index.Put(2, {"partition:feed.a", "program:train"});
  index.Put(3, {"time:ml/nightly"});
  return index;
}

std::vector<int64_t> Ids(std::span<const int64_t> ids) { return {ids.begin(), ids.end()}; }

TEST(EventRouterTest, EachKindOfMessageIsRoutedAsIngestionNeedsIt) {
  const ScheduleIndex index = TestIndex();
  std::string key;

  RoutedEvent match = RouteEvent(Partition("e-1", "feed.a"), index, key);
  ASSERT_EQ(match.kind, RoutedEvent::Kind::kMatch);
  EXPECT_THAT(Ids(match.schedules), testing::UnorderedElementsAre(1, 2));
  ASSERT_TRUE(match.event.has_value());
  EXPECT_EQ(match.event->id, "e-1");
  EXPECT_EQ(match.event->partition.dataset, "feed.a");

  RoutedEvent none = RouteEvent(Partition("e-2", "feed.b"), index, key);
  EXPECT_EQ(none.kind, RoutedEvent::Kind::kNoMatch);
  EXPECT_EQ(none.type, EventType::kPartition);
  EXPECT_FALSE(none.event.has_value());

  // A run report matters whether or not a schedule listens on its program.
  RoutedEvent report = RouteEvent(Program("etl", "r-9"), index, key);
  ASSERT_EQ(report.kind, RoutedEvent::Kind::kMatch);
  EXPECT_THAT(Ids(report.schedules), IsEmpty());
  EXPECT_EQ(report.event->program.run_id, "r-9");
  RoutedEvent listened = RouteEvent(Program("train", "r-10"), index, key);
  ASSERT_EQ(listened.kind, RoutedEvent::Kind::kMatch);
  EXPECT_THAT(Ids(listened.schedules), ElementsAre(2));

  EXPECT_EQ(RouteEvent(Tick(OwnTickId("ml/nightly", "2026-11-22T10:00:00Z"), "ml/nightly"), index, key).kind,
            RoutedEvent::Kind::kOwnTick);
  RoutedEvent manual = RouteEvent(Tick("manual-1", "ml/nightly"), index, key);
  ASSERT_EQ(manual.kind, RoutedEvent::Kind::kMatch);
  EXPECT_THAT(Ids(manual.schedules), ElementsAre(3));

  RoutedEvent bad = RouteEvent(R"({"id":"x","type":"partition"})", index, key);
  ASSERT_EQ(bad.kind, RoutedEvent::Kind::kInvalid);
  EXPECT_THAT(bad.error.message(), HasSubstr("time"));
  EXPECT_EQ(RouteEvent("not json", index, key).kind, RoutedEvent::Kind::kInvalid);

  // An envelope the scanner leaves to the parser (an escaped member name) is routed alike.
  const std::string escaped = R"({"id":"e-3","typ\u0065":"partition","time":"2026-11-22T10:00:00Z",)"
                              R"("payload":{"dataset":"feed.a","partitions":["p"]}})";
  EnvelopeScan scan;
  ASSERT_FALSE(ScanEnvelope(escaped, scan));
  RoutedEvent slow = RouteEvent(escaped, index, key);
  ASSERT_EQ(slow.kind, RoutedEvent::Kind::kMatch);
  EXPECT_THAT(Ids(slow.schedules), testing::UnorderedElementsAre(1, 2));
}

// Batches shorter and longer than the prefetch distance, of every kind of message in random
// order: each message is handed over once, in order, with RouteEvent's decision.
TEST(EventRouterTest, ABatchIsRoutedInOrderExactlyAsOneMessageAtATime) {
  ScheduleIndex index = TestIndex();
  for (int id = 10; id < 5000; ++id) index.Put(id, {"partition:feed." + std::to_string(id)});
  const std::vector<std::string> kinds = {
      Partition("a", "feed.a"),
      Partition("b", "feed.none"),
      Partition("c", "feed.77"),
      Program("etl", "r-1"),
      Tick(OwnTickId("ml/nightly", "2026-11-22T10:00:00Z"), "ml/nightly"),
      Tick("m", "ml/nightly"),
      "{broken",
      R"({"id":"e","typ\u0065":"partition","time":"2026-11-22T10:00:00Z","payload":{"dataset":"feed.9","partitions":[]}})"};
  std::mt19937 random(3);
  for (size_t count : {size_t{0}, size_t{1}, kRouteAhead - 1, kRouteAhead, kRouteAhead + 1, size_t{500}}) {
    std::vector<std::string> batch;
    for (size_t i = 0; i < count; ++i) batch.push_back(kinds[random() % kinds.size()]);
    std::vector<size_t> seen;
    RouteEvents(
        batch.size(), index, [&](size_t i) -> std::string_view { return batch[i]; },
        [&](size_t i, RoutedEvent&& r) {
          seen.push_back(i);
          std::string key;
          const RoutedEvent one = RouteEvent(batch[i], index, key);
          EXPECT_EQ(r.kind, one.kind) << batch[i];
          EXPECT_EQ(Ids(r.schedules), Ids(one.schedules)) << batch[i];
          EXPECT_EQ(r.event.has_value(), one.event.has_value()) << batch[i];
          if (r.event && one.event) {
            EXPECT_EQ(r.event->id, one.event->id);
          }
          EXPECT_EQ(r.error.message(), one.error.message()) << batch[i];
          if (r.kind != RoutedEvent::Kind::kInvalid) {
            EXPECT_EQ(r.type, one.type) << batch[i];
          }
        });
    std::vector<size_t> expected(count);
    for (size_t i = 0; i < count; ++i) expected[i] = i;
    EXPECT_EQ(seen, expected) << count << " messages";
  }
}

}  // namespace
}  // namespace trigd
