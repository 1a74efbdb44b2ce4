// The instants of an event envelope (SPEC §3: "time", payload.fire_time): RFC 3339 text as
// producers write it -> TimePoint. Pure; thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "common/time.h"

namespace trigd {

// What ParseEnvelope accepts as a time: exactly YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)
// ('t' and 'z' in either case), the fraction cut (not rounded) to milliseconds, and an instant
// in years 0000-9999 once the offset is applied. std::nullopt for anything else.
std::optional<TimePoint> ParseEnvelopeTime(std::string_view text);

// The two ways ParseEnvelopeTime gets there, exposed for the tests and the fuzz target that
// check they agree:
// - Fast: plain arithmetic, no allocation. std::nullopt means "not sure" (any text it does not
//   recognise as an ordinary instant: a leap second, a day past the end of its month, ...),
//   never "invalid".
// - Reference: the shape check, then date::parse through ParseTime. The authority.
// ParseEnvelopeTime(t) is Fast(t) when that has a value, else Reference(t).
std::optional<TimePoint> ParseEnvelopeTimeFast(std::string_view text);
std::optional<TimePoint> ParseEnvelopeTimeReference(std::string_view text);

}  // namespace trigd
