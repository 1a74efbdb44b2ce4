// TRIGD_CHECK: the one way to state an invariant of trigd's own bookkeeping (never of input,
// which gets a Status). It stays on in every build type: continuing past a broken invariant
// would route events to the wrong schedules or launch a job twice, so the process stops with
// the condition named and its supervisor restarts it from the committed state.
#pragma once

#include <string_view>

namespace trigd::internal {
[[noreturn]] void CheckFailed(const char* condition, const char* file, int line, std::string_view detail);
}  // namespace trigd::internal

#define TRIGD_CHECK(condition) \
  ((condition) ? static_cast<void>(0) : ::trigd::internal::CheckFailed(#condition, __FILE__, __LINE__, {}))
// As TRIGD_CHECK, with a detail (a std::string_view, built only on failure).
#define TRIGD_CHECK_MSG(condition, detail) \
  ((condition) ? static_cast<void>(0) : ::trigd::internal::CheckFailed(#condition, __FILE__, __LINE__, (detail)))
// A place the code must never reach; stops the process as a failed TRIGD_CHECK does.
#define TRIGD_FAIL(detail) ::trigd::internal::CheckFailed("unreachable", __FILE__, __LINE__, (detail))
