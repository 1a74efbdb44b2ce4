// Run ids (store/pg_internal.h): UUIDv7, so runs launched later sort later and inserts stay at
// the right edge of the runs primary key, whatever the size of the history.
#include <chrono>
#include <cstdio>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "store/pg_internal.h"

namespace trigd {
namespace {

TEST(RunIdTest, IsAVersion7UuidWithTheCurrentTime) {
  const std::string id = pg_internal::NewRunId();
  ASSERT_TRUE(std::regex_match(id, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << id;
  const uint64_t ms = std::stoull(id.substr(0, 8) + id.substr(9, 4), nullptr, 16);
  const auto now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  EXPECT_LE(ms, static_cast<uint64_t>(now));
  EXPECT_GT(ms + 10000, static_cast<uint64_t>(now));
}

// FormatRunId writes what "%08x-%04x-7%03x-%04x-%012llx" over the same fields prints.
TEST(RunIdTest, IsFormattedAsPrintfWouldFormatIt) {
  const uint64_t values[][3] = {{0, 0, 0},
                                {1795804883123ull, 0x0123456789abcdefull, 0xfedcba9876543210ull},
                                {0xffffffffffffull, ~0ull, ~0ull},
                                {1700000000000ull, 0xabcull, 0x3fff000000000001ull}};
  for (const auto& v : values) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%08x-%04x-7%03x-%04x-%012llx", static_cast<unsigned>((v[0] >> 16) & 0xffffffff),
                  static_cast<unsigned>(v[0] & 0xffff), static_cast<unsigned>(v[1] & 0xfff),
                  static_cast<unsigned>(0x8000 | ((v[2] >> 48) & 0x3fff)),
                  static_cast<unsigned long long>(v[2] & 0xffffffffffffull));
    EXPECT_EQ(pg_internal::FormatRunId(v[0], v[1], v[2]), std::string(buf));
  }
}

TEST(RunIdTest, LaterIdsSortAfterEarlierOnesAndNeverRepeat) {
  std::set<std::string> seen;
  std::string previous_batch_max;
  for (int batch = 0; batch < 5; ++batch) {
    std::string min, max;
    for (int i = 0; i < 2000; ++i) {
      std::string id = pg_internal::NewRunId();
      ASSERT_TRUE(seen.insert(id).second) << "repeated " << id;
      if (min.empty() || id < min) min = id;
      if (id > max) max = id;
    }
    EXPECT_LT(previous_batch_max, min) << "batch " << batch;
    previous_batch_max = max;
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
}

}  // namespace
}  // namespace trigd
