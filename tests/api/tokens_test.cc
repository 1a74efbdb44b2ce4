// The API's token file (SPEC §13): hashes, roles, namespaces, and what is refused.
#include "api/tokens.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "api/server.h"

namespace trigd {
namespace {

TEST(Sha256Hex, KnownDigest) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ParseTokens, RolesAndNamespaces) {
  const std::string viewer = Sha256Hex("v"), op = Sha256Hex("o");
  auto t = ParseTokens(R"([{"sha256": ")" + viewer + R"(", "role": "viewer", "namespaces": ["*"]},
                           {"sha256": ")" +
                       op + R"(", "role": "operator", "namespaces": ["a"]}])");
  ASSERT_TRUE(t.ok()) << t.status().message();
  auto v = FindToken(*t, "v");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->role, Role::kViewer);
  EXPECT_TRUE(v->Reaches("b"));
  auto o = FindToken(*t, "o");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->role, Role::kOperator);
  EXPECT_TRUE(o->Reaches("a"));
  EXPECT_FALSE(o->Reaches("b"));
  EXPECT_FALSE(o->ReachesAll());
  EXPECT_FALSE(FindToken(*t, "wrong"));
  EXPECT_FALSE(FindToken(*t, ""));
}

TEST(ParseTokens, UppercaseHexMatches) {
  std::string h = Sha256Hex("t");
  for (auto& c : h) c = static_cast<char>(std::toupper(c));
  auto t = ParseTokens(R"([{"sha256": ")" + h + R"(", "role": "admin", "namespaces": ["*"]}])");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(FindToken(*t, "t"));
}

TEST(ParseTokens, ANameBecomesTheActorAndAnUnnamedTokenIsNamedByItsHash) {
  const std::string named = Sha256Hex("n"), unnamed = Sha256Hex("u");
  auto t = ParseTokens(R"([{"sha256": ")" + named +
                       R"(", "role": "operator", "namespaces": ["*"], "name": "ci.deploy-1@team_a"},
                           {"sha256": ")" +
                       unnamed + R"(", "role": "viewer", "namespaces": ["*"]}])");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(ActorName(*FindToken(*t, "n")), "token:ci.deploy-1@team_a");
  EXPECT_EQ(ActorName(*FindToken(*t, "u")), "token:sha256:" + unnamed.substr(0, 8));
  EXPECT_EQ(ActorName(Principal{}), "api:no-tokens");  // no token file
}

TEST(ParseTokens, RefusesABadOrSharedName) {
  const std::string a = Sha256Hex("a"), b = Sha256Hex("b");
  auto entry = [](const std::string& hash, const std::string& name) {
    return R"({"sha256": ")" + hash + R"(", "role": "viewer", "namespaces": ["*"], "name": )" + name + "}";
  };
  const std::vector<std::string> bad = {R"("")", R"("has space")", R"("a:b")", R"(7)",
                                        "\"" + std::string(65, 'x') + "\""};
  for (const std::string& name : bad) {
    auto t = ParseTokens("[" + entry(a, name) + "]");
    ASSERT_FALSE(t.ok()) << name;
    EXPECT_NE(t.status().message().find("[0].name: expected 1 to 64 letters"), std::string::npos)
        << t.status().message();
  }
  auto shared = ParseTokens("[" + entry(a, R"("ops")") + ", " + entry(b, R"("ops")") + "]");
  ASSERT_FALSE(shared.ok());
  EXPECT_NE(shared.status().message().find("[1].name: \"ops\" names an earlier entry too"), std::string::npos)
      << shared.status().message();
}

TEST(ParseTokens, RefusesWithThePath) {
  const std::string h = Sha256Hex("x");
  auto msg = [](const std::string& text) {
    auto t = ParseTokens(text);
    return t.ok() ? std::string("accepted") : t.status().message();
  };
  EXPECT_EQ(msg("{"),
            "invalid JSON at line 1, column 2 (byte 2): syntax error while parsing object key - unexpected end of "
            "input; expected string literal");
  EXPECT_EQ(msg("{}"), "expected an array of {\"sha256\", \"role\", \"namespaces\"}");
  EXPECT_EQ(msg(R"([{"sha256": "abc", "role": "viewer", "namespaces": ["*"]}])"),
            "[0].sha256: expected the 64 hex digits of the token's SHA-256");
  EXPECT_EQ(msg(R"([{"sha256": ")" + h + R"(", "role": "root", "namespaces": ["*"]}])"),
            "[0].role: unknown role \"root\" (viewer, operator or admin)");
  EXPECT_EQ(msg(R"([{"sha256": ")" + h + R"(", "role": "viewer", "namespaces": []}])"),
            "[0].namespaces: expected a non-empty array of namespaces (\"*\": all)");
  EXPECT_EQ(msg(R"([{"sha256": ")" + h + R"(", "role": "viewer", "namespaces": ["*"], "token": "x"}])"),
            "[0].token: unknown field (expected one of: sha256, role, namespaces, name)");
  EXPECT_EQ(msg(R"([{"sha256": ")" + h + R"(", "role": "viewer", "namespaces": ["*"]},
                    {"sha256": ")" +
                h + R"(", "role": "admin", "namespaces": ["*"]}])"),
            "[1].sha256: the same hash as an earlier entry");
}

TEST(Listen, LoopbackAndForm) {
  EXPECT_TRUE(IsLoopback("127.0.0.1"));
  EXPECT_TRUE(IsLoopback("127.1.2.3"));
  EXPECT_TRUE(IsLoopback("::1"));
  EXPECT_TRUE(IsLoopback("localhost"));
  EXPECT_FALSE(IsLoopback("0.0.0.0"));
  EXPECT_FALSE(IsLoopback("10.0.0.1"));
  EXPECT_FALSE(IsLoopback("::"));
  auto l = ParseListen("[::1]:8080");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->first, "::1");
  EXPECT_EQ(l->second, 8080);
  EXPECT_FALSE(ParseListen("8080").ok());
  EXPECT_FALSE(ParseListen("h:99999").ok());
}

TEST(SameHash, EqualOnlyForTheSameBytesAndLength) {
  const std::string h = Sha256Hex("t");
  EXPECT_TRUE(SameHash(h, Sha256Hex("t")));
  std::string last = h;
  last.back() = last.back() == '0' ? '1' : '0';
  EXPECT_FALSE(SameHash(h, last));
  EXPECT_FALSE(SameHash(h, h.substr(0, 63)));
  EXPECT_FALSE(SameHash(h, ""));
  EXPECT_TRUE(SameHash("", ""));
}

// The time of a comparison does not depend on where the inputs first differ. An early-exit
// comparison (std::string's ==, memcmp) returns at the first byte for `first` and reads all of
// a 4 MiB input for `last`, hundreds of times slower; CRYPTO_memcmp reads all of both.
TEST(SameHash, TakesAsLongWhereverTheInputsDiffer) {
  const std::string a(4 << 20, 'a');
  std::string first = a, last = a;
  first.front() = 'b';
  last.back() = 'b';
  auto fastest = [](const std::string& x, const std::string& y) {
    auto best = std::chrono::nanoseconds::max();
    for (int i = 0; i < 7; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const bool same = SameHash(x, y);
      const auto took = std::chrono::steady_clock::now() - t0;
      EXPECT_FALSE(same);
      best = std::min(best, std::chrono::duration_cast<std::chrono::nanoseconds>(took));
    }
    return static_cast<double>(best.count());
  };
  const double at_first = fastest(a, first), at_last = fastest(a, last);
  EXPECT_GT(at_first, at_last / 4) << "differing at the first byte: " << at_first << " ns, at the last: " << at_last
                                   << " ns";
}

TEST(ApiServer, RefusesANonLoopbackAddressWithoutTokens) {
  ApiServer s;
  ApiOptions o;
  o.listen = "0.0.0.0:0";
  Status st = s.Start(o);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("is not a loopback address"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace trigd
