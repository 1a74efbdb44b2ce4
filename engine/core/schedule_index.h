// The in-memory event-key reverse index (SPEC §5): event key -> the schedules with a leaf
// trigger listening on it. A lookup costs one hash probe whatever the number of schedules,
// and the index stores a few dozen bytes per leaf trigger beyond the key strings (each key
// string is stored once however many schedules share it).
// Not thread-safe: one owner (the consumer loop) mutates and reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace trigd {

// Where the index's large arrays (tens of megabytes at a million schedules) come from. Core
// makes no system calls: the default is the heap, and trigd installs app/huge_pages.h's
// source, whose 2 MiB pages spare a lookup's two random reads most TLB misses.
class ArrayMemory {
 public:
  virtual ~ArrayMemory() = default;
  // Throws std::bad_alloc when it cannot.
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Deallocate(void* p, size_t bytes) = 0;
};
// Installs the source of every index's large arrays; call before the first index grows large
// (a later call is a failed check). nullptr: the heap.
void SetLargeArrayMemory(ArrayMemory* memory);

class ScheduleIndex {
 public:
  ScheduleIndex();
  ~ScheduleIndex();
  ScheduleIndex(ScheduleIndex&&) noexcept;
  ScheduleIndex& operator=(ScheduleIndex&&) noexcept;

  // Sets the event keys of a schedule (replacing any it had). Duplicate keys of one schedule
  // count once.
  void Put(int64_t schedule_id, const std::vector<std::string>& event_keys);
  // Removes a schedule; a no-op for an unknown id.
  void Remove(int64_t schedule_id);

  // The schedules listening on `key`, in no particular order. The span is valid until the next
  // Put or Remove.
  std::span<const int64_t> Lookup(std::string_view key) const;

  // Lookup in two steps, for a batch of events: Prefetch starts loading the memory a lookup of
  // the key will read first (its slot in the key table) and returns the key's hash, which the
  // later Lookup then need not compute again. In a large index that slot is a cache miss;
  // prefetched a few events ahead it arrives while those events are scanned.
  uint64_t Prefetch(std::string_view key) const;
  // The second read of a lookup that finds its key, once Prefetch's has arrived: the key's
  // record (its text and schedules).
  void PrefetchRecord(uint64_t hash) const;
  std::span<const int64_t> Lookup(std::string_view key, uint64_t hash) const;

  // The schedules a custom event of `name` with `payload` may concern: those on "custom:<name>"
  // and, for each `where` path indexed under the name, those on the event's value there
  // (CustomEventKey: a leaf listens on its first condition's values). Sorted, distinct. Its
  // cost is one probe per path the name has plus the schedules found; the other conditions of
  // `where` are checked by the trigger (WhereMatches).
  std::vector<int64_t> LookupCustom(std::string_view name, const nlohmann::json& payload) const;

  size_t schedule_count() const;
  size_t key_count() const;
  // Heap bytes held by the index, key strings included (an estimate from container sizes).
  size_t MemoryBytes() const;
  // Bytes of the key strings alone.
  size_t KeyStringBytes() const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace trigd
