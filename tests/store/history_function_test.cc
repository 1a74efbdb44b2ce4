// trigd_append_history (schema/003_history_inline.sql, 019): the bounded history every job and
// run update appends to. It must keep the first entry and the newest, 50 in all, and the planner
// must inline it (a
// non-inlined SQL function cost about 80 us per updated row on the launch path).
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "source_paths.h"
#include "store/migrator.h"
#include "store/test_pg.h"

namespace trigd {
namespace {

using test::Pg;

class HistoryFunctionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = "trigd_history_test_" + std::to_string(getpid());
    pqxx::connection admin(Pg());
    pqxx::nontransaction tx(admin);
    tx.exec("DROP DATABASE IF EXISTS " + db_ + " WITH (FORCE)");
    tx.exec("CREATE DATABASE " + db_);
    ASSERT_TRUE(ApplyMigrations(Conn(), TRIGD_SOURCE_DIR "/schema", nullptr).ok());
  }
  void TearDown() override {
    pqxx::connection admin(Pg());
    pqxx::nontransaction tx(admin);
    tx.exec("DROP DATABASE IF EXISTS " + db_ + " WITH (FORCE)");
  }
  std::string Conn() const { return Pg() + " dbname=" + db_; }
  std::string Query(const std::string& sql) {
    pqxx::connection c(Conn());
    pqxx::nontransaction tx(c);
    return tx.exec1(sql)[0].as<std::string>();
  }
  std::string db_;
};

TEST_F(HistoryFunctionTest, AppendsWhileUnderTheCap) {
  EXPECT_EQ(Query("SELECT trigd_append_history('[1, 2]', '[3]')::text"), "[1, 2, 3]");
  EXPECT_EQ(Query("SELECT trigd_append_history('[]', '[]')::text"), "[]");
  EXPECT_EQ(Query("SELECT trigd_append_history((SELECT jsonb_agg(g) FROM generate_series(1, 49) g), '[50]') = "
                  "(SELECT jsonb_agg(g) FROM generate_series(1, 50) g)"),
            "t");
}

TEST_F(HistoryFunctionTest, KeepsTheFirstAndTheNewest49WhenItOverflows) {
  EXPECT_EQ(Query("SELECT trigd_append_history((SELECT jsonb_agg(g) FROM generate_series(1, 50) g), '[51, 52]') = "
                  "'[1]'::jsonb || (SELECT jsonb_agg(g) FROM generate_series(4, 52) g)"),
            "t");
  EXPECT_EQ(Query("SELECT jsonb_array_length(trigd_append_history('[1]', "
                  "(SELECT jsonb_agg(g) FROM generate_series(2, 80) g)))::text"),
            "50");
}

// SPEC §11: a job that collected 200 events still shows how it opened.
TEST_F(HistoryFunctionTest, TwoHundredAppendsKeepTheOpenedEntry) {
  EXPECT_EQ(Query("WITH RECURSIVE r(n, h) AS (SELECT 1, '[{\"what\": \"opened\"}]'::jsonb UNION ALL "
                  "SELECT n + 1, trigd_append_history(h, jsonb_build_array(jsonb_build_object('what', 'event ' || n))) "
                  "FROM r WHERE n < 200) "
                  "SELECT jsonb_array_length(h) || ' ' || (h->0->>'what') || ' ' || (h->1->>'what') || ' ' || "
                  "(h->-1->>'what') FROM r WHERE n = 200"),
            "50 opened event 151 event 199");
}

TEST_F(HistoryFunctionTest, IsInlinedIntoTheStatement) {
  pqxx::connection c(Conn());
  pqxx::nontransaction tx(c);
  std::string plan;
  for (const auto& r : tx.exec("EXPLAIN VERBOSE UPDATE jobs SET history = trigd_append_history(history, "
                               "jsonb_build_array(jsonb_build_object('at', now()))) WHERE id = 1")) {
    plan += r[0].as<std::string>() + "\n";
  }
  EXPECT_EQ(plan.find("trigd_append_history"), std::string::npos) << plan;
  EXPECT_NE(plan.find("jsonb_array_length"), std::string::npos) << plan;
}

}  // namespace
}  // namespace trigd
