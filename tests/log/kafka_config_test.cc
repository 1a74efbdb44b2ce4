#include "log/kafka_config.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "log/kafka.h"

namespace trigd {
namespace {

// A properties file in the test's temporary folder, removed with the object.
struct TempFile {
  explicit TempFile(const std::string& text) {
    path = ::testing::TempDir() + "kafka_config_test_" + std::to_string(::getpid()) + "_" + std::to_string(++count) +
           ".properties";
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
  std::string path;
  static inline int count = 0;
};

Status Load(const std::string& text, KafkaConfig* out = nullptr) {
  TempFile f(text);
  KafkaConfig c("127.0.0.1:9092");
  c.file = f.path;
  Status s = LoadKafkaProperties(c);
  if (out) *out = c;
  return s;
}

TEST(ParseJavaPropertiesTest, ReadsTheSeparatorsCommentsContinuationsAndEscapes) {
  auto p = ParseJavaProperties(
      "# comment\n"
      "! also a comment\n"
      "  client.id = one\n"
      "a:b\n"
      "spaced value with blanks\n"
      "long=first,\\\n"
      "     second\n"
      "escaped\\=name=tab\\there\\u0041\r\n"
      "empty=\n");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->size(), 6u);
  EXPECT_EQ((*p)[0].name, "client.id");
  EXPECT_EQ((*p)[0].value, "one");
  EXPECT_EQ((*p)[0].line, 3);
  EXPECT_EQ((*p)[1].name, "a");
  EXPECT_EQ((*p)[1].value, "b");
  EXPECT_EQ((*p)[2].name, "spaced");
  EXPECT_EQ((*p)[2].value, "value with blanks");
  EXPECT_EQ((*p)[3].value, "first,second");
  EXPECT_EQ((*p)[3].line, 6);
  EXPECT_EQ((*p)[4].name, "escaped=name");
  EXPECT_EQ((*p)[4].value, "tab\thereA");
  EXPECT_EQ((*p)[4].line, 8);
  EXPECT_EQ((*p)[5].value, "");
}

TEST(ParseJavaPropertiesTest, AMalformedEscapeNamesItsLineAndNotTheValue) {
  auto p = ParseJavaProperties("a=1\nsasl.password=se\\u12zcret\n");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "line 2: sasl.password: malformed \\uXXXX escape");
}

TEST(LoadKafkaPropertiesTest, AnUnknownPropertyNamesTheFileAndLine) {
  Status s = Load("client.id=x\n\nsession.timout.ms=100\n");
  ASSERT_EQ(s.code(), StatusCode::kInvalid);
  EXPECT_NE(s.message().find(".properties:3: No such configuration property: \"session.timout.ms\""), std::string::npos)
      << s.message();
}

TEST(LoadKafkaPropertiesTest, ABadValueIsLibrdkafkasMessageWithTheLine) {
  Status s = Load("session.timeout.ms=soon\n");
  ASSERT_EQ(s.code(), StatusCode::kInvalid);
  EXPECT_NE(s.message().find(":1: Invalid value for configuration property \"session.timeout.ms\""), std::string::npos)
      << s.message();
}

TEST(LoadKafkaPropertiesTest, PropertiesTrigdOwnsAreRefusedWithTheReason) {
  for (const char* text :
       {"enable.idempotence=false\n", "acks=1\n", "request.required.acks=0\n", "enable.auto.commit=true\n",
        "isolation.level=read_uncommitted\n", "group.id=x\n", "partition.assignment.strategy=range\n",
        "auto.offset.reset=latest\n", "transactional.id=t\n", "bootstrap.servers=elsewhere:9092\n",
        "metadata.broker.list=elsewhere:9092\n", "enable.auto.offset.store=true\n"}) {
    Status s = Load(text);
    ASSERT_EQ(s.code(), StatusCode::kInvalid) << text;
    EXPECT_NE(s.message().find(" is set by trigd, not by TRIGD_KAFKA_CONFIG: "), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(":1: "), std::string::npos) << s.message();
  }
  // What trigd sets anyway is no conflict.
  EXPECT_TRUE(Load("acks=all\n").ok());
  EXPECT_TRUE(Load("acks=-1\n").ok());
}

TEST(LoadKafkaPropertiesTest, ASettingThatWeakensIdempotenceIsRefusedAtLoad) {
  // Not a property trigd owns, but idempotence allows at most 5 requests in flight.
  Status s = Load("client.id=x\nmax.in.flight.requests.per.connection=20\n");
  ASSERT_EQ(s.code(), StatusCode::kInvalid);
  EXPECT_NE(s.message().find("max.in.flight"), std::string::npos) << s.message();
  EXPECT_TRUE(Load("retries=0\n").code() == StatusCode::kInvalid);
}

TEST(LoadKafkaPropertiesTest, ATlsFileThatCannotBeLoadedIsRefusedAtLoadWithItsLine) {
  Status s = Load(
      "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=u\nsasl.password=pw\n"
      "ssl.ca.location=/nonexistent/ca.crt\n");
  ASSERT_EQ(s.code(), StatusCode::kInvalid);
  EXPECT_NE(s.message().find(":5: ssl.ca.location failed"), std::string::npos) << s.message();
}

TEST(LoadKafkaPropertiesTest, AGivenTwicePropertyIsRefused) {
  Status s = Load("client.id=a\nclient.id=b\n");
  ASSERT_EQ(s.code(), StatusCode::kInvalid);
  EXPECT_NE(s.message().find(":2: client.id is given twice (first at line 1)"), std::string::npos) << s.message();
}

TEST(LoadKafkaPropertiesTest, AMissingFileIsNamed) {
  KafkaConfig c;
  c.file = "/nonexistent/kafka.properties";
  Status s = LoadKafkaProperties(c);
  EXPECT_EQ(s.message(), "TRIGD_KAFKA_CONFIG: cannot read /nonexistent/kafka.properties: No such file or directory");
}

TEST(LoadKafkaPropertiesTest, TheSettingsOfAValidFileAreKept) {
  KafkaConfig c;
  ASSERT_TRUE(Load("client.id=trigd-a\nsocket.timeout.ms=30000\n", &c).ok());
  ASSERT_EQ(c.properties.size(), 2u);
  EXPECT_EQ(c.properties[1].name, "socket.timeout.ms");
}

TEST(KafkaConfigTest, SecretsAreRedacted) {
  KafkaConfig c;
  c.properties = {{"sasl.password", "s3cr3t-pw", 1}, {"sasl.username", "trigd", 2}, {"ssl.key.password", "kp", 3}};
  EXPECT_EQ(c.Redact("user trigd with s3cr3t-pw, again s3cr3t-pw, key kp"),
            "user trigd with [redacted], again [redacted], key [redacted]");
  EXPECT_TRUE(IsSecretProperty("sasl.oauthbearer.client.secret"));
  EXPECT_FALSE(IsSecretProperty("sasl.username"));
}

TEST(KafkaConfigTest, NoErrorOfAFileRepeatsASecret) {
  // A secret with a malformed escape, and a refused file holding secrets: never echoed.
  for (const char* text : {"sasl.password=hunter2\\uZZZZ\n", "sasl.password=hunter2\nacks=0\n",
                           "sasl.password=hunter2\nsession.timeout.ms=hunter2\n"}) {
    Status s = Load(text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.message().find("hunter2"), std::string::npos) << s.message();
  }
}

TEST(KafkaConfigTest, EveryClientTakesTheFilesProperties) {
  // A producer made with an unusable property in its config (set after load, as a file could
  // not) fails at creation, naming the line: the property reached librdkafka.
  KafkaConfig c("127.0.0.1:1");
  c.file = "x.properties";
  c.properties = {{"client.id", "from-file", 4}, {"session.timeout.ms", "not-a-number", 7}};
  auto p = Producer::Create(c);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("x.properties:7: "), std::string::npos) << p.status().message();
  auto r = QueryEndOffsets(c, {"t"}, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("x.properties:7: "), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace trigd
