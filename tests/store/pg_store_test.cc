#include "store/pg_store.h"

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "store/migrator.h"

namespace trigd {
namespace {

std::string Pg() {
  const char* pg = std::getenv("TRIGD_PG");
  return pg ? pg : "host=127.0.0.1 port=55432 user=trigd dbname=trigd";
}

// A fresh, migrated database per test; needs the real PostgreSQL (fails, never skips).
class PgStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    {
      pqxx::connection admin(Pg());
      pqxx::nontransaction tx(admin);
      tx.exec("DROP DATABASE IF EXISTS trigd_store_test WITH (FORCE)");
      tx.exec("CREATE DATABASE trigd_store_test");
    }
    conn_ = Pg() + " dbname=trigd_store_test";
    ASSERT_TRUE(ApplyMigrations(conn_, TRIGD_SOURCE_DIR "/schema", nullptr).ok());
    nlohmann::json doc = {{"name", "s"}, {"program", {{"name", "p"}}},
                          {"trigger", {{"partition", {{"dataset", "d"}}}}}};
    ASSERT_TRUE(ApplySchedules(conn_, {{"default/s", doc, {"partition:d"}}}).ok());
    auto store = PgStore::Connect(conn_);
    ASSERT_TRUE(store.ok());
    store_ = std::move(*store);
    auto index = store_->LoadScheduleIndex();
    ASSERT_TRUE(index.ok());
    index_ = std::move(*index);
    ASSERT_EQ(index_["partition:d"].size(), 1u);
  }
  MatchedEvent Event(const std::string& id) {
    return {id, "partition", {{"dataset", "d"}, {"partitions", {"x"}}}, {&index_["partition:d"][0]}};
  }
  int64_t Count(const std::string& sql) {
    pqxx::connection c(conn_);
    pqxx::work tx(c);
    return tx.exec1(sql)[0].as<int64_t>();
  }
  std::string conn_;
  std::unique_ptr<PgStore> store_;
  std::unordered_map<std::string, std::vector<ScheduleRow>> index_;
};

TEST_F(PgStoreTest, BatchWritesJobRunOutboxAndPositionsTogether) {
  auto r = store_->ApplyBatch("g", "t.", {Event("e1")}, {{"k", "bad"}}, {{"t.events.data", 0, 0, 2}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->jobs_launched, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='pending_launch'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE topic='t.launch.default' AND job_id IS NOT NULL"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE topic='t.dead'"), 1);
  EXPECT_EQ(Count("SELECT next_offset FROM consumer_offsets WHERE group_id='g'"), 2);
  auto offsets = store_->LoadOffsets("g", {{"t.events.data", 0}, {"t.events.data", 1}});
  ASSERT_TRUE(offsets.ok());
  EXPECT_EQ((*offsets)[0], std::optional<int64_t>(2));
  EXPECT_EQ((*offsets)[1], std::nullopt);
}

TEST_F(PgStoreTest, ReplayedBatchFromStalePositionIsRefusedWhole) {
  ASSERT_TRUE(store_->ApplyBatch("g", "t.", {Event("e1")}, {}, {{"t.events.data", 0, 0, 1}}).ok());
  ASSERT_TRUE(store_->ApplyBatch("g", "t.", {Event("e2")}, {}, {{"t.events.data", 0, 1, 2}}).ok());
  // A consumer that lost the partition replays offsets 0..1 with a different event: refused,
  // and nothing of it is applied.
  auto stale = store_->ApplyBatch("g", "t.", {Event("e3")}, {{"k", "x"}}, {{"t.events.data", 0, 0, 2}});
  EXPECT_EQ(stale.status().code(), StatusCode::kAborted);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM outbox WHERE topic='t.dead'"), 0);
  EXPECT_EQ(Count("SELECT next_offset FROM consumer_offsets"), 2);
}

TEST_F(PgStoreTest, ResentEventIdChangesNothing) {
  ASSERT_TRUE(store_->ApplyBatch("g", "t.", {Event("e1")}, {}, {{"t.events.data", 0, 0, 1}}).ok());
  auto again = store_->ApplyBatch("g", "t.", {Event("e1")}, {}, {{"t.events.data", 0, 1, 2}});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->duplicates, 1);
  EXPECT_EQ(again->duplicate, std::vector<bool>{true});
  EXPECT_EQ(Count("SELECT count(*) FROM jobs"), 1);
  EXPECT_EQ(Count("SELECT next_offset FROM consumer_offsets"), 2);
}

TEST_F(PgStoreTest, RelayDeletesOnlyConfirmedRowsAndMarksJobsLaunched) {
  ASSERT_TRUE(store_->ApplyBatch("g", "t.", {Event("e1"), Event("e2")}, {}, {{"t.events.data", 0, 0, 2}}).ok());
  auto rows = store_->ClaimOutbox(10);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  ASSERT_TRUE(store_->CompleteOutbox({(*rows)[0].id}, {*(*rows)[0].job_id}).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM outbox"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='launched'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM jobs WHERE state='pending_launch'"), 1);
}

TEST_F(PgStoreTest, ReapplyingUnchangedScheduleKeepsVersionAndChangeBumpsIt) {
  nlohmann::json doc = {{"name", "s"}, {"program", {{"name", "p"}}},
                        {"trigger", {{"partition", {{"dataset", "d"}}}}}};
  auto same = ApplySchedules(conn_, {{"default/s", doc, {"partition:d"}}});
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE((*same)[0].changed);
  EXPECT_EQ((*same)[0].version, 1);
  doc["trigger"]["partition"]["dataset"] = "e";
  auto changed = ApplySchedules(conn_, {{"default/s", doc, {"partition:e"}}});
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE((*changed)[0].changed);
  EXPECT_EQ((*changed)[0].version, 2);
  EXPECT_EQ(Count("SELECT count(*) FROM schedule_triggers WHERE event_key='partition:e'"), 1);
}

}  // namespace
}  // namespace trigd
