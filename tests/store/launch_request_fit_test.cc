// A schedule whose launch request cannot fit Kafka's message limit is refused at apply, with the
// limit named; one just under it launches a request that fits (issue 39, defect 3).
#include <string>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "core/launch_request.h"
#include "core/schedule_parser.h"
#include "source_paths.h"
#include "store/admin.h"
#include "store/migrator.h"
#include "store/test_pg.h"

namespace trigd {
namespace {

Schedule WithArgs(size_t bytes) {
  ParsedSchedule p = ParseSchedule({{"name", "big"},
                                    {"program", {{"name", "p"}, {"args", {{"blob", std::string(bytes, 'x')}}}}},
                                    {"trigger", {{"partition", {{"dataset", "x.ds"}}}}}});
  EXPECT_TRUE(p.ok()) << (p.errors.empty() ? "" : p.errors[0].ToString());
  return p.schedule;
}

TEST(LaunchRequestFitTest, ADocumentWhoseRequestCannotFitIsRefusedAtApply) {
  const std::string pg = test::FreshDatabase("trigd_launch_fit_test");
  ASSERT_TRUE(ApplyMigrations(pg, TRIGD_SOURCE_DIR "/schema", nullptr).ok());
  auto r = ApplySchedules(pg, {WithArgs(10 * 1024 * 1024)}, Actor{"test"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalid);
  const std::string& m = r.status().message();
  EXPECT_EQ(m.rfind("default/big: program.args: 10485771 bytes of JSON; a launch request must fit Kafka's message "
                    "limit (900000 bytes",
                    0),
            0u)
      << m;
  pqxx::connection c(pg);
  EXPECT_EQ(pqxx::work(c).exec1("SELECT count(*) FROM schedules")[0].as<int>(), 0);

  // The most the message allows is accepted, one byte more is refused.
  const size_t room = kMaxLaunchRequestBytes - kMinTriggeredByBytes - (LaunchRequestFixedBytes(WithArgs(0)));
  EXPECT_TRUE(CheckLaunchRequestFits(WithArgs(room)).ok());
  EXPECT_FALSE(CheckLaunchRequestFits(WithArgs(room + 1)).ok());
  EXPECT_TRUE(ApplySchedules(pg, {WithArgs(room)}, Actor{"test"}).ok());
}

}  // namespace
}  // namespace trigd
