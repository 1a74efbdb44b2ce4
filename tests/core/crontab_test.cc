#include "core/crontab.h"

#include <gtest/gtest.h>

#include <string>

namespace trigd {
namespace {

CrontabConversion Convert(const std::string& text, const std::string& zone = "UTC") {
  return ConvertCrontab(text, CrontabOptions{zone, "ops"});
}

std::string Reasons(const CrontabConversion& c) {
  std::string out;
  for (const auto& r : c.refused) out += std::to_string(r.line) + ": " + r.note + "\n";
  return out;
}

TEST(CrontabTest, EntryBecomesAScheduleWithACronTriggerInTheZone) {
  CrontabConversion c = Convert("# nightly\n30 2 * * 1-5 /usr/local/bin/backup.sh --full\n", "Europe/Berlin");
  ASSERT_TRUE(c.refused.empty()) << Reasons(c);
  ASSERT_EQ(c.schedules.size(), 1u);
  EXPECT_EQ(c.schedules[0].line, 2);
  EXPECT_EQ(c.schedules[0].document, nlohmann::json::parse(R"({"namespace": "ops", "name": "cron-2-backup.sh",
              "program": {"name": "cron-2-backup.sh", "args": {"command": "/usr/local/bin/backup.sh --full"}},
              "trigger": {"time": {"cron": "30 2 * * 1-5", "timezone": "Europe/Berlin", "catchup": "none"}}})"));
}

TEST(CrontabTest, NicknamesBecomeTheirFields) {
  CrontabConversion c = Convert("@hourly a\n@daily b\n@midnight c\n@weekly d\n@monthly e\n@yearly f\n@annually g\n");
  ASSERT_TRUE(c.refused.empty()) << Reasons(c);
  std::vector<std::string> crons;
  for (const auto& s : c.schedules) crons.push_back(s.document["trigger"]["time"]["cron"]);
  EXPECT_EQ(crons, (std::vector<std::string>{"0 * * * *", "0 0 * * *", "0 0 * * *", "0 0 * * 0", "0 0 1 * *",
                                             "0 0 1 1 *", "0 0 1 1 *"}));
}

TEST(CrontabTest, RebootIsRefusedWithItsLineAndTheRestConverted) {
  CrontabConversion c = Convert("@reboot /usr/bin/start-things\n0 * * * * echo hi\n");
  ASSERT_EQ(c.refused.size(), 1u);
  EXPECT_EQ(c.refused[0].line, 1);
  EXPECT_EQ(c.refused[0].text, "@reboot /usr/bin/start-things");
  EXPECT_NE(c.refused[0].note.find("@reboot"), std::string::npos);
  ASSERT_EQ(c.schedules.size(), 1u);
  EXPECT_EQ(c.schedules[0].line, 2);
}

TEST(CrontabTest, UnescapedPercentIsRefusedAndEscapedOneIsAPercent) {
  CrontabConversion c = Convert("0 0 * * * mail -s hi root%body\n0 0 * * * date +\\%F > /tmp/day\n");
  ASSERT_EQ(c.refused.size(), 1u) << Reasons(c);
  EXPECT_EQ(c.refused[0].line, 1);
  EXPECT_NE(c.refused[0].note.find("unescaped %"), std::string::npos);
  ASSERT_EQ(c.schedules.size(), 1u);
  EXPECT_EQ(c.schedules[0].document["program"]["args"]["command"], "date +%F > /tmp/day");
}

TEST(CrontabTest, EnvironmentLinesAreExportedByLaterCommandsOnly) {
  CrontabConversion c = Convert("0 1 * * * first\nPATH = /opt/bin:/usr/bin\nGREETING=\"it's me\"\n0 2 * * * second\n");
  ASSERT_TRUE(c.refused.empty()) << Reasons(c);
  ASSERT_EQ(c.schedules.size(), 2u);
  EXPECT_EQ(c.schedules[0].document["program"]["args"]["command"], "first");
  EXPECT_EQ(c.schedules[1].document["program"]["args"]["command"],
            "export PATH='/opt/bin:/usr/bin' GREETING='it'\\''s me'; second");
}

TEST(CrontabTest, CronTzSetsTheZoneOfLaterEntries) {
  CrontabConversion c = Convert("0 1 * * * a\nCRON_TZ=America/New_York\n0 2 * * * b\nCRON_TZ=Mars/Olympus\n");
  ASSERT_EQ(c.schedules.size(), 2u);
  EXPECT_EQ(c.schedules[0].document["trigger"]["time"]["timezone"], "UTC");
  EXPECT_EQ(c.schedules[1].document["trigger"]["time"]["timezone"], "America/New_York");
  ASSERT_EQ(c.refused.size(), 1u);
  EXPECT_EQ(c.refused[0].line, 4);
  EXPECT_NE(c.refused[0].note.find("Mars/Olympus"), std::string::npos);
}

TEST(CrontabTest, MailtoIsANoteAndAnotherShellIsRefused) {
  CrontabConversion c = Convert("MAILTO=ops@example.com\nSHELL=/bin/sh\nSHELL=/bin/bash\n0 0 * * * x\n");
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_EQ(c.notes[0].line, 1);
  ASSERT_EQ(c.refused.size(), 1u) << Reasons(c);
  EXPECT_EQ(c.refused[0].line, 3);
  EXPECT_NE(c.refused[0].note.find("/bin/bash"), std::string::npos);
  ASSERT_EQ(c.schedules.size(), 1u);
  EXPECT_EQ(c.schedules[0].document["program"]["args"]["command"], "x");
}

TEST(CrontabTest, BadLinesAreRefusedWithTheReason) {
  CrontabConversion c = Convert("61 * * * * x\n0 0 * *\nwhat is this\n@often x\n0 0 * * * echo {{run_id}}\n");
  EXPECT_TRUE(c.schedules.empty());
  ASSERT_EQ(c.refused.size(), 5u) << Reasons(c);
  EXPECT_NE(c.refused[0].note.find("minute"), std::string::npos) << c.refused[0].note;
  EXPECT_EQ(c.refused[1].note, "no command after the time fields");
  EXPECT_NE(c.refused[2].note.find("neither an entry"), std::string::npos);
  EXPECT_NE(c.refused[3].note.find("unknown nickname @often"), std::string::npos);
  EXPECT_NE(c.refused[4].note.find("placeholder"), std::string::npos);
}

TEST(CrontabTest, NamesAreUniquePerLineAndValidWhateverTheCommand) {
  CrontabConversion c = Convert("* * * * * 'my job' --x\n* * * * * ...\n* * * * * cd /tmp && ls\n");
  ASSERT_TRUE(c.refused.empty()) << Reasons(c);
  ASSERT_EQ(c.schedules.size(), 3u);
  EXPECT_EQ(c.schedules[0].document["name"], "cron-1-my");
  EXPECT_EQ(c.schedules[1].document["name"], "cron-2");
  EXPECT_EQ(c.schedules[2].document["name"], "cron-3-cd");
}

TEST(CrontabTest, UnknownZoneOrNamespaceRefusesEverything) {
  EXPECT_EQ(ConvertCrontab("* * * * * x\n", {"Nowhere/City", "default"}).refused.size(), 1u);
  CrontabConversion c = ConvertCrontab("* * * * * x\n", {"UTC", "a/b"});
  ASSERT_EQ(c.refused.size(), 1u);
  EXPECT_EQ(c.refused[0].line, 0);
  EXPECT_TRUE(c.schedules.empty());
}

}  // namespace
}  // namespace trigd
