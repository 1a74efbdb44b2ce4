// The command lines of the three binaries (app/cli.h): flags with environment defaults, a
// single-valued flag given twice refused, a flag's value never another flag, the shared flags
// after a subcommand as before it.
#include "app/cli.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace trigd {
namespace {

// The refusal a command line gets, "" when it parses.
std::string Problem(CLI::App& app, const std::string& line) {
  try {
    app.parse(line, false);
  } catch (const CLI::ParseError& e) {
    return ParseProblem(e);
  }
  return "";
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"TRIGD_KAFKA", "TRIGD_PG", "TRIGD_GROUP", "TRIGD_TOPIC_PREFIX", "TRIGD_METRICS"}) unsetenv(v);
    SetUpApp(app_, "trigctl");
    AddConfigFlags(app_, config_, ConfigFlags::kClient);
    lag_ = app_.add_subcommand("lag");
    apply_ = app_.add_subcommand("apply");
    FlagValue(apply_->add_option("-f", files_)->allow_extra_args(false));
  }
  void TearDown() override { unsetenv("TRIGD_GROUP"); }

  CLI::App app_;
  Config config_;
  CLI::App* lag_ = nullptr;
  CLI::App* apply_ = nullptr;
  std::vector<std::string> files_;
};

// `--pg a --pg b` used the first and dropped the second in silence.
TEST_F(CliTest, ASingleValuedFlagGivenTwiceIsRefused) {
  EXPECT_EQ(Problem(app_, "--pg a lag --pg b"), "--pg given more than once");
}

TEST_F(CliTest, ARepeatableFlagTakesEveryValueOneEach) {
  EXPECT_EQ(Problem(app_, "apply -f a.json -f - -f dir"), "");
  EXPECT_EQ(files_, (std::vector<std::string>{"a.json", "-", "dir"}));
}

TEST_F(CliTest, TheEnvironmentIsTheDefaultAndAFlagWins) {
  setenv("TRIGD_GROUP", "from-env", 1);
  EXPECT_EQ(Problem(app_, "lag"), "");
  EXPECT_EQ(config_.group, "from-env");
  EXPECT_EQ(config_.kafka.bootstrap, "127.0.0.1:9092");  // unset: Config's default
  Config flagged;
  CLI::App app;
  AddConfigFlags(app, flagged, ConfigFlags::kClient);
  app.parse("--group=from-flag", false);
  EXPECT_EQ(flagged.group, "from-flag");
}

TEST_F(CliTest, AnEmptyVariableCountsAsUnset) {
  setenv("TRIGD_GROUP", "", 1);
  EXPECT_EQ(LoadConfig().group, "trigd");
}

TEST_F(CliTest, SharedFlagsGoBeforeOrAfterTheCommand) {
  EXPECT_EQ(Problem(app_, "lag --kafka after:1 --topic-prefix=p."), "");
  EXPECT_EQ(config_.kafka.bootstrap, "after:1");
  EXPECT_EQ(config_.topic_prefix, "p.");
  EXPECT_TRUE(lag_->parsed());
  EXPECT_EQ(CommandPath(app_), "lag");
}

// `--pg --json` connected with the string "--json": CLI11 takes the next word as the value.
TEST_F(CliTest, AFlagWithoutItsValueIsNamed) {
  EXPECT_EQ(Problem(app_, "lag --kafka"), "--kafka needs a value");
  EXPECT_EQ(Problem(app_, "--pg --group x lag"), "--pg needs a value");
  EXPECT_EQ(Problem(app_, "apply -f"), "-f needs a value");
}

TEST_F(CliTest, UnknownArgumentsAreKeptForTheCommandToName) {
  EXPECT_EQ(Problem(app_, "lag --bogus extra"), "");
  EXPECT_EQ(app_.remaining(true), (std::vector<std::string>{"--bogus", "extra"}));
  EXPECT_EQ(&Leaf(app_), lag_);
}

TEST(CliEngineTest, TrigdTakesMetricsAndInstanceIdTheClientsDoNot) {
  Config c;
  CLI::App engine;
  AddConfigFlags(engine, c, ConfigFlags::kEngine);
  engine.parse("--metrics 127.0.0.1:1 --instance-id pod-0", false);
  EXPECT_EQ(c.metrics, "127.0.0.1:1");
  EXPECT_EQ(c.instance_id, "pod-0");
  CLI::App client;
  SetUpApp(client, "trigd-worker");
  AddConfigFlags(client, c, ConfigFlags::kClient);
  client.parse("--metrics 127.0.0.1:2", false);
  EXPECT_EQ(client.remaining(), (std::vector<std::string>{"--metrics", "127.0.0.1:2"}));
}

}  // namespace
}  // namespace trigd
