// Admission of the API's requests to PostgreSQL. The API's list and detail queries run in
// PostgreSQL backends of the same priority as the engine's, on the same cores: a client that
// sends requests as fast as they are answered would otherwise take the CPU the ingest and the
// checkers need, and the engine's event-to-launch latency with it (docs/adr/0167). The gate
// lets at most `slots` requests work at once, and rests a slot after each request for the
// time that keeps the API's share of that slot at most `share`, the way autovacuum's cost
// delay bounds its own work. Requests beyond wait their turn in arrival order, at most
// `max_wait`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

namespace trigd {

// The longest rest: a long request (an apply of many schedules, a backfill) does not close the
// API for longer than this after it.
inline constexpr std::chrono::seconds kGateMaxRest{1};

// How long a slot rests after being held for `held`, for the holder's share of the slot's
// time to be `share` (0 < share <= 1): held * (1 - share) / share, at most kGateMaxRest.
std::chrono::nanoseconds GateRest(std::chrono::nanoseconds held, double share);

class WorkGate {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    int slots = 1;
    double share = 1.0;
    std::chrono::milliseconds max_wait{10000};
  };

  explicit WorkGate(Options options);
  WorkGate(const WorkGate&) = delete;
  WorkGate& operator=(const WorkGate&) = delete;

  // A held slot; leaving it (its destructor) starts the slot's rest.
  class Pass {
   public:
    Pass(Pass&& other) noexcept : gate_(other.gate_), slot_(other.slot_), since_(other.since_) {
      other.gate_ = nullptr;
    }
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    Pass& operator=(Pass&& other) noexcept;
    ~Pass();

   private:
    friend class WorkGate;
    Pass(WorkGate* gate, size_t slot, Clock::time_point since) : gate_(gate), slot_(slot), since_(since) {}
    WorkGate* gate_;
    size_t slot_;
    Clock::time_point since_;
  };

  // A slot, once one is free and rested and every request that arrived before has had one;
  // nullopt when that does not happen within max_wait.
  std::optional<Pass> Enter();
  // Requests waiting for a slot now.
  int waiting() const;
  const Options& options() const { return options_; }

 private:
  struct Slot {
    bool held = false;
    Clock::time_point rested_at{};
  };
  void Leave(size_t slot, Clock::time_point since);

  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  std::vector<Slot> slots_;
  std::deque<uint64_t> queue_;  // the waiting requests' tickets, in arrival order
  uint64_t next_ticket_ = 0;
};

}  // namespace trigd
