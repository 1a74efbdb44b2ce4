// The size of the launch requests a schedule can produce, against what Kafka takes.
// Pure: no I/O.
#pragma once

#include <cstddef>

#include "common/status.h"
#include "core/envelope.h"
#include "model/schedule.h"

namespace trigd {

// A launch request as trigd writes it at launch: two thirds of what it publishes at most
// (kMaxPublishedBytes, under the broker's and the producer's message limits), as a retry's
// copy is the request rendered from jsonb, a space after each ':' and ',' (up to 1.5 times the
// bytes of a document of small values).
inline constexpr size_t kMaxLaunchRequestBytes = kMaxPublishedBytes * 2 / 3;
// What a launch request keeps for its triggering events at least: a longer list is cut to fit
// the room left (TriggeredByWithin), down to the ids of the newest events.
inline constexpr size_t kMinTriggeredByBytes = 64 * 1024;
// The request's other fields (attempt, heartbeat_timeout, launched_at, run_id,
// schedule_version, the keys, triggered_by_truncated) at most, with room for more.
inline constexpr size_t kLaunchRequestOverheadBytes = 1024;

// The bytes of a launch request of `schedule` before its triggering events: its program (name,
// args, target), its name and kLaunchRequestOverheadBytes.
size_t LaunchRequestFixedBytes(const Schedule& schedule);

// Whether every launch request of `schedule` fits: LaunchRequestFixedBytes plus
// kMinTriggeredByBytes within kMaxLaunchRequestBytes. kInvalid naming program.args, its size,
// the limit and the most it may take.
Status CheckLaunchRequestFits(const Schedule& schedule);

}  // namespace trigd
