// Array literals and COPY rows (store/sql_array.h) read back by a real PostgreSQL exactly as
// written, whatever the text holds.
#include "store/sql_array.h"
#include "store/test_pg.h"

#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <pqxx/pqxx>
#include <pqxx/tablewriter>

namespace trigd::pg_internal {
namespace {

using test::Pg;

const std::vector<std::string> kAwkward = {"",     "plain",     "quo\"te",    "back\\slash", "\\",
                                           "\"",   "tab\there", "new\nline",  "cr\rx",       "{brace},comma",
                                           "NULL", "\\N",       "  spaced  ", "ünïcödé ✓",   "a\\\"b\\\\c"};

// Byte-by-byte references for the word-at-a-time scans: every byte that needs escaping (and
// bytes next to them that do not: other control bytes, '!' and ']' one above '"' and '\\',
// UTF-8) at every position of texts longer than a word.
std::string CopyReference(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      default: out += c;
    }
  }
  return out;
}
std::string ArrayReference(std::string_view s) {
  std::string out = "{\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"}";
}

TEST(SqlArrayTest, EscapesEveryByteAtEveryPositionAsByteByByte) {
  const std::string specials = {'\\', '\t', '\n', '\r', '"',    '\x01', '\x1f',
                                ' ',  '!',  ']',  '[',  '\x7f', '\xc3', '\xbc'};
  for (size_t len : {7u, 8u, 9u, 15u, 16u, 17u, 31u}) {
    for (size_t pos = 0; pos < len; ++pos) {
      for (char a : specials) {
        for (char b : {'x', '\\', '\n', '"', '\x02'}) {
          std::string s(len, 'a');
          s[pos] = a;
          s[(pos * 5 + 3) % len] = b;
          CopyRows rows;
          rows.AddText(s);
          EXPECT_EQ(rows.text(), CopyReference(s)) << len << " " << pos;
          SqlArray array;
          array.AddText(s);
          EXPECT_EQ(array.Take(), ArrayReference(s)) << len << " " << pos;
        }
      }
    }
  }
}

TEST(SqlArrayTest, TextElementsReadBackAsWritten) {
  SqlArray a;
  for (const auto& s : kAwkward) a.AddText(s);
  a.AddNull();
  pqxx::connection c(Pg());
  pqxx::work tx(c);
  auto r =
      tx.exec_params("SELECT x, x IS NULL FROM unnest($1::text[]) WITH ORDINALITY AS t(x, i) ORDER BY i", a.Take());
  ASSERT_EQ(r.size(), kAwkward.size() + 1);
  for (size_t i = 0; i < kAwkward.size(); ++i) {
    EXPECT_FALSE(r[static_cast<int>(i)][1].as<bool>());
    EXPECT_EQ(r[static_cast<int>(i)][0].as<std::string>(), kAwkward[i]);
  }
  EXPECT_TRUE(r[static_cast<int>(kAwkward.size())][1].as<bool>());
}

TEST(SqlArrayTest, IntsBoolsAndJsonElements) {
  SqlArray ints, bools, docs;
  ints.AddInt(-9223372036854775807 - 1);
  ints.AddIntOrNull(std::nullopt);
  ints.AddInt(42);
  bools.AddBool(true);
  bools.AddNull();
  bools.AddBool(false);
  docs.AddText(R"({"a": "quo\"te \\ back", "b": [1, {"c": null}]})");
  docs.AddNull();
  docs.AddText("[]");
  pqxx::connection c(Pg());
  pqxx::work tx(c);
  auto r = tx.exec_params(
      "SELECT coalesce(i::text, 'null'), coalesce(b::text, 'null'), coalesce(d->>'a', d::text, 'null') "
      "FROM unnest($1::bigint[], $2::boolean[], $3::jsonb[]) WITH ORDINALITY AS t(i, b, d, n) ORDER BY n",
      ints.Take(), bools.Take(), docs.Take());
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0][0].as<std::string>(), "-9223372036854775808");
  EXPECT_EQ(r[0][1].as<std::string>(), "true");
  EXPECT_EQ(r[0][2].as<std::string>(), "quo\"te \\ back");
  EXPECT_EQ(r[1][0].as<std::string>(), "null");
  EXPECT_EQ(r[1][1].as<std::string>(), "null");
  EXPECT_EQ(r[1][2].as<std::string>(), "null");
  EXPECT_EQ(r[2][0].as<std::string>(), "42");
  EXPECT_EQ(r[2][1].as<std::string>(), "false");
  EXPECT_EQ(r[2][2].as<std::string>(), "[]");
}

TEST(SqlArrayTest, CopyRowsReadBackAsWritten) {
  CopyRows rows;
  for (size_t i = 0; i < kAwkward.size(); ++i) {
    rows.AddInt(static_cast<int64_t>(i));
    rows.AddText(kAwkward[i]);
    rows.EndRow();
  }
  rows.AddInt(static_cast<int64_t>(kAwkward.size()));
  rows.AddNull();
  rows.EndRow();
  EXPECT_EQ(rows.rows(), kAwkward.size() + 1);
  pqxx::connection c(Pg());
  pqxx::work tx(c);
  tx.exec("CREATE TEMP TABLE copied (n bigint, t text)");
  {
    const std::vector<std::string> columns = {"n", "t"};
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    pqxx::tablewriter w(tx, "copied", columns.begin(), columns.end());
#pragma GCC diagnostic pop
    w.write_raw_line(rows.text());
    w.complete();
  }
  auto r = tx.exec("SELECT n, t, t IS NULL FROM copied ORDER BY n");
  ASSERT_EQ(r.size(), kAwkward.size() + 1);
  for (size_t i = 0; i < kAwkward.size(); ++i) {
    EXPECT_EQ(r[static_cast<int>(i)][1].as<std::string>(), kAwkward[i]) << i;
  }
  EXPECT_TRUE(r[static_cast<int>(kAwkward.size())][2].as<bool>());
}

}  // namespace
}  // namespace trigd::pg_internal
