#include "api/work_gate.h"

#include <algorithm>

namespace trigd {

std::chrono::nanoseconds GateRest(std::chrono::nanoseconds held, double share) {
  if (share >= 1.0 || held.count() <= 0) return std::chrono::nanoseconds(0);
  const auto rest =
      std::chrono::nanoseconds(static_cast<int64_t>(static_cast<double>(held.count()) * (1.0 - share) / share));
  return std::min<std::chrono::nanoseconds>(rest, kGateMaxRest);
}

WorkGate::WorkGate(Options options) : options_(options), slots_(static_cast<size_t>(std::max(1, options.slots))) {}

WorkGate::Pass::~Pass() {
  if (gate_) gate_->Leave(slot_, since_);
}

WorkGate::Pass& WorkGate::Pass::operator=(Pass&& other) noexcept {
  if (this != &other) {
    if (gate_) gate_->Leave(slot_, since_);
    gate_ = other.gate_;
    slot_ = other.slot_;
    since_ = other.since_;
    other.gate_ = nullptr;
  }
  return *this;
}

std::optional<WorkGate::Pass> WorkGate::Enter() {
  std::unique_lock lock(mu_);
  const Clock::time_point deadline = Clock::now() + options_.max_wait;
  const uint64_t ticket = next_ticket_++;
  queue_.push_back(ticket);
  for (;;) {
    const Clock::time_point now = Clock::now();
    // The first in the queue takes the free slot rested first; the others, and the first while
    // no slot is free, wake when the soonest free slot has rested or a slot is left.
    std::optional<Clock::time_point> soonest;
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].held) continue;
      if (slots_[i].rested_at <= now && queue_.front() == ticket) {
        slots_[i].held = true;
        queue_.pop_front();
        lock.unlock();
        freed_.notify_all();  // the next in the queue may take another free slot
        return Pass(this, i, now);
      }
      soonest = soonest ? std::min(*soonest, slots_[i].rested_at) : slots_[i].rested_at;
    }
    if (now >= deadline) break;
    freed_.wait_until(lock, soonest && *soonest > now ? std::min(*soonest, deadline) : deadline);
  }
  queue_.erase(std::find(queue_.begin(), queue_.end(), ticket));
  lock.unlock();
  freed_.notify_all();  // the one behind may now be first
  return std::nullopt;
}

void WorkGate::Leave(size_t slot, Clock::time_point since) {
  const Clock::time_point now = Clock::now();
  {
    std::lock_guard lock(mu_);
    slots_[slot].held = false;
    slots_[slot].rested_at = now + GateRest(now - since, options_.share);
  }
  freed_.notify_all();
}

int WorkGate::waiting() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(queue_.size());
}

}  // namespace trigd
