#include "core/cron.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trigd {
namespace {

TimePoint At(const char* rfc3339) { return ParseTime(rfc3339).value(); }

CronExpr Cron(const char* text) {
  Result<CronExpr> cron = CronExpr::Parse(text);
  EXPECT_TRUE(cron.ok()) << text << ": " << cron.status().message();
  return cron.ok() ? cron.value() : CronExpr::Parse("* * * * *").value();
}

// The first `n` fire times of `text` after `after` in `zone`, formatted as RFC 3339 UTC.
std::vector<std::string> FireTimes(const char* text, const char* after, int n, const std::string& zone = "UTC") {
  CronExpr cron = Cron(text);
  std::vector<std::string> out;
  TimePoint t = At(after);
  for (int i = 0; i < n; ++i) {
    std::optional<TimePoint> next = cron.Next(t, zone);
    if (!next) {
      out.push_back("none");
      break;
    }
    out.push_back(FormatTime(*next));
    t = *next;
  }
  return out;
}

std::string ParseError(const char* text) {
  Result<CronExpr> cron = CronExpr::Parse(text);
  EXPECT_FALSE(cron.ok()) << text;
  if (cron.ok()) return "";
  EXPECT_EQ(cron.status().code(), StatusCode::kInvalid);
  return cron.status().message();
}

using Times = std::vector<std::string>;

// --- Parsing ---------------------------------------------------------------------------------

TEST(CronTest, WildcardFiresEveryMinuteStrictlyAfter) {
  EXPECT_EQ(FireTimes("* * * * *", "2026-01-01T00:00:00Z", 3),
            (Times{"2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z", "2026-01-01T00:03:00Z"}));
  // Sub-minute instants round up to the next whole minute.
  EXPECT_EQ(FireTimes("* * * * *", "2026-01-01T00:00:00.500Z", 1), (Times{"2026-01-01T00:01:00Z"}));
  EXPECT_EQ(FireTimes("* * * * *", "2026-01-01T00:00:59.999Z", 1), (Times{"2026-01-01T00:01:00Z"}));
}

TEST(CronTest, FireTimeEqualToAfterIsNotReturned) {
  EXPECT_EQ(FireTimes("0 5 * * *", "2026-01-01T05:00:00Z", 1), (Times{"2026-01-02T05:00:00Z"}));
  EXPECT_EQ(FireTimes("0 5 * * *", "2026-01-01T04:59:59.999Z", 1), (Times{"2026-01-01T05:00:00Z"}));
}

TEST(CronTest, RangeCoversBothEnds) {
  EXPECT_EQ(FireTimes("0 9-11 * * *", "2026-01-05T00:00:00Z", 4),
            (Times{"2026-01-05T09:00:00Z", "2026-01-05T10:00:00Z", "2026-01-05T11:00:00Z", "2026-01-06T09:00:00Z"}));
}

TEST(CronTest, StepsOverWildcardRangeAndStart) {
  EXPECT_EQ(FireTimes("*/15 0 * * *", "2026-01-01T00:00:00Z", 4),
            (Times{"2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:45:00Z", "2026-01-02T00:00:00Z"}));
  EXPECT_EQ(FireTimes("10-30/10 0 * * *", "2026-01-01T00:00:00Z", 4),
            (Times{"2026-01-01T00:10:00Z", "2026-01-01T00:20:00Z", "2026-01-01T00:30:00Z", "2026-01-02T00:10:00Z"}));
  // "a/n" runs from a to the end of the field.
  EXPECT_EQ(FireTimes("5/20 0 * * *", "2026-01-01T00:00:00Z", 4),
            (Times{"2026-01-01T00:05:00Z", "2026-01-01T00:25:00Z", "2026-01-01T00:45:00Z", "2026-01-02T00:05:00Z"}));
  // A step larger than the range leaves only its start.
  EXPECT_EQ(FireTimes("0 */100 * * *", "2026-01-01T00:00:00Z", 2),
            (Times{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"}));
  // Hours 0, 7, 14, 21: a step does not carry over midnight.
  EXPECT_EQ(FireTimes("0 */7 * * *", "2026-01-01T00:00:00Z", 4),
            (Times{"2026-01-01T07:00:00Z", "2026-01-01T14:00:00Z", "2026-01-01T21:00:00Z", "2026-01-02T00:00:00Z"}));
}

TEST(CronTest, ListsMixRangesStepsAndValues) {
  EXPECT_EQ(FireTimes("0,30 8,20 * * *", "2026-01-01T00:00:00Z", 5),
            (Times{"2026-01-01T08:00:00Z", "2026-01-01T08:30:00Z", "2026-01-01T20:00:00Z", "2026-01-01T20:30:00Z",
                   "2026-01-02T08:00:00Z"}));
  EXPECT_EQ(FireTimes("1,2-3,50-59/5 0 1 1 *", "2026-01-01T00:00:00Z", 6),
            (Times{"2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z", "2026-01-01T00:03:00Z", "2026-01-01T00:50:00Z",
                   "2026-01-01T00:55:00Z", "2027-01-01T00:01:00Z"}));
}

TEST(CronTest, MonthNamesAreCaseInsensitive) {
  EXPECT_EQ(FireTimes("0 0 1 jan,JUL *", "2026-01-01T00:00:00Z", 3),
            (Times{"2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z", "2027-07-01T00:00:00Z"}));
  EXPECT_EQ(FireTimes("0 0 1 Oct-Dec *", "2026-01-01T00:00:00Z", 4),
            (Times{"2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", "2027-10-01T00:00:00Z"}));
  EXPECT_EQ(FireTimes("0 0 1 jan-dec/6 *", "2026-01-01T00:00:00Z", 2),
            (Times{"2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z"}));
}

TEST(CronTest, DayNamesAndNumbersMeanTheSameDays) {
  // 2026-01-05 is a Monday.
  const Times weekdays = {"2026-01-05T00:00:00Z", "2026-01-06T00:00:00Z", "2026-01-07T00:00:00Z",
                          "2026-01-08T00:00:00Z", "2026-01-09T00:00:00Z", "2026-01-12T00:00:00Z"};
  EXPECT_EQ(FireTimes("0 0 * * MON-fri", "2026-01-04T12:00:00Z", 6), weekdays);
  EXPECT_EQ(FireTimes("0 0 * * 1-5", "2026-01-04T12:00:00Z", 6), weekdays);
  EXPECT_EQ(FireTimes("0 0 * * mon,Tue,WED,thu,fri", "2026-01-04T12:00:00Z", 6), weekdays);
}

TEST(CronTest, SevenAndZeroAndSunAreSunday) {
  const Times sundays = {"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"};
  EXPECT_EQ(FireTimes("0 0 * * 0", "2026-01-01T00:00:00Z", 2), sundays);
  EXPECT_EQ(FireTimes("0 0 * * 7", "2026-01-01T00:00:00Z", 2), sundays);
  EXPECT_EQ(FireTimes("0 0 * * sun", "2026-01-01T00:00:00Z", 2), sundays);
  // Ranges may end on Sunday written as 7, 0 or sun: Friday to Sunday.
  const Times weekend = {"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z",
                         "2026-01-09T00:00:00Z"};
  EXPECT_EQ(FireTimes("0 0 * * 5-7", "2026-01-01T00:00:00Z", 4), weekend);
  EXPECT_EQ(FireTimes("0 0 * * fri-sun", "2026-01-01T00:00:00Z", 4), weekend);
  EXPECT_EQ(FireTimes("0 0 * * 5-0", "2026-01-01T00:00:00Z", 4), weekend);
  // Every day of the week, Sunday counted once.
  EXPECT_EQ(FireTimes("0 0 * * 0-7", "2026-01-03T12:00:00Z", 2),
            (Times{"2026-01-04T00:00:00Z", "2026-01-05T00:00:00Z"}));
}

TEST(CronTest, BothDayFieldsRestrictedMatchEither) {
  // Vixie cron: the 13th of any month OR any Friday. April 2026: Fridays 3, 10, 17, 24;
  // the 13th is a Monday.
  EXPECT_EQ(FireTimes("0 0 13 * fri", "2026-04-01T00:00:00Z", 6),
            (Times{"2026-04-03T00:00:00Z", "2026-04-10T00:00:00Z", "2026-04-13T00:00:00Z", "2026-04-17T00:00:00Z",
                   "2026-04-24T00:00:00Z", "2026-05-01T00:00:00Z"}));
  // 1st-3rd of the month or Mondays (2026-04-06 is a Monday).
  EXPECT_EQ(FireTimes("0 0 1-3 * 1", "2026-03-31T00:00:00Z", 5),
            (Times{"2026-04-01T00:00:00Z", "2026-04-02T00:00:00Z", "2026-04-03T00:00:00Z", "2026-04-06T00:00:00Z",
                   "2026-04-13T00:00:00Z"}));
}

TEST(CronTest, OneRestrictedDayFieldAloneDecides) {
  EXPECT_EQ(FireTimes("0 0 13 * *", "2026-04-01T00:00:00Z", 2),
            (Times{"2026-04-13T00:00:00Z", "2026-05-13T00:00:00Z"}));
  EXPECT_EQ(FireTimes("0 0 * * fri", "2026-04-01T00:00:00Z", 2),
            (Times{"2026-04-03T00:00:00Z", "2026-04-10T00:00:00Z"}));
}

TEST(CronTest, StarredDayOfMonthWithStepIsUnrestrictedSoBothMustMatch) {
  // As in Vixie cron, a field beginning with '*' is unrestricted: "*/2" with "mon" means
  // odd days that are Mondays, not odd days or Mondays. April 2026 Mondays: 6, 13, 20, 27.
  EXPECT_EQ(FireTimes("0 0 */2 * mon", "2026-04-01T00:00:00Z", 3),
            (Times{"2026-04-13T00:00:00Z", "2026-04-27T00:00:00Z", "2026-05-11T00:00:00Z"}));
}

TEST(CronTest, AcceptsTabsAndRepeatedSpacesAndKeepsText) {
  Result<CronExpr> cron = CronExpr::Parse("  0\t5  *   * *  ");
  ASSERT_TRUE(cron.ok()) << cron.status().message();
  EXPECT_EQ(cron->text(), "  0\t5  *   * *  ");
  EXPECT_EQ(FormatTime(*cron->Next(At("2026-01-01T00:00:00Z"), "UTC")), "2026-01-01T05:00:00Z");
}

TEST(CronTest, RefusesWrongFieldCount) {
  EXPECT_EQ(ParseError(""), "expected 5 fields, got 0");
  EXPECT_EQ(ParseError("   "), "expected 5 fields, got 0");
  EXPECT_EQ(ParseError("* * * *"), "expected 5 fields, got 4");
  EXPECT_EQ(ParseError("* * * * * *"), "expected 5 fields, got 6");
  EXPECT_EQ(ParseError("@daily"), "expected 5 fields, got 1");
}

TEST(CronTest, RefusesOutOfRangeValuesNamingTheField) {
  EXPECT_EQ(ParseError("60 * * * *"), "field 1 (minute) out of range: 60");
  EXPECT_EQ(ParseError("0 25 * * *"), "field 2 (hour) out of range: 25");
  EXPECT_EQ(ParseError("0 24 * * *"), "field 2 (hour) out of range: 24");
  EXPECT_EQ(ParseError("0 0 0 * *"), "field 3 (day-of-month) out of range: 0");
  EXPECT_EQ(ParseError("0 0 32 * *"), "field 3 (day-of-month) out of range: 32");
  EXPECT_EQ(ParseError("0 0 * 0 *"), "field 4 (month) out of range: 0");
  EXPECT_EQ(ParseError("0 0 * 13 *"), "field 4 (month) out of range: 13");
  EXPECT_EQ(ParseError("0 0 * * 8"), "field 5 (day-of-week) out of range: 8");
  EXPECT_EQ(ParseError("0 20-25 * * *"), "field 2 (hour) out of range: 25");
  EXPECT_EQ(ParseError("0 1,2,99 * * *"), "field 2 (hour) out of range: 99");
  EXPECT_EQ(ParseError("99999999999999999999 * * * *"), "field 1 (minute) out of range: 99999999999999999999");
}

TEST(CronTest, RefusesInvalidValuesNamingTheField) {
  EXPECT_EQ(ParseError("0 0 * * xyz"), "field 5 (day-of-week): invalid value \"xyz\"");
  EXPECT_EQ(ParseError("0 0 * * monday"), "field 5 (day-of-week): invalid value \"monday\"");
  EXPECT_EQ(ParseError("0 0 * jan-xyz *"), "field 4 (month): invalid value \"xyz\"");
  // Names belong to their own fields only.
  EXPECT_EQ(ParseError("jan * * * *"), "field 1 (minute): invalid value \"jan\"");
  EXPECT_EQ(ParseError("0 0 * mon *"), "field 4 (month): invalid value \"mon\"");
  EXPECT_EQ(ParseError("0 0 * * jan"), "field 5 (day-of-week): invalid value \"jan\"");
  EXPECT_EQ(ParseError("-1 * * * *"), "field 1 (minute): invalid value \"\"");
  EXPECT_EQ(ParseError("1-2-3 * * * *"), "field 1 (minute): invalid value \"1-2-3\"");
  EXPECT_EQ(ParseError("? * * * *"), "field 1 (minute): invalid value \"?\"");
  EXPECT_EQ(ParseError("0 0 L * *"), "field 3 (day-of-month): invalid value \"L\"");
  EXPECT_EQ(ParseError("*/5/2 * * * *"), "field 1 (minute): invalid value \"*/5/2\"");
  EXPECT_EQ(ParseError("** * * * *"), "field 1 (minute): invalid value \"**\"");
}

TEST(CronTest, RefusesBadStepsRangesAndEmptyItems) {
  EXPECT_EQ(ParseError("*/0 * * * *"), "field 1 (minute): invalid step \"0\"");
  EXPECT_EQ(ParseError("*/ * * * *"), "field 1 (minute): invalid step \"\"");
  EXPECT_EQ(ParseError("0 */x * * *"), "field 2 (hour): invalid step \"x\"");
  EXPECT_EQ(ParseError("0 0 * * */-1"), "field 5 (day-of-week): invalid step \"-1\"");
  EXPECT_EQ(ParseError("0 5-3 * * *"), "field 2 (hour): invalid range \"5-3\"");
  EXPECT_EQ(ParseError("0 0 * dec-jan *"), "field 4 (month): invalid range \"dec-jan\"");
  EXPECT_EQ(ParseError("1,,2 * * * *"), "field 1 (minute): empty item in \"1,,2\"");
  EXPECT_EQ(ParseError("0 0 1, * *"), "field 3 (day-of-month): empty item in \"1,\"");
}

// --- Calendar edges --------------------------------------------------------------------------

TEST(CronTest, CrossesMonthAndYearEnds) {
  EXPECT_EQ(FireTimes("0 0 31 * *", "2026-04-01T00:00:00Z", 3),
            (Times{"2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z"}));
  EXPECT_EQ(FireTimes("59 23 31 12 *", "2026-06-01T00:00:00Z", 2),
            (Times{"2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z"}));
  EXPECT_EQ(FireTimes("0 0 1 * *", "2026-12-31T23:59:00Z", 2), (Times{"2027-01-01T00:00:00Z", "2027-02-01T00:00:00Z"}));
  EXPECT_EQ(FireTimes("* * * * *", "2026-12-31T23:59:00Z", 1), (Times{"2027-01-01T00:00:00Z"}));
}

TEST(CronTest, FebruaryTwentyNinthFiresOnlyInLeapYears) {
  EXPECT_EQ(FireTimes("0 12 29 2 *", "2026-03-01T00:00:00Z", 2),
            (Times{"2028-02-29T12:00:00Z", "2032-02-29T12:00:00Z"}));
  // 2100 is not a leap year: after 2096 comes 2104, beyond the 5-year horizon.
  EXPECT_EQ(FireTimes("0 12 29 2 *", "2096-03-01T00:00:00Z", 1), (Times{"none"}));
}

TEST(CronTest, ImpossibleDateHasNoFireTime) {
  EXPECT_EQ(FireTimes("0 0 30 2 *", "2026-01-01T00:00:00Z", 1), (Times{"none"}));
  EXPECT_EQ(FireTimes("0 0 31 4,6,9,11 *", "2026-01-01T00:00:00Z", 1), (Times{"none"}));
  // With a restricted day-of-week the OR rule still finds days.
  EXPECT_EQ(FireTimes("0 0 30 2 mon", "2026-01-01T00:00:00Z", 1), (Times{"2026-02-02T00:00:00Z"}));
}

TEST(CronTest, EvaluatesInTheGivenZone) {
  // 05:00 in Kolkata (+05:30) is 23:30 UTC the day before.
  EXPECT_EQ(FireTimes("0 5 * * *", "2026-01-01T00:00:00Z", 2, "Asia/Kolkata"),
            (Times{"2026-01-01T23:30:00Z", "2026-01-02T23:30:00Z"}));
  // Day fields are local days too: Monday 00:00 in Tokyo is Sunday 15:00 UTC.
  EXPECT_EQ(FireTimes("0 0 * * mon", "2026-01-01T00:00:00Z", 1, "Asia/Tokyo"), (Times{"2026-01-04T15:00:00Z"}));
}

TEST(CronTest, UnknownZoneHasNoFireTime) {
  EXPECT_FALSE(Cron("* * * * *").Next(At("2026-01-01T00:00:00Z"), "Mars/Olympus").has_value());
}

// --- Daylight saving time --------------------------------------------------------------------
// Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z); 2026-10-25 03:00 CEST -> 02:00
// CET (01:00Z). America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z); 2026-11-01
// 02:00 EDT -> 01:00 EST (06:00Z).

TEST(CronTest, SkippedHourFiresOnceAtNextValidInstantInBerlin) {
  EXPECT_EQ(FireTimes("30 2 * * *", "2026-03-27T12:00:00Z", 4, "Europe/Berlin"),
            (Times{"2026-03-28T01:30:00Z",  // 02:30 CET
                   "2026-03-29T01:00:00Z",  // 02:30 does not exist: 03:00 CEST
                   "2026-03-30T00:30:00Z",  // 02:30 CEST
                   "2026-03-31T00:30:00Z"}));
}

TEST(CronTest, HourlyOnSpringForwardDayFiresOncePerRealHourInBerlin) {
  EXPECT_EQ(FireTimes("0 * * * *", "2026-03-28T23:30:00Z", 3, "Europe/Berlin"),
            (Times{"2026-03-29T00:00:00Z",     // 01:00 CET
                   "2026-03-29T01:00:00Z",     // 02:00 skipped, merges with 03:00 CEST
                   "2026-03-29T02:00:00Z"}));  // 04:00 CEST
}

TEST(CronTest, QuarterHourlyCollapsesTheGapIntoOneFireTimeInBerlin) {
  EXPECT_EQ(FireTimes("*/15 * * * *", "2026-03-29T00:30:00Z", 4, "Europe/Berlin"),
            (Times{"2026-03-29T00:45:00Z",  // 01:45 CET
                   "2026-03-29T01:00:00Z",  // 02:00-02:45 skipped, and 03:00 CEST
                   "2026-03-29T01:15:00Z", "2026-03-29T01:30:00Z"}));
}

TEST(CronTest, RepeatedHourFiresOnceAtFirstOccurrenceInBerlin) {
  // 02:30 happens at 00:30Z (CEST) and again at 01:30Z (CET); only the first fires.
  EXPECT_EQ(FireTimes("30 2 * * *", "2026-10-24T12:00:00Z", 3, "Europe/Berlin"),
            (Times{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z", "2026-10-27T01:30:00Z"}));
  EXPECT_EQ(FireTimes("0 * * * *", "2026-10-24T23:30:00Z", 4, "Europe/Berlin"),
            (Times{"2026-10-25T00:00:00Z",  // 02:00 CEST
                   "2026-10-25T02:00:00Z",  // 03:00 CET (02:00 CET is a repeat)
                   "2026-10-25T03:00:00Z", "2026-10-25T04:00:00Z"}));
  EXPECT_EQ(FireTimes("*/15 * * * *", "2026-10-25T00:30:00Z", 4, "Europe/Berlin"),
            (Times{"2026-10-25T00:45:00Z", "2026-10-25T02:00:00Z", "2026-10-25T02:15:00Z", "2026-10-25T02:30:00Z"}));
}

TEST(CronTest, SkippedHourFiresOnceAtNextValidInstantInNewYork) {
  EXPECT_EQ(FireTimes("30 2 * * *", "2026-03-07T00:00:00Z", 3, "America/New_York"),
            (Times{"2026-03-07T07:30:00Z",     // 02:30 EST
                   "2026-03-08T07:00:00Z",     // 02:30 does not exist: 03:00 EDT
                   "2026-03-09T06:30:00Z"}));  // 02:30 EDT
  EXPECT_EQ(FireTimes("0 * * * *", "2026-03-08T05:30:00Z", 3, "America/New_York"),
            (Times{"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}));
  EXPECT_EQ(FireTimes("*/15 * * * *", "2026-03-08T06:30:00Z", 4, "America/New_York"),
            (Times{"2026-03-08T06:45:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:15:00Z", "2026-03-08T07:30:00Z"}));
}

TEST(CronTest, RepeatedHourFiresOnceAtFirstOccurrenceInNewYork) {
  // 02:30 is not repeated in New York (01:00-01:59 is): it fires once, in EST.
  EXPECT_EQ(FireTimes("30 2 * * *", "2026-10-31T12:00:00Z", 2, "America/New_York"),
            (Times{"2026-11-01T07:30:00Z", "2026-11-02T07:30:00Z"}));
  EXPECT_EQ(FireTimes("30 1 * * *", "2026-10-31T12:00:00Z", 2, "America/New_York"),
            (Times{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}));
  EXPECT_EQ(FireTimes("0 * * * *", "2026-11-01T03:30:00Z", 4, "America/New_York"),
            (Times{"2026-11-01T04:00:00Z",  // 00:00 EDT
                   "2026-11-01T05:00:00Z",  // 01:00 EDT, fires once
                   "2026-11-01T07:00:00Z",  // 02:00 EST
                   "2026-11-01T08:00:00Z"}));
  EXPECT_EQ(FireTimes("*/15 * * * *", "2026-11-01T05:30:00Z", 4, "America/New_York"),
            (Times{"2026-11-01T05:45:00Z", "2026-11-01T07:00:00Z", "2026-11-01T07:15:00Z", "2026-11-01T07:30:00Z"}));
}

TEST(CronTest, FromInsideTheRepeatedHourTheNextIsAfterIt) {
  // 06:10Z is 01:10 EST, the second pass: 01:15-01:45 already fired in EDT.
  EXPECT_EQ(FireTimes("*/15 * * * *", "2026-11-01T06:10:00Z", 2, "America/New_York"),
            (Times{"2026-11-01T07:00:00Z", "2026-11-01T07:15:00Z"}));
  EXPECT_EQ(FireTimes("30 1 * * *", "2026-11-01T06:10:00Z", 1, "America/New_York"), (Times{"2026-11-02T06:30:00Z"}));
}

TEST(CronTest, FromInsideTheGapTheNextIsAfterIt) {
  // 01:00Z exactly is 03:00 CEST, where the gap's fire time landed.
  EXPECT_EQ(FireTimes("*/15 * * * *", "2026-03-29T01:00:00Z", 1, "Europe/Berlin"), (Times{"2026-03-29T01:15:00Z"}));
  EXPECT_EQ(FireTimes("30 2 * * *", "2026-03-29T00:59:59Z", 1, "Europe/Berlin"), (Times{"2026-03-29T01:00:00Z"}));
}

// --- NextFireTime ----------------------------------------------------------------------------

TimeTrigger Every(Millis every) {
  TimeTrigger t;
  t.every = every;
  return t;
}

TimeTrigger CronTrigger(const char* text, const char* zone = "UTC") {
  TimeTrigger t;
  t.cron = text;
  t.timezone = zone;
  return t;
}

TEST(NextFireTimeTest, EveryIsAnchoredNotRelativeToAfter) {
  const TimeTrigger t = Every(std::chrono::minutes(15));
  const TimePoint anchor = At("2026-01-01T10:00:00Z");
  EXPECT_EQ(NextFireTime(t, anchor, At("2026-01-01T10:00:00Z")), At("2026-01-01T10:15:00Z"));
  EXPECT_EQ(NextFireTime(t, anchor, At("2026-01-01T10:20:00Z")), At("2026-01-01T10:30:00Z"));
  EXPECT_EQ(NextFireTime(t, anchor, At("2026-01-01T10:30:00Z")), At("2026-01-01T10:45:00Z"));
  EXPECT_EQ(NextFireTime(t, anchor, At("2026-01-01T10:29:59.999Z")), At("2026-01-01T10:30:00Z"));
  EXPECT_EQ(NextFireTime(t, anchor, At("2026-01-02T10:00:00Z")), At("2026-01-02T10:15:00Z"));
}

TEST(NextFireTimeTest, EveryBeforeAnchorStartsOneIntervalAfterIt) {
  const TimeTrigger t = Every(std::chrono::minutes(15));
  const TimePoint anchor = At("2026-01-01T10:00:00Z");
  EXPECT_EQ(NextFireTime(t, anchor, At("2026-01-01T09:00:00Z")), At("2026-01-01T10:15:00Z"));
  EXPECT_EQ(NextFireTime(t, anchor, At("2025-12-01T09:07:00Z")), At("2026-01-01T10:15:00Z"));
}

TEST(NextFireTimeTest, CronIgnoresAnchorAndUsesZone) {
  const TimeTrigger t = CronTrigger("0 5 * * *", "Europe/Berlin");
  EXPECT_EQ(NextFireTime(t, At("2020-01-01T00:07:00Z"), At("2026-01-01T00:00:00Z")), At("2026-01-01T04:00:00Z"));
}

TEST(NextFireTimeTest, InvalidTriggerHasNoFireTime) {
  EXPECT_FALSE(NextFireTime(CronTrigger("61 * * * *"), TimePoint(), At("2026-01-01T00:00:00Z")));
  EXPECT_FALSE(NextFireTime(Every(Millis(0)), TimePoint(), At("2026-01-01T00:00:00Z")));
  EXPECT_FALSE(NextFireTime(TimeTrigger(), TimePoint(), At("2026-01-01T00:00:00Z")));
}

// --- ComputeDueFireTimes ---------------------------------------------------------------------
// Hourly at :00, last fired 10:00, trigd down until 13:30: 11:00, 12:00 and 13:00 are due and
// all three are missed (older than the 60 s grace).

TimeTrigger Hourly(CatchupPolicy policy, Millis window = std::chrono::hours(24)) {
  TimeTrigger t = CronTrigger("0 * * * *");
  t.catchup = policy;
  t.catchup_window = window;
  return t;
}

std::vector<std::string> Format(const std::vector<TimePoint>& times) {
  std::vector<std::string> out;
  for (TimePoint t : times) out.push_back(FormatTime(t));
  return out;
}

const TimePoint kAnchor = At("2026-01-01T00:00:00Z");

TEST(DueFireTimesTest, CatchupAllProducesEveryMissedFireTimeOldestFirst) {
  DueFireTimes due =
      ComputeDueFireTimes(Hourly(CatchupPolicy::kAll), kAnchor, At("2026-01-01T10:00:00Z"), At("2026-01-01T13:30:00Z"));
  EXPECT_EQ(Format(due.fire), (Times{"2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z", "2026-01-01T13:00:00Z"}));
  EXPECT_EQ(due.skipped, 0);
  EXPECT_EQ(due.next, At("2026-01-01T14:00:00Z"));
}

TEST(DueFireTimesTest, CatchupLatestProducesOnlyTheNewest) {
  DueFireTimes due = ComputeDueFireTimes(Hourly(CatchupPolicy::kLatest), kAnchor, At("2026-01-01T10:00:00Z"),
                                         At("2026-01-01T13:30:00Z"));
  EXPECT_EQ(Format(due.fire), (Times{"2026-01-01T13:00:00Z"}));
  EXPECT_EQ(due.skipped, 2);
  EXPECT_EQ(due.next, At("2026-01-01T14:00:00Z"));
}

TEST(DueFireTimesTest, CatchupNoneProducesNothingMissed) {
  DueFireTimes due = ComputeDueFireTimes(Hourly(CatchupPolicy::kNone), kAnchor, At("2026-01-01T10:00:00Z"),
                                         At("2026-01-01T13:30:00Z"));
  EXPECT_TRUE(due.fire.empty());
  EXPECT_EQ(due.skipped, 3);
  EXPECT_EQ(due.next, At("2026-01-01T14:00:00Z"));
}

TEST(DueFireTimesTest, CatchupNoneStillProducesAFireTimeWithinGrace) {
  DueFireTimes due = ComputeDueFireTimes(Hourly(CatchupPolicy::kNone), kAnchor, At("2026-01-01T10:00:00Z"),
                                         At("2026-01-01T13:01:00Z"), std::chrono::seconds(60));
  EXPECT_EQ(Format(due.fire), (Times{"2026-01-01T13:00:00Z"}));
  EXPECT_EQ(due.skipped, 2);
  due = ComputeDueFireTimes(Hourly(CatchupPolicy::kNone), kAnchor, At("2026-01-01T10:00:00Z"),
                            At("2026-01-01T13:01:00.001Z"), std::chrono::seconds(60));
  EXPECT_TRUE(due.fire.empty());
  EXPECT_EQ(due.skipped, 3);
}

TEST(DueFireTimesTest, FireTimesOlderThanCatchupWindowAreSkippedWhateverThePolicy) {
  // Window 2h at 13:30: 11:00 is older than 11:30 and skipped.
  const Millis window = std::chrono::hours(2);
  DueFireTimes all = ComputeDueFireTimes(Hourly(CatchupPolicy::kAll, window), kAnchor, At("2026-01-01T10:00:00Z"),
                                         At("2026-01-01T13:30:00Z"));
  EXPECT_EQ(Format(all.fire), (Times{"2026-01-01T12:00:00Z", "2026-01-01T13:00:00Z"}));
  EXPECT_EQ(all.skipped, 1);
  DueFireTimes latest = ComputeDueFireTimes(Hourly(CatchupPolicy::kLatest, window), kAnchor, At("2026-01-01T10:00:00Z"),
                                            At("2026-01-01T13:30:00Z"));
  EXPECT_EQ(Format(latest.fire), (Times{"2026-01-01T13:00:00Z"}));
  EXPECT_EQ(latest.skipped, 2);
  DueFireTimes none = ComputeDueFireTimes(Hourly(CatchupPolicy::kNone, window), kAnchor, At("2026-01-01T10:00:00Z"),
                                          At("2026-01-01T13:30:00Z"));
  EXPECT_TRUE(none.fire.empty());
  EXPECT_EQ(none.skipped, 3);
  // Exactly catchup_window old is still inside the window.
  DueFireTimes edge = ComputeDueFireTimes(Hourly(CatchupPolicy::kAll, window), kAnchor, At("2026-01-01T10:00:00Z"),
                                          At("2026-01-01T13:00:00Z"));
  EXPECT_EQ(Format(edge.fire), (Times{"2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z", "2026-01-01T13:00:00Z"}));
  EXPECT_EQ(edge.skipped, 0);
}

TEST(DueFireTimesTest, OnTimeFireTimeIsProducedByEveryPolicy) {
  for (CatchupPolicy policy : {CatchupPolicy::kAll, CatchupPolicy::kLatest, CatchupPolicy::kNone}) {
    DueFireTimes due =
        ComputeDueFireTimes(Hourly(policy), kAnchor, At("2026-01-01T10:00:00Z"), At("2026-01-01T11:00:00Z"));
    EXPECT_EQ(Format(due.fire), (Times{"2026-01-01T11:00:00Z"})) << CatchupPolicyName(policy);
    EXPECT_EQ(due.skipped, 0);
    EXPECT_EQ(due.next, At("2026-01-01T12:00:00Z"));
  }
}

TEST(DueFireTimesTest, NothingDueBeforeTheNextFireTime) {
  DueFireTimes due =
      ComputeDueFireTimes(Hourly(CatchupPolicy::kAll), kAnchor, At("2026-01-01T11:00:00Z"), At("2026-01-01T11:59:59Z"));
  EXPECT_TRUE(due.fire.empty());
  EXPECT_EQ(due.skipped, 0);
  EXPECT_EQ(due.next, At("2026-01-01T12:00:00Z"));
}

TEST(DueFireTimesTest, NewScheduleCountsFromItsAnchor) {
  DueFireTimes due = ComputeDueFireTimes(Hourly(CatchupPolicy::kAll), At("2026-01-01T10:30:00Z"), std::nullopt,
                                         At("2026-01-01T12:00:00Z"));
  EXPECT_EQ(Format(due.fire), (Times{"2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z"}));
}

TEST(DueFireTimesTest, EveryFiresAtAnchorPlusMultiples) {
  TimeTrigger t = Every(std::chrono::minutes(20));
  t.catchup = CatchupPolicy::kAll;
  const TimePoint anchor = At("2026-01-01T10:05:00Z");
  DueFireTimes due = ComputeDueFireTimes(t, anchor, std::nullopt, At("2026-01-01T11:10:00Z"));
  EXPECT_EQ(Format(due.fire), (Times{"2026-01-01T10:25:00Z", "2026-01-01T10:45:00Z", "2026-01-01T11:05:00Z"}));
  EXPECT_EQ(due.next, At("2026-01-01T11:25:00Z"));
  due = ComputeDueFireTimes(t, anchor, At("2026-01-01T10:45:00Z"), At("2026-01-01T11:10:00Z"));
  EXPECT_EQ(Format(due.fire), (Times{"2026-01-01T11:05:00Z"}));
}

TEST(DueFireTimesTest, LongDowntimeJumpsToTheWindowAndCountsSkippedExactlyForEvery) {
  // A year of minutes behind with a one-day window: 1441 fire times lie in [now - 1d, now].
  TimeTrigger t = Every(std::chrono::minutes(1));
  t.catchup = CatchupPolicy::kAll;
  t.catchup_window = std::chrono::hours(24);
  const TimePoint anchor = At("2025-01-01T00:00:00Z");
  DueFireTimes due = ComputeDueFireTimes(t, anchor, std::nullopt, At("2026-01-01T00:00:00Z"));
  ASSERT_EQ(due.fire.size(), 1441u);
  EXPECT_EQ(FormatTime(due.fire.front()), "2025-12-31T00:00:00Z");
  EXPECT_EQ(FormatTime(due.fire.back()), "2026-01-01T00:00:00Z");
  EXPECT_EQ(due.skipped, 365 * 1440 - 1440 - 1);  // minutes 1 .. 364*1440-1 after the anchor
}

TEST(DueFireTimesTest, LongDowntimeWithCronJumpsToTheWindow) {
  TimeTrigger t = CronTrigger("* * * * *");
  t.catchup = CatchupPolicy::kLatest;
  t.catchup_window = std::chrono::hours(1);
  DueFireTimes due =
      ComputeDueFireTimes(t, kAnchor, At("2025-01-01T00:00:00Z"), At("2026-01-01T00:00:00Z"), std::chrono::seconds(60),
                          /*limit=*/1000);
  EXPECT_EQ(Format(due.fire), (Times{"2026-01-01T00:00:00Z"}));
  // 1000 pre-window fire times counted (the limit), then 60 in the window not produced.
  EXPECT_EQ(due.skipped, 1000 + 60);
  EXPECT_EQ(due.next, At("2026-01-01T00:01:00Z"));
}

TEST(DueFireTimesTest, LimitBoundsHowManyDueFireTimesAreLookedAt) {
  DueFireTimes due = ComputeDueFireTimes(Hourly(CatchupPolicy::kAll), kAnchor, At("2026-01-01T10:00:00Z"),
                                         At("2026-01-01T13:30:00Z"), std::chrono::seconds(60), /*limit=*/2);
  EXPECT_EQ(Format(due.fire), (Times{"2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z"}));
}

TEST(DueFireTimesTest, DstSpringForwardFiresTheSkippedTimeOnce) {
  TimeTrigger t = CronTrigger("30 2 * * *", "Europe/Berlin");
  t.catchup = CatchupPolicy::kAll;
  DueFireTimes due = ComputeDueFireTimes(t, kAnchor, At("2026-03-28T12:00:00Z"), At("2026-03-29T12:00:00Z"));
  EXPECT_EQ(Format(due.fire), (Times{"2026-03-29T01:00:00Z"}));
  EXPECT_EQ(due.next, At("2026-03-30T00:30:00Z"));
}

// The ranges of fire times decided but not produced: a producer's tick for one of them is a
// backfill, for any other fire time up to the cursor a duplicate of trigd's own (PgStore).
TEST(DueFireTimesTest, NotFiredRangesHoldExactlyTheSkippedFireTimes) {
  using Range = std::pair<TimePoint, TimePoint>;
  const TimePoint last = At("2026-01-01T10:00:00Z"), now = At("2026-01-01T13:30:00Z");
  EXPECT_TRUE(ComputeDueFireTimes(Hourly(CatchupPolicy::kAll), kAnchor, last, now).not_fired.empty());
  EXPECT_EQ(ComputeDueFireTimes(Hourly(CatchupPolicy::kLatest), kAnchor, last, now).not_fired,
            (std::vector<Range>{{last, At("2026-01-01T12:00:00Z")}}));
  EXPECT_EQ(ComputeDueFireTimes(Hourly(CatchupPolicy::kNone), kAnchor, last, now).not_fired,
            (std::vector<Range>{{last, At("2026-01-01T13:00:00Z")}}));
  // Before the window (2h: from 11:30): 11:00 is skipped, 12:00 and 13:00 fire.
  EXPECT_EQ(ComputeDueFireTimes(Hourly(CatchupPolicy::kAll, std::chrono::hours(2)), kAnchor, last, now).not_fired,
            (std::vector<Range>{{last, At("2026-01-01T11:29:59.999Z")}}));
  // An on-time fire time: nothing skipped.
  EXPECT_TRUE(
      ComputeDueFireTimes(Hourly(CatchupPolicy::kNone), kAnchor, last, At("2026-01-01T11:00:30Z")).not_fired.empty());
  // Past the limit: 13:00 is neither produced nor counted, and is in a range.
  EXPECT_EQ(ComputeDueFireTimes(Hourly(CatchupPolicy::kAll), kAnchor, last, now, std::chrono::seconds(60), 2).not_fired,
            (std::vector<Range>{{At("2026-01-01T12:00:00Z"), now}}));
}

TEST(DueFireTimesTest, InvalidCronProducesNothing) {
  DueFireTimes due = ComputeDueFireTimes(CronTrigger("bad"), kAnchor, std::nullopt, At("2026-01-01T13:30:00Z"));
  EXPECT_TRUE(due.fire.empty());
  EXPECT_EQ(due.skipped, 0);
  EXPECT_FALSE(due.next.has_value());
}

// --- Active period (SPEC §9 `active`) ----------------------------------------------------------

ActivePeriod Period(const char* from, const char* until) {
  ActivePeriod p;
  if (from) p.from = At(from);
  if (until) p.until = At(until);
  return p;
}

// Before `from` nothing is due and nothing is skipped; the next fire time is the first at or
// after `from`, and from then on the fire times are produced as usual.
TEST(ActiveFireTimesTest, NoFireTimeBeforeTheStart) {
  const std::optional<ActivePeriod> active = Period("2026-01-01T12:00:00Z", nullptr);
  DueFireTimes due = ComputeDueFireTimes(Hourly(CatchupPolicy::kAll), active, kAnchor, At("2026-01-01T09:00:00Z"),
                                         At("2026-01-01T10:30:00Z"));
  EXPECT_TRUE(due.fire.empty());
  EXPECT_EQ(due.skipped, 0);
  EXPECT_EQ(due.next, At("2026-01-01T12:00:00Z"));
  // trigd down from 09:00 to 13:30: 10:00 and 11:00 were never fire times.
  due = ComputeDueFireTimes(Hourly(CatchupPolicy::kAll), active, kAnchor, At("2026-01-01T09:00:00Z"),
                            At("2026-01-01T13:30:00Z"));
  EXPECT_EQ(Format(due.fire), (Times{"2026-01-01T12:00:00Z", "2026-01-01T13:00:00Z"}));
  EXPECT_EQ(due.skipped, 0);
  due = ComputeDueFireTimes(Hourly(CatchupPolicy::kLatest), active, kAnchor, std::nullopt, At("2026-01-01T13:30:00Z"));
  EXPECT_EQ(Format(due.fire), (Times{"2026-01-01T13:00:00Z"}));
  EXPECT_EQ(due.skipped, 1);
}

// At and after `until` there is no fire time: none is produced and the producer stops (no next).
TEST(ActiveFireTimesTest, NoFireTimeFromTheEndOn) {
  const std::optional<ActivePeriod> active = Period(nullptr, "2026-01-01T12:00:00Z");
  DueFireTimes due = ComputeDueFireTimes(Hourly(CatchupPolicy::kAll), active, kAnchor, At("2026-01-01T10:00:00Z"),
                                         At("2026-01-01T11:00:00Z"));
  EXPECT_EQ(Format(due.fire), (Times{"2026-01-01T11:00:00Z"}));
  EXPECT_FALSE(due.next) << FormatTime(*due.next);
  // trigd down across the end: the period's fire times not produced before it are skipped
  // whatever the policy (their ticks would reach a schedule that ignores events), the later
  // ones never existed.
  for (CatchupPolicy policy : {CatchupPolicy::kAll, CatchupPolicy::kLatest, CatchupPolicy::kNone}) {
    due = ComputeDueFireTimes(Hourly(policy), active, kAnchor, At("2026-01-01T09:00:00Z"), At("2026-01-01T14:30:00Z"));
    EXPECT_TRUE(due.fire.empty()) << Format(due.fire)[0];
    EXPECT_EQ(due.skipped, 2);
    EXPECT_FALSE(due.next);
  }
  // Everything up to the end decided: nothing more, ever.
  due = ComputeDueFireTimes(Hourly(CatchupPolicy::kAll), active, kAnchor, At("2026-01-01T14:30:00Z"),
                            At("2026-01-02T14:30:00Z"));
  EXPECT_TRUE(due.fire.empty());
  EXPECT_EQ(due.skipped, 0);
  EXPECT_FALSE(due.next);
}

// Without a period: ComputeDueFireTimes as it always was.
TEST(ActiveFireTimesTest, NoPeriodIsThePlainComputation) {
  DueFireTimes due = ComputeDueFireTimes(Hourly(CatchupPolicy::kAll), std::nullopt, kAnchor, At("2026-01-01T10:00:00Z"),
                                         At("2026-01-01T13:30:00Z"));
  EXPECT_EQ(Format(due.fire), (Times{"2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z", "2026-01-01T13:00:00Z"}));
  EXPECT_EQ(due.next, At("2026-01-01T14:00:00Z"));
}

// The first fire time of a schedule applied before its period (the time trigger's first
// next_fire_at): the period's first, and none for a period already over.
TEST(ActiveFireTimesTest, NextActiveFireTime) {
  const TimePoint now = At("2026-01-01T10:30:00Z");
  EXPECT_EQ(NextActiveFireTime(Hourly(CatchupPolicy::kAll), Period("2026-01-02T00:00:00Z", nullptr), kAnchor, now),
            At("2026-01-02T00:00:00Z"));
  EXPECT_EQ(NextActiveFireTime(Hourly(CatchupPolicy::kAll), Period("2026-01-02T00:00:01Z", nullptr), kAnchor, now),
            At("2026-01-02T01:00:00Z"));
  EXPECT_EQ(NextActiveFireTime(Hourly(CatchupPolicy::kAll), std::nullopt, kAnchor, now), At("2026-01-01T11:00:00Z"));
  EXPECT_FALSE(NextActiveFireTime(Hourly(CatchupPolicy::kAll), Period(nullptr, "2026-01-01T11:00:00Z"), kAnchor, now));
  EXPECT_EQ(NextActiveFireTime(Every(std::chrono::minutes(45)), Period("2026-01-01T12:00:00Z", nullptr), now, now),
            At("2026-01-01T12:00:00Z"));
}

}  // namespace
}  // namespace trigd
