// The names a schedule document spells its enums with, and the canonical text of values the
// parser reads and ScheduleToJson writes (core/schedule_parser.cc, core/schedule_json.cc).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "model/schedule.h"

namespace trigd::schedule_names {

template <class E>
struct EnumName {
  std::string_view name;
  E value;
};

constexpr EnumName<CatchupPolicy> kCatchupPolicies[] = {
    {"all", CatchupPolicy::kAll}, {"latest", CatchupPolicy::kLatest}, {"none", CatchupPolicy::kNone}};
constexpr EnumName<UpstreamFailurePolicy> kUpstreamFailurePolicies[] = {{"wait", UpstreamFailurePolicy::kWait},
                                                                        {"discard", UpstreamFailurePolicy::kDiscard}};
constexpr EnumName<OnUnmet> kOnUnmetPolicies[] = {{"wait", OnUnmet::kWait}, {"skip", OnUnmet::kSkip}};
constexpr EnumName<OverlapPolicy> kOverlapPolicies[] = {
    {"wait", OverlapPolicy::kWait}, {"skip", OverlapPolicy::kSkip}, {"cancel_oldest", OverlapPolicy::kCancelOldest}};
constexpr EnumName<OnUpdate> kOnUpdatePolicies[] = {
    {"discard", OnUpdate::kDiscard}, {"keep", OnUpdate::kKeep}, {"reevaluate", OnUpdate::kReevaluate}};
constexpr EnumName<TimeoutAction> kTimeoutActions[] = {{"discard", TimeoutAction::kDiscard},
                                                       {"run", TimeoutAction::kRun}};

template <class E, size_t N>
std::string NameOf(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& e : table) {
    if (e.value == value) return std::string(e.name);
  }
  return "?";
}

// retry.jitter when the document does not say (SPEC §9).
constexpr int64_t kDefaultJitterPercent = 10;

inline std::string FormatTimeOfDay(int minute_of_day) {
  // A model built in code may hold any int; only 0..1439 round-trips.
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d", minute_of_day / 60, minute_of_day % 60);
  return buf;
}

}  // namespace trigd::schedule_names
