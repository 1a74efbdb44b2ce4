#include "store/migrator.h"
#include "source_paths.h"
#include "store/test_pg.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

namespace trigd {
namespace {

// Needs the real PostgreSQL that tools/test starts; fails (never skips) when unreachable.
using test::Pg;

// A fresh database per test, so tests do not see each other's tables.
class MigratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pqxx::connection admin(Pg());
    pqxx::nontransaction tx(admin);
    db_ = "trigd_migrator_test";
    tx.exec("DROP DATABASE IF EXISTS " + db_ + " WITH (FORCE)");
    tx.exec("CREATE DATABASE " + db_);
  }
  std::string Conn() const { return Pg() + " dbname=" + db_; }
  std::string db_;
};

TEST_F(MigratorTest, AppliesEveryMigrationOnceAndRecordsIt) {
  std::vector<std::string> applied;
  ASSERT_TRUE(ApplyMigrations(Conn(), TRIGD_SOURCE_DIR "/schema", &applied).ok());
  ASSERT_FALSE(applied.empty());
  EXPECT_EQ(applied.front(), "001_init.sql");

  std::vector<std::string> again;
  ASSERT_TRUE(ApplyMigrations(Conn(), TRIGD_SOURCE_DIR "/schema", &again).ok());
  EXPECT_TRUE(again.empty());

  pqxx::connection c(Conn());
  pqxx::work tx(c);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM schema_migrations")[0].as<size_t>(), applied.size());
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM pg_tables WHERE tablename IN "
                     "('schedules','jobs','runs','outbox','consumer_offsets')")[0]
                .as<int>(),
            5);
}

TEST_F(MigratorTest, FailedMigrationIsNamedAndNotRecorded) {
  auto dir = std::filesystem::temp_directory_path() / "trigd_bad_schema";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "001_ok.sql") << "CREATE TABLE t1 (x int);";
  std::ofstream(dir / "002_bad.sql") << "CREATE TABLE t2 (x nosuchtype);";
  std::vector<std::string> applied;
  Status s = ApplyMigrations(Conn(), dir.string(), &applied);
  EXPECT_EQ(s.code(), StatusCode::kInvalid);
  EXPECT_NE(s.message().find("002_bad.sql"), std::string::npos) << s.message();
  EXPECT_EQ(applied, std::vector<std::string>{"001_ok.sql"});
  pqxx::connection c(Conn());
  pqxx::work tx(c);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM schema_migrations")[0].as<int>(), 1);
}

TEST(MigratorUnreachableTest, UnreachablePostgresIsUnavailable) {
  Status s = ApplyMigrations("host=127.0.0.1 port=1 user=trigd dbname=trigd connect_timeout=2",
                             TRIGD_SOURCE_DIR "/schema", nullptr);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace trigd
