// OpenTransaction (pg_internal.h): BEGIN riding on the first statement, COMMIT on the last, and
// a rollback whenever it is not committed, on a real PostgreSQL.
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "store/pg_internal.h"
#include "store/test_pg.h"

namespace trigd::pg_internal {
namespace {

using test::Pg;

class OpenTransactionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pqxx::nontransaction(c_).exec("CREATE TEMP TABLE t (v int PRIMARY KEY)");
    c_.prepare("put", "INSERT INTO t VALUES ($1) RETURNING v, txid_current_if_assigned() IS NOT NULL");
  }
  int64_t Count() { return pqxx::nontransaction(c_).exec1("SELECT count(*) FROM t")[0].as<int64_t>(); }
  // c_'s session as another connection sees it: "idle in transaction" (or "... (aborted)").
  bool InTransaction() {
    return pqxx::nontransaction(observer_)
        .exec1("SELECT state LIKE 'idle in transaction%' FROM pg_stat_activity WHERE pid = " +
               std::to_string(c_.backendpid()))[0]
        .as<bool>();
  }
  pqxx::connection c_{Pg()};
  pqxx::connection observer_{Pg()};
};

TEST_F(OpenTransactionTest, BeginRunsTheStatementInsideTheTransactionAndCommitWithTheLast) {
  {
    OpenTransaction tx(c_);
    pqxx::result r = tx.Begin("put", {"1"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0][0].as<int>(), 1);
    EXPECT_TRUE(r[0][1].as<bool>());  // the insert holds a transaction id: BEGIN ran first
    EXPECT_TRUE(InTransaction());
    tx.Commit("INSERT INTO t VALUES (2)");
    EXPECT_FALSE(InTransaction());
  }
  EXPECT_EQ(Count(), 2);
}

TEST_F(OpenTransactionTest, NotCommittedIsRolledBack) {
  {
    OpenTransaction tx(c_);
    tx.Begin("put", {"1"});
    tx.tx().exec("INSERT INTO t VALUES (2)");
  }
  EXPECT_FALSE(InTransaction());
  EXPECT_EQ(Count(), 0);
}

TEST_F(OpenTransactionTest, AFailedStatementLeavesNothingAndTheConnectionUsable) {
  {
    OpenTransaction tx(c_);
    tx.Begin("put", {"1"});
    EXPECT_THROW(tx.Commit("INSERT INTO t VALUES (1)"), pqxx::unique_violation);  // COMMIT never ran
  }
  EXPECT_FALSE(InTransaction());
  EXPECT_EQ(Count(), 0);
  {
    OpenTransaction tx(c_);
    EXPECT_THROW(tx.Begin("put", {"not a number"}), pqxx::data_exception);
  }
  EXPECT_FALSE(InTransaction());
  {
    OpenTransaction tx(c_);
    tx.Begin("put", {"3"});
    tx.Commit();
  }
  EXPECT_EQ(Count(), 1);
}

TEST_F(OpenTransactionTest, ArgumentsAreQuoted) {
  c_.prepare("echo", "SELECT $1::text");
  OpenTransaction tx(c_);
  const std::string odd = "it's a \\ \"test\"; ROLLBACK; --";
  EXPECT_EQ(tx.Begin("echo", {odd}).at(0)[0].as<std::string>(), odd);
  tx.Rollback();
  EXPECT_FALSE(InTransaction());
}

}  // namespace
}  // namespace trigd::pg_internal
