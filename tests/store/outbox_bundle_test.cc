// Outbox bundles (store/outbox_bundle.h): any key and payload text comes back as written, and
// a damaged bundle is refused with the byte where it breaks.
#include "store/outbox_bundle.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace trigd::pg_internal {
namespace {

TEST(OutboxBundleTest, MessagesComeBackAsWritten) {
  const std::vector<std::pair<std::string, std::string>> messages = {
      {"", ""}, {"k", "{\"a\":1}"}, {"12:x,", "3:abc,"}, {"ünïcödé ✓", std::string(5000, ',')}, {":", "\n\t\\"}};
  std::string bundle;
  for (const auto& [key, payload] : messages) AppendToBundle(bundle, key, payload);
  EXPECT_EQ(bundle.substr(0, 8), "0:,0:,1:");
  auto back = ParseBundle(bundle);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, messages);
  auto empty = ParseBundle("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(OutboxBundleTest, DamagedBundlesAreRefusedWithTheByteWhereTheyBreak) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"3:abc,", "at byte 0"},                            // a key without its payload
      {"3:abc,3:def", "at byte 0"},                       // no closing comma
      {"1:k,1:v,x:k,1:v,", "at byte 8"},                  // not a length
      {"1:k,1:v,2:k,1:v,", "at byte 8"},                  // length past its comma
      {"1:k,1:v,99999999999999999999999:", "at byte 8"},  // length overflows
      {"1:k,1:v,9:ab,", "at byte 8"},                     // length past the end
      {"1k,", "at byte 0"},                               // no colon
  };
  for (const auto& [bundle, where] : cases) {
    auto r = ParseBundle(bundle);
    ASSERT_FALSE(r.ok()) << bundle;
    EXPECT_NE(r.status().message().find(where), std::string::npos) << bundle << ": " << r.status().ToString();
  }
}

}  // namespace
}  // namespace trigd::pg_internal
