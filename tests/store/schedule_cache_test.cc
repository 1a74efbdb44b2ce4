// The cache of parsed schedules (store/pg_store.h ScheduleCache): copies are handles on one
// cache, which the connections of an engine share across threads.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "store/pg_store.h"

namespace trigd {
namespace {

std::string Document(int k) {
  return R"({"namespace": "t", "name": "s)" + std::to_string(k) +
         R"(", "program": {"name": "p"}, "trigger": {"time": {"cron": "0 * * * *", "timezone": "UTC"}}})";
}

TEST(ScheduleCacheTest, CopiesShareOneCache) {
  ScheduleCache checker;
  ScheduleCache other = checker;  // as PgStore::ShareScheduleCache hands it to another connection
  std::shared_ptr<const Schedule> parsed = checker.Get(7, 2, Document(7));
  ASSERT_NE(parsed, nullptr);
  EXPECT_EQ(other.Find(7, 2), parsed);             // parsed once, found by the other
  EXPECT_EQ(other.Find(7, 3), nullptr);            // another version is another document
  EXPECT_EQ(ScheduleCache().Find(7, 2), nullptr);  // a cache of its own shares nothing
}

TEST(ScheduleCacheTest, ThreadsParseAndFindAtOnce) {
  ScheduleCache cache(64);  // small: cleared while the threads use it
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      ScheduleCache mine = cache;
      for (int i = 0; i < 2000; ++i) {
        const int k = (i * 7 + t) % 200;
        std::shared_ptr<const Schedule> s = mine.Find(k, 1);
        if (!s) s = mine.Get(k, 1, Document(k));
        if (!s || s->name != "s" + std::to_string(k)) ++wrong;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace trigd
