// The reference worker's decisions before it starts a launch request (app/worker_control.h):
// the start deadline, the attempts trigd ended (the control topic), and the bound on what it
// remembers of them.
#include "app/worker_control.h"

#include <gtest/gtest.h>

namespace trigd {
namespace {

TimePoint At(const char* text) { return *ParseTime(text); }

ControlMessage Ended(const std::string& run, int64_t attempt, const char* start_by = "2026-11-27T10:10:00Z") {
  auto m = ParseControlMessage(R"({"type":"attempt_ended","run_id":")" + run + R"(","attempt":)" +
                               std::to_string(attempt) + R"(,"status":"failed","reason":"lost","final":true,)" +
                               R"("start_by":")" + start_by + R"(","time":"2026-11-27T10:10:01Z"})");
  EXPECT_TRUE(std::holds_alternative<ControlMessage>(m)) << std::get<std::string>(m);
  return std::get<ControlMessage>(m);
}

TEST(WorkerControlTest, ARequestPastItsStartDeadlineDoesNotStart) {
  const TimePoint start_by = At("2026-11-27T10:10:00Z");
  EXPECT_EQ(PastStartDeadline(start_by, At("2026-11-27T10:09:59Z")), std::nullopt);
  EXPECT_EQ(PastStartDeadline(start_by, start_by), std::nullopt);
  EXPECT_EQ(PastStartDeadline(start_by, At("2026-11-27T10:10:00.001Z")),
            "past its start deadline 2026-11-27T10:10:00Z (trigd counts it lost)");
  EXPECT_EQ(PastStartDeadline(std::nullopt, At("2100-01-01T00:00:00Z")), std::nullopt);  // none: no deadline
}

TEST(WorkerControlTest, AnEndedAttemptAndEarlierOnesDoNotStartButARetryDoes) {
  EndedAttempts ended;
  ended.Add(Ended("r1", 2), At("2026-11-27T10:10:02Z"));
  EXPECT_EQ(ended.WhyEnded("r1", 1), "trigd ended attempt 2 (failed, reason lost)");
  EXPECT_EQ(ended.WhyEnded("r1", 2), "trigd ended attempt 2 (failed, reason lost)");
  EXPECT_EQ(ended.WhyEnded("r1", 3), std::nullopt);
  EXPECT_EQ(ended.WhyEnded("r2", 1), std::nullopt);
  // An older attempt's end, read later, does not hide the later one's.
  ended.Add(Ended("r1", 1), At("2026-11-27T10:10:03Z"));
  EXPECT_NE(ended.WhyEnded("r1", 2), std::nullopt);
}

TEST(WorkerControlTest, EndedAttemptsAreForgottenOnceTheirDeadlineRefusesThem) {
  EndedAttempts ended;
  ended.Add(Ended("early", 1, "2026-11-27T10:00:00Z"), At("2026-11-27T10:00:01Z"));
  ended.Add(Ended("late", 1, "2026-11-27T11:00:00Z"), At("2026-11-27T10:00:01Z"));
  ended.Forget(At("2026-11-27T10:00:00Z") + EndedAttempts::kForgetAfter - std::chrono::milliseconds(1));
  EXPECT_EQ(ended.size(), 2u);
  ended.Forget(At("2026-11-27T10:00:00Z") + EndedAttempts::kForgetAfter);
  EXPECT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended.WhyEnded("early", 1), std::nullopt);
  EXPECT_NE(ended.WhyEnded("late", 1), std::nullopt);
  // Without a deadline: kept for the control topic's retention from the message's time.
  auto m = ParseControlMessage(R"({"type":"cancel","run_id":"c","attempt":1,"time":"2026-11-27T10:00:00Z"})");
  ASSERT_TRUE(std::holds_alternative<ControlMessage>(m));
  ended.Add(std::get<ControlMessage>(m), At("2026-11-27T10:00:05Z"));
  EXPECT_EQ(ended.WhyEnded("c", 1), "trigd ended attempt 1 (cancel)");
  ended.Forget(At("2026-11-27T10:00:00Z") + EndedAttempts::kKeepWithoutDeadline - std::chrono::milliseconds(1));
  EXPECT_NE(ended.WhyEnded("c", 1), std::nullopt);
  ended.Forget(At("2026-11-27T10:00:00Z") + EndedAttempts::kKeepWithoutDeadline);
  EXPECT_EQ(ended.WhyEnded("c", 1), std::nullopt);
}

TEST(WorkerControlTest, MemoryIsBoundedEvenBeforeDeadlinesPass) {
  EndedAttempts ended(3);
  const char* deadlines[] = {"2026-11-27T12:00:00Z", "2026-11-27T11:00:00Z", "2026-11-27T13:00:00Z",
                             "2026-11-27T14:00:00Z"};
  for (int i = 0; i < 4; ++i) ended.Add(Ended("r" + std::to_string(i), 1, deadlines[i]), At("2026-11-27T10:00:00Z"));
  EXPECT_EQ(ended.size(), 3u);
  EXPECT_EQ(ended.WhyEnded("r1", 1), std::nullopt);  // the soonest to be forgotten went first
  for (const char* kept : {"r0", "r2", "r3"}) EXPECT_NE(ended.WhyEnded(kept, 1), std::nullopt) << kept;
}

TEST(WorkerControlTest, AMessageThatNamesNoAttemptIsRefusedWithTheReason) {
  auto why = [](const char* text) {
    auto m = ParseControlMessage(text);
    return std::holds_alternative<std::string>(m) ? std::get<std::string>(m) : std::string("parsed");
  };
  // Text that is not JSON is refused by the one reader (common/json_reader.h), naming where.
  EXPECT_EQ(why("nope").rfind("invalid JSON at line 1, column 2", 0), 0u) << why("nope");
  EXPECT_EQ(why("[1]"), "not a JSON object");
  EXPECT_EQ(why(R"({"attempt":1})"), "no run_id");
  EXPECT_EQ(why(R"({"run_id":"r","attempt":0})"), "no attempt (a positive integer)");
  EXPECT_EQ(why(R"({"run_id":"r","attempt":"1"})"), "no attempt (a positive integer)");
  EXPECT_EQ(why(R"({"run_id":"r","attempt":1,"type":"something_new"})"), "parsed");  // unknown types still count
}

// A cancel, an overlap's cancel and a run timeout stop a running attempt; a lost attempt or a
// delete's kill only keep one from starting.
TEST(WorkerControlTest, OnlyCancelsAndTimeoutsStopARunningAttempt) {
  auto stops = [](const char* reason) {
    auto m =
        ParseControlMessage(std::string(R"({"run_id":"r","attempt":1,"status":"killed","reason":")") + reason + "\"}");
    return StopsRunningAttempt(std::get<ControlMessage>(m));
  };
  EXPECT_TRUE(stops("cancelled"));
  EXPECT_TRUE(stops("overlap"));
  EXPECT_TRUE(stops("timeout"));
  EXPECT_FALSE(stops("lost"));
  EXPECT_FALSE(stops("schedule_deleted"));
}

}  // namespace
}  // namespace trigd
