// Log lines (common/log.h): the time in UTC, the program's name, the text; one line each.
#include <errno.h>

#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "common/log.h"

namespace trigd {
namespace {

TEST(LogLineTest, StartsWithTheTimeInUtcAndTheProgramsName) {
  ::testing::internal::CaptureStderr();
  LogLine("checker: aborted: deadlock detected");
  LogLine("second");
  const std::string err = ::testing::internal::GetCapturedStderr();
  const std::string name = program_invocation_short_name;
  EXPECT_TRUE(std::regex_match(err, std::regex("\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z " + name +
                                               ": checker: aborted: deadlock detected\n"
                                               "\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z " +
                                               name + ": second\n")))
      << err;
}

}  // namespace
}  // namespace trigd
