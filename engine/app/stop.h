// How trigd stops on SIGTERM or SIGINT: within kStopGrace whatever it is waiting on.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>

namespace trigd {

// From the signal to a forced exit: under the 2 s a supervisor is promised, with room for the
// process's teardown.
inline constexpr std::chrono::milliseconds kStopGrace{1200};

// SIGTERM and SIGINT set `stop`, which the loops watch and then stop in order (what is in flight
// commits or is rolled back). A process still running kStopGrace after the signal (held in a
// PostgreSQL connect, a transaction, a Kafka call) logs so and exits at once with status 0: what
// it had in flight is rolled back by PostgreSQL or re-sent from the outbox, as after a kill -9.
// Call before any thread is started: the signals are blocked in every thread and taken by one
// of their own.
void StopOnSignals(std::atomic<bool>& stop);

// SIGHUP calls `reload` (on a thread of its own, once per signal) instead of ending the process.
// Call before any thread is started, and before StopOnSignals (it blocks SIGTERM and SIGINT
// too, so that its thread never takes them).
void ReloadOnHangup(std::function<void()> reload);

}  // namespace trigd
