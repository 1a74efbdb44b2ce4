// Topic names (common/topic_names.h): every name trigd and its tools use, from the one prefix.
#include "common/topic_names.h"

#include <gtest/gtest.h>

namespace trigd {
namespace {

TEST(TopicNamesTest, EveryTopicIsThePrefixAndItsName) {
  const TopicNames t("acme.");
  EXPECT_EQ(t.events_data, "acme.events.data");
  EXPECT_EQ(t.events_program, "acme.events.program");
  EXPECT_EQ(t.events_time, "acme.events.time");
  EXPECT_EQ(t.dead, "acme.dead");
  EXPECT_EQ(t.control, "acme.control");
  EXPECT_EQ(t.Launch("gpu"), "acme.launch.gpu");
  EXPECT_EQ(t.Events(), (std::vector<std::string>{"acme.events.data", "acme.events.program", "acme.events.time"}));
  EXPECT_EQ(t.Needed(), (std::vector<std::string>{"acme.events.data", "acme.events.program", "acme.events.time",
                                                  "acme.dead", "acme.control"}));
}

// The names match topics/*.json, which `trigctl topics create` makes under the same prefix.
TEST(TopicNamesTest, AnEmptyPrefixLeavesTheBareNames) {
  const TopicNames t("");
  EXPECT_EQ(t.events_data, "events.data");
  EXPECT_EQ(t.Launch("default"), "launch.default");
}

}  // namespace
}  // namespace trigd
