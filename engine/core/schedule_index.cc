// Layout (chosen so a lookup touches two cache lines, and a leaf trigger costs a few dozen
// bytes however many schedules exist):
//
//   key_slots_   open-addressing table (linear probing) of {tag, record}: 8 bytes a slot.
//                The tag is the hash's top 32 bits; the slot's home index is the tag's top
//                bits, so growth and backward-shift deletion never rehash key text.
//   records_     one arena of 64-bit words holding every distinct key once:
//                  word 0: key length (low 32 bits) | number of listening schedules (high 32)
//                  word 1: the schedule id itself when one schedule listens (the common case),
//                          else the posting block: pool offset (low 32) | block class (high 32)
//                  word 2..: the key's bytes, padded to a whole word
//                A record's offset is the key's stable id until the arena is compacted.
//   postings_    pooled blocks of schedule ids (capacity 2^class) for keys shared by several
//                schedules, order-free so removal is swap-with-last.
//   schedule_slots_ / refs_  schedule id -> its (record, position in posting) pairs, so Remove
//                touches only the schedule's own keys and swap-with-last can fix the moved
//                schedule's position in O(its key count).
//
// Dead records (keys no schedule listens on any more) are reclaimed by compacting the arena
// when they are more than half of it.
#include "core/schedule_index.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "core/trigger_eval.h"
#include "model/schedule.h"

namespace trigd {
namespace {

constexpr uint32_t kNoRecord = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kNoSchedule = std::numeric_limits<uint32_t>::max();
// Header and posting words in front of a record's text.
constexpr size_t kRecordHeaderWords = 2;
// Compaction copies every live record; below this much garbage it is not worth the pause.
constexpr size_t kMinDeadWordsToCompact = 4096;
constexpr uint32_t kInitialSlotBits = 4;

// wyhash-style mixing: a 64x64->128 multiply folds every input bit into both halves.
constexpr uint64_t kSecret0 = 0xa0761d6478bd642fULL;
constexpr uint64_t kSecret1 = 0xe7037ed1a0b428dbULL;
constexpr uint64_t kSecret2 = 0x8ebc6af09c88c6e3ULL;

inline uint64_t Mix(uint64_t a, uint64_t b) {
  const unsigned __int128 product = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
}

inline uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline uint64_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Keys are short ("partition:<dataset>"), so the hash reads them 8 or 16 bytes at a time
// rather than byte by byte (FNV would cost more than the probe).
uint64_t HashKey(std::string_view key) {
  const char* p = key.data();
  const size_t n = key.size();
  uint64_t seed = kSecret0;
  uint64_t a = 0;
  uint64_t b = 0;
  if (n <= 16) {
    if (n >= 4) {
      // Two overlapping reads from each end cover every byte of 4..16-byte keys.
      const size_t middle = (n >> 3) << 2;
      a = (Load32(p) << 32) | Load32(p + middle);
      b = (Load32(p + n - 4) << 32) | Load32(p + n - 4 - middle);
    } else if (n > 0) {
      a = (static_cast<uint64_t>(static_cast<uint8_t>(p[0])) << 16) |
          (static_cast<uint64_t>(static_cast<uint8_t>(p[n >> 1])) << 8) | static_cast<uint8_t>(p[n - 1]);
    }
  } else {
    size_t remaining = n;
    while (remaining > 16) {
      seed = Mix(Load64(p) ^ kSecret1, Load64(p + 8) ^ seed);
      p += 16;
      remaining -= 16;
    }
    a = Load64(p + remaining - 16);
    b = Load64(p + remaining - 8);
  }
  return Mix(kSecret1 ^ n, Mix(a ^ kSecret1, b ^ seed ^ kSecret2));
}

inline uint64_t HashScheduleId(int64_t id) { return Mix(static_cast<uint64_t>(id) ^ kSecret0, kSecret1); }

// Capacity class of a block holding `count` entries: the smallest c with 2^c >= count.
uint32_t BlockClassFor(size_t count) {
  uint32_t block_class = 0;
  while ((size_t{1} << block_class) < count) ++block_class;
  return block_class;
}

// The index's large arrays (the key table, the record arena, the posting pool) come from the
// ArrayMemory installed with SetLargeArrayMemory (huge pages in trigd); small ones, and all of
// them when none is installed, from the ordinary heap.
constexpr size_t kLargeArrayBytes = size_t{4} << 20;

ArrayMemory* g_large_array_memory = nullptr;
std::atomic<bool> g_large_array_allocated{false};

template <typename T>
struct LargeArrayAllocator {
  using value_type = T;
  LargeArrayAllocator() = default;
  template <typename U>
  LargeArrayAllocator(const LargeArrayAllocator<U>&) {}  // NOLINT: rebinding converts implicitly

  T* allocate(size_t n) {
    if (n > std::numeric_limits<size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    const size_t bytes = n * sizeof(T);
    if (bytes < kLargeArrayBytes || g_large_array_memory == nullptr) return std::allocator<T>().allocate(n);
    g_large_array_allocated.store(true, std::memory_order_relaxed);
    return static_cast<T*>(g_large_array_memory->Allocate(bytes));
  }

  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kLargeArrayBytes || g_large_array_memory == nullptr) {
      std::allocator<T>().deallocate(p, n);
      return;
    }
    g_large_array_memory->Deallocate(p, bytes);
  }

  friend bool operator==(const LargeArrayAllocator&, const LargeArrayAllocator&) { return true; }
};

template <typename T>
using LargeArray = std::vector<T, LargeArrayAllocator<T>>;

// Blocks of 2^class entries carved from one vector, with a free list per class. Offsets stay
// valid across growth (pointers do not: take them after the last Allocate).
template <typename T>
class BlockPool {
 public:
  uint32_t Allocate(uint32_t block_class) {
    std::vector<uint32_t>& free_blocks = free_blocks_[block_class];
    if (!free_blocks.empty()) {
      const uint32_t offset = free_blocks.back();
      free_blocks.pop_back();
      return offset;
    }
    const size_t offset = storage_.size();
    const size_t capacity = size_t{1} << block_class;
    TRIGD_CHECK(offset + capacity < std::numeric_limits<uint32_t>::max());
    storage_.resize(offset + capacity);
    return static_cast<uint32_t>(offset);
  }

  void Free(uint32_t offset, uint32_t block_class) { free_blocks_[block_class].push_back(offset); }

  T* at(uint32_t offset) { return storage_.data() + offset; }
  const T* at(uint32_t offset) const { return storage_.data() + offset; }

  size_t MemoryBytes() const {
    size_t bytes = storage_.capacity() * sizeof(T);
    for (const std::vector<uint32_t>& free_blocks : free_blocks_) {
      bytes += free_blocks.capacity() * sizeof(uint32_t);
    }
    return bytes;
  }

 private:
  LargeArray<T> storage_;
  std::array<std::vector<uint32_t>, 32> free_blocks_;
};

struct KeySlot {
  uint32_t tag;
  uint32_t record;  // kNoRecord: empty slot
};

// One (key, position of the schedule in the key's posting) pair of a schedule.
struct Ref {
  uint32_t record;
  uint32_t position;
};

struct ScheduleSlot {
  int64_t id;
  uint32_t refs;       // offset in refs_ (meaningless while ref_count is 0)
  uint32_t ref_count;  // kNoSchedule: empty slot
};

}  // namespace

struct ScheduleIndex::Impl {
  Impl() {
    ResizeKeySlots(kInitialSlotBits);
    ResizeScheduleSlots(kInitialSlotBits);
  }

  // --- Key records -------------------------------------------------------------------------

  uint32_t Length(uint32_t record) const { return static_cast<uint32_t>(records_[record]); }
  uint32_t Count(uint32_t record) const { return static_cast<uint32_t>(records_[record] >> 32); }
  void SetCount(uint32_t record, uint32_t count) {
    records_[record] = (static_cast<uint64_t>(count) << 32) | Length(record);
  }
  const char* Text(uint32_t record) const {
    // char may alias the arena's words.
    return reinterpret_cast<const char*>(&records_[record + kRecordHeaderWords]);
  }
  static size_t RecordWords(size_t length) { return kRecordHeaderWords + (length + 7) / 8; }

  uint32_t AppendRecord(std::string_view key) {
    const size_t record = records_.size();
    TRIGD_CHECK(key.size() < std::numeric_limits<uint32_t>::max());
    TRIGD_CHECK(record + RecordWords(key.size()) < kNoRecord);
    records_.resize(record + RecordWords(key.size()), 0);
    records_[record] = key.size();  // count 0 until the caller appends a posting
    if (!key.empty()) {
      std::memcpy(reinterpret_cast<char*>(&records_[record + kRecordHeaderWords]), key.data(), key.size());
    }
    return static_cast<uint32_t>(record);
  }

  std::span<const int64_t> Postings(uint32_t record) const {
    const uint32_t count = Count(record);
    // int64_t may alias the arena's uint64_t words (its signed counterpart).
    if (count <= 1) return {reinterpret_cast<const int64_t*>(&records_[record + 1]), count};
    return {postings_.at(static_cast<uint32_t>(records_[record + 1])), count};
  }

  // --- Key table ---------------------------------------------------------------------------

  size_t KeyHome(uint32_t tag) const { return tag >> key_shift_; }
  size_t KeyMask() const { return key_slots_.size() - 1; }

  void ResizeKeySlots(uint32_t bits) {
    LargeArray<KeySlot> old = std::move(key_slots_);
    key_slots_.assign(size_t{1} << bits, KeySlot{0, kNoRecord});
    key_shift_ = 32 - bits;
    for (const KeySlot& slot : old) {
      if (slot.record == kNoRecord) continue;
      size_t i = KeyHome(slot.tag);
      while (key_slots_[i].record != kNoRecord) i = (i + 1) & KeyMask();
      key_slots_[i] = slot;
    }
  }

  uint64_t Prefetch(std::string_view key) const {
    const uint64_t hash = HashKey(key);
    __builtin_prefetch(&key_slots_[KeyHome(static_cast<uint32_t>(hash >> 32))]);
    return hash;
  }

  void PrefetchRecord(uint64_t hash) const {
    const uint32_t tag = static_cast<uint32_t>(hash >> 32);
    for (size_t i = KeyHome(tag);; i = (i + 1) & KeyMask()) {
      const KeySlot slot = key_slots_[i];
      if (slot.record == kNoRecord) return;
      if (slot.tag == tag) {
        __builtin_prefetch(&records_[slot.record]);
        return;
      }
    }
  }

  std::span<const int64_t> Lookup(std::string_view key, uint64_t hash) const {
    const uint32_t tag = static_cast<uint32_t>(hash >> 32);
    for (size_t i = KeyHome(tag);; i = (i + 1) & KeyMask()) {
      const KeySlot slot = key_slots_[i];
      if (slot.record == kNoRecord) return {};
      if (slot.tag == tag && Length(slot.record) == key.size() &&
          std::memcmp(Text(slot.record), key.data(), key.size()) == 0) {
        return Postings(slot.record);
      }
    }
  }

  // The record of `key`, created with no postings if the key is new.
  uint32_t InternKey(std::string_view key) {
    const uint32_t tag = static_cast<uint32_t>(HashKey(key) >> 32);
    size_t i = KeyHome(tag);
    for (;; i = (i + 1) & KeyMask()) {
      const KeySlot slot = key_slots_[i];
      if (slot.record == kNoRecord) break;
      if (slot.tag == tag && Length(slot.record) == key.size() &&
          std::memcmp(Text(slot.record), key.data(), key.size()) == 0) {
        return slot.record;
      }
    }
    const uint32_t record = AppendRecord(key);
    key_slots_[i] = KeySlot{tag, record};
    ++key_count_;
    key_string_bytes_ += key.size();
    // Keep the load at most 3/4 so probe runs stay short.
    if (key_count_ * 4 > key_slots_.size() * 3) ResizeKeySlots(32 - key_shift_ + 1);
    return record;
  }

  // Forgets a key no schedule listens on any more.
  void DeleteRecord(uint32_t record) {
    const std::string_view key(Text(record), Length(record));
    const uint32_t tag = static_cast<uint32_t>(HashKey(key) >> 32);
    size_t hole = KeyHome(tag);
    while (key_slots_[hole].record != record) {
      TRIGD_CHECK(key_slots_[hole].record != kNoRecord);
      hole = (hole + 1) & KeyMask();
    }
    // Backward-shift deletion: pull later members of the probe run into the hole unless that
    // would move them before their home slot. No tombstones, so lookups of absent keys stay
    // short however many keys come and go.
    for (size_t next = (hole + 1) & KeyMask(); key_slots_[next].record != kNoRecord; next = (next + 1) & KeyMask()) {
      const size_t home = KeyHome(key_slots_[next].tag);
      // `next` may move into `hole` iff its home is not cyclically within (hole, next].
      if (((next - home) & KeyMask()) >= ((next - hole) & KeyMask())) {
        key_slots_[hole] = key_slots_[next];
        hole = next;
      }
    }
    key_slots_[hole] = KeySlot{0, kNoRecord};
    --key_count_;
    key_string_bytes_ -= key.size();
    dead_words_ += RecordWords(key.size());
    SetCount(record, 0);
  }

  // --- Postings ----------------------------------------------------------------------------

  // Adds `id` to the key's schedules; returns its position there. Never moves other ids.
  uint32_t AppendPosting(uint32_t record, int64_t id) {
    const uint32_t count = Count(record);
    if (count == 0) {
      records_[record + 1] = static_cast<uint64_t>(id);
      SetCount(record, 1);
      return 0;
    }
    if (count == 1) {
      const uint32_t block = postings_.Allocate(1);
      postings_.at(block)[0] = static_cast<int64_t>(records_[record + 1]);
      postings_.at(block)[1] = id;
      records_[record + 1] = (uint64_t{1} << 32) | block;
      SetCount(record, 2);
      return 1;
    }
    uint32_t block = static_cast<uint32_t>(records_[record + 1]);
    uint32_t block_class = static_cast<uint32_t>(records_[record + 1] >> 32);
    if (count == (uint32_t{1} << block_class)) {
      const uint32_t grown = postings_.Allocate(block_class + 1);
      std::copy_n(postings_.at(block), count, postings_.at(grown));
      postings_.Free(block, block_class);
      block = grown;
      ++block_class;
      records_[record + 1] = (static_cast<uint64_t>(block_class) << 32) | block;
    }
    TRIGD_CHECK(count < std::numeric_limits<uint32_t>::max());
    postings_.at(block)[count] = id;
    SetCount(record, count + 1);
    return count;
  }

  // Removes `id`, which sits at `position`, from the key's schedules; the key is forgotten
  // when no schedule is left on it.
  void RemovePosting(uint32_t record, uint32_t position, int64_t id) {
    const uint32_t count = Count(record);
    TRIGD_CHECK(count >= 1 && position < count);
    if (count == 1) {
      TRIGD_CHECK(static_cast<int64_t>(records_[record + 1]) == id);
      DeleteRecord(record);
      return;
    }
    const uint32_t block = static_cast<uint32_t>(records_[record + 1]);
    const uint32_t block_class = static_cast<uint32_t>(records_[record + 1] >> 32);
    int64_t* ids = postings_.at(block);
    TRIGD_CHECK(ids[position] == id);
    const uint32_t last = count - 1;
    if (position != last) {
      ids[position] = ids[last];
      SetRefPosition(ids[position], record, position);
    }
    const uint32_t remaining = count - 1;
    SetCount(record, remaining);
    if (remaining == 1) {
      records_[record + 1] = static_cast<uint64_t>(postings_.at(block)[0]);
      postings_.Free(block, block_class);
    } else if (block_class > 1 && remaining <= (uint32_t{1} << block_class) / 4) {
      // Halve at a quarter full (not at half) so a count hovering at a boundary does not
      // reallocate on every put and remove.
      const uint32_t shrunk = postings_.Allocate(block_class - 1);
      std::copy_n(postings_.at(block), remaining, postings_.at(shrunk));
      postings_.Free(block, block_class);
      records_[record + 1] = (static_cast<uint64_t>(block_class - 1) << 32) | shrunk;
    }
  }

  // --- Schedule table ----------------------------------------------------------------------

  size_t ScheduleHome(int64_t id) const { return HashScheduleId(id) >> schedule_shift_; }
  size_t ScheduleMask() const { return schedule_slots_.size() - 1; }

  void ResizeScheduleSlots(uint32_t bits) {
    LargeArray<ScheduleSlot> old = std::move(schedule_slots_);
    schedule_slots_.assign(size_t{1} << bits, ScheduleSlot{0, 0, kNoSchedule});
    schedule_shift_ = 64 - bits;
    for (const ScheduleSlot& slot : old) {
      if (slot.ref_count == kNoSchedule) continue;
      size_t i = ScheduleHome(slot.id);
      while (schedule_slots_[i].ref_count != kNoSchedule) i = (i + 1) & ScheduleMask();
      schedule_slots_[i] = slot;
    }
  }

  // Slot index of `id`, or kNoSlot.
  static constexpr size_t kNoSlot = std::numeric_limits<size_t>::max();
  size_t FindSchedule(int64_t id) const {
    for (size_t i = ScheduleHome(id);; i = (i + 1) & ScheduleMask()) {
      const ScheduleSlot& slot = schedule_slots_[i];
      if (slot.ref_count == kNoSchedule) return kNoSlot;
      if (slot.id == id) return i;
    }
  }

  size_t FindOrInsertSchedule(int64_t id) {
    size_t found = FindSchedule(id);
    if (found != kNoSlot) return found;
    if ((schedule_count_ + 1) * 4 > schedule_slots_.size() * 3) {
      ResizeScheduleSlots(64 - schedule_shift_ + 1);
    }
    size_t i = ScheduleHome(id);
    while (schedule_slots_[i].ref_count != kNoSchedule) i = (i + 1) & ScheduleMask();
    schedule_slots_[i] = ScheduleSlot{id, 0, 0};
    ++schedule_count_;
    return i;
  }

  void EraseScheduleSlot(size_t hole) {
    for (size_t next = (hole + 1) & ScheduleMask(); schedule_slots_[next].ref_count != kNoSchedule;
         next = (next + 1) & ScheduleMask()) {
      const size_t home = ScheduleHome(schedule_slots_[next].id);
      if (((next - home) & ScheduleMask()) >= ((next - hole) & ScheduleMask())) {
        schedule_slots_[hole] = schedule_slots_[next];
        hole = next;
      }
    }
    schedule_slots_[hole] = ScheduleSlot{0, 0, kNoSchedule};
    --schedule_count_;
  }

  // Records that schedule `id` now sits at `position` in the key's posting.
  void SetRefPosition(int64_t id, uint32_t record, uint32_t position) {
    const size_t i = FindSchedule(id);
    TRIGD_CHECK(i != kNoSlot);
    Ref* refs = refs_.at(schedule_slots_[i].refs);
    for (uint32_t k = 0; k < schedule_slots_[i].ref_count; ++k) {
      if (refs[k].record == record) {
        refs[k].position = position;
        return;
      }
    }
    TRIGD_FAIL("schedule index bookkeeping");
  }

  // --- Operations --------------------------------------------------------------------------

  void Put(int64_t id, const std::vector<std::string>& event_keys) {
    // Interning first may grow the key table and arena; nothing below holds pointers into them.
    new_records_.clear();
    for (const std::string& key : event_keys) new_records_.push_back(InternKey(key));
    std::sort(new_records_.begin(), new_records_.end());
    new_records_.erase(std::unique(new_records_.begin(), new_records_.end()), new_records_.end());

    const size_t slot = FindOrInsertSchedule(id);
    const uint32_t old_count = schedule_slots_[slot].ref_count;
    const uint32_t old_refs = schedule_slots_[slot].refs;
    old_refs_.assign(refs_.at(old_refs), refs_.at(old_refs) + old_count);
    std::sort(old_refs_.begin(), old_refs_.end(), [](const Ref& a, const Ref& b) { return a.record < b.record; });

    // Merge the sorted old and new key sets: keys kept keep their posting position (appends
    // and other schedules' removals never move this schedule's entry of a kept key).
    merged_refs_.clear();
    size_t o = 0;
    size_t n = 0;
    while (o < old_refs_.size() || n < new_records_.size()) {
      if (n == new_records_.size() || (o < old_refs_.size() && old_refs_[o].record < new_records_[n])) {
        RemovePosting(old_refs_[o].record, old_refs_[o].position, id);
        ++o;
      } else if (o == old_refs_.size() || new_records_[n] < old_refs_[o].record) {
        merged_refs_.push_back(Ref{new_records_[n], AppendPosting(new_records_[n], id)});
        ++n;
      } else {
        merged_refs_.push_back(old_refs_[o]);
        ++o;
        ++n;
      }
    }

    // Removing postings never moves schedule slots, so `slot` is still this schedule's.
    const uint32_t new_count = static_cast<uint32_t>(merged_refs_.size());
    uint32_t refs = old_refs;
    if (old_count == 0 || new_count == 0 || BlockClassFor(old_count) != BlockClassFor(new_count)) {
      if (old_count > 0) refs_.Free(old_refs, BlockClassFor(old_count));
      refs = new_count > 0 ? refs_.Allocate(BlockClassFor(new_count)) : 0;
    }
    std::copy(merged_refs_.begin(), merged_refs_.end(), refs_.at(refs));
    schedule_slots_[slot].refs = refs;
    schedule_slots_[slot].ref_count = new_count;
    MaybeCompact();
  }

  void Remove(int64_t id) {
    const size_t slot = FindSchedule(id);
    if (slot == kNoSlot) return;
    const uint32_t count = schedule_slots_[slot].ref_count;
    const uint32_t refs = schedule_slots_[slot].refs;
    // RemovePosting rewrites other schedules' refs only, and allocates nothing in refs_.
    for (uint32_t k = 0; k < count; ++k) {
      const Ref ref = refs_.at(refs)[k];
      RemovePosting(ref.record, ref.position, id);
    }
    if (count > 0) refs_.Free(refs, BlockClassFor(count));
    EraseScheduleSlot(slot);
    MaybeCompact();
  }

  // Copies the live records into a fresh arena once dead ones are more than half of it, then
  // rewrites every record offset held in the key table and the schedules' refs.
  void MaybeCompact() {
    if (dead_words_ < kMinDeadWordsToCompact || dead_words_ * 2 < records_.size()) return;
    LargeArray<uint64_t> compacted;
    compacted.reserve(records_.size() - dead_words_);
    for (KeySlot& slot : key_slots_) {
      if (slot.record == kNoRecord) continue;
      const uint32_t moved = static_cast<uint32_t>(compacted.size());
      const size_t words = RecordWords(Length(slot.record));
      compacted.insert(compacted.end(), records_.begin() + slot.record, records_.begin() + slot.record + words);
      // The old header word becomes the forwarding address for the refs pass below.
      records_[slot.record] = moved;
      slot.record = moved;
    }
    for (const ScheduleSlot& slot : schedule_slots_) {
      if (slot.ref_count == kNoSchedule) continue;
      Ref* refs = refs_.at(slot.refs);
      for (uint32_t k = 0; k < slot.ref_count; ++k) {
        refs[k].record = static_cast<uint32_t>(records_[refs[k].record]);
      }
    }
    records_.swap(compacted);
    dead_words_ = 0;
  }

  size_t MemoryBytes() const {
    return sizeof(Impl) + key_slots_.capacity() * sizeof(KeySlot) + records_.capacity() * sizeof(uint64_t) +
           postings_.MemoryBytes() + schedule_slots_.capacity() * sizeof(ScheduleSlot) + refs_.MemoryBytes() +
           new_records_.capacity() * sizeof(uint32_t) + (old_refs_.capacity() + merged_refs_.capacity()) * sizeof(Ref);
  }

  LargeArray<KeySlot> key_slots_;
  uint32_t key_shift_ = 0;  // home slot = tag >> key_shift_
  LargeArray<uint64_t> records_;
  BlockPool<int64_t> postings_;
  LargeArray<ScheduleSlot> schedule_slots_;
  uint32_t schedule_shift_ = 0;  // home slot = hash >> schedule_shift_
  BlockPool<Ref> refs_;

  size_t key_count_ = 0;
  size_t key_string_bytes_ = 0;
  size_t schedule_count_ = 0;
  size_t dead_words_ = 0;

  // Custom event keys with a `where` value ("custom:<name>?<path>=<value>"): the paths indexed
  // under each name, counted by the schedules that use them, so that a custom event probes
  // one key per path its name has (ScheduleIndex::LookupCustom); and each such schedule's
  // (name, path) pairs, to count them down on Put and Remove. Schedules without such keys have
  // no entry.
  std::unordered_map<std::string, std::unordered_map<std::string, int>> custom_paths_;
  std::unordered_map<int64_t, std::vector<std::pair<std::string, std::string>>> custom_of_;

  // Scratch space of Put, kept to spare an allocation per call.
  std::vector<uint32_t> new_records_;
  std::vector<Ref> old_refs_;
  std::vector<Ref> merged_refs_;
};

void SetLargeArrayMemory(ArrayMemory* memory) {
  // Arrays taken from one source must go back to it: the source is fixed before the first.
  TRIGD_CHECK(!g_large_array_allocated.load(std::memory_order_relaxed));
  g_large_array_memory = memory;
}

ScheduleIndex::ScheduleIndex() : impl_(new Impl) {}

ScheduleIndex::~ScheduleIndex() { delete impl_; }

// A moved-from index has no Impl; it reads as empty and recreates one on the next Put.
ScheduleIndex::ScheduleIndex(ScheduleIndex&& other) noexcept : impl_(std::exchange(other.impl_, nullptr)) {}

ScheduleIndex& ScheduleIndex::operator=(ScheduleIndex&& other) noexcept {
  std::swap(impl_, other.impl_);
  return *this;
}

namespace {

// "custom:<name>?<path>=[v1,v2]" (CustomEventKey) -> name, path and the canonical values;
// false for any other key.
bool SplitCustomKey(std::string_view key, std::string_view& name, std::string_view& path,
                    std::vector<std::string>& values) {
  constexpr std::string_view kPrefix = "custom:";
  if (!key.starts_with(kPrefix)) return false;
  const size_t question = key.find('?', kPrefix.size());
  if (question == std::string_view::npos) return false;
  const size_t equals = key.find('=', question + 1);
  if (equals == std::string_view::npos) return false;
  name = key.substr(kPrefix.size(), question - kPrefix.size());
  path = key.substr(question + 1, equals - question - 1);
  const nlohmann::json list = nlohmann::json::parse(key.substr(equals + 1), nullptr, false);
  if (!list.is_array()) return false;
  values.clear();
  for (const nlohmann::json& v : list) values.push_back(CanonicalScalar(v));
  return true;
}

std::string CustomValueKey(std::string_view name, std::string_view path, std::string_view value) {
  std::string key = "custom:";
  key.append(name).append("?").append(path).append("=").append(value);
  return key;
}

}  // namespace

void ScheduleIndex::Put(int64_t schedule_id, const std::vector<std::string>& event_keys) {
  if (impl_ == nullptr) impl_ = new Impl;
  // The (name, path) pairs of the schedule's previous keys are counted down first.
  if (auto old = impl_->custom_of_.find(schedule_id); old != impl_->custom_of_.end()) {
    for (const auto& [name, path] : old->second) {
      auto& paths = impl_->custom_paths_[name];
      if (--paths[path] == 0) paths.erase(path);
      if (paths.empty()) impl_->custom_paths_.erase(name);
    }
    impl_->custom_of_.erase(old);
  }
  std::string_view name, path;
  std::vector<std::string> values;
  bool expanded = false;
  std::vector<std::string> keys;
  for (const std::string& key : event_keys) {
    if (!SplitCustomKey(key, name, path, values)) continue;
    if (!expanded) {
      keys.assign(event_keys.begin(), event_keys.end());
      expanded = true;
    }
    auto& pairs = impl_->custom_of_[schedule_id];
    pairs.emplace_back(std::string(name), std::string(path));
    ++impl_->custom_paths_[pairs.back().first][pairs.back().second];
    for (const std::string& v : values) keys.push_back(CustomValueKey(name, path, v));
  }
  if (!expanded) {
    impl_->Put(schedule_id, event_keys);
    return;
  }
  // The list form itself stays a key too (harmless: no event probes it), so the index's keys of
  // a schedule are a superset of its stored ones.
  impl_->Put(schedule_id, keys);
}

void ScheduleIndex::Remove(int64_t schedule_id) {
  if (impl_ == nullptr) return;
  if (impl_->custom_of_.contains(schedule_id)) Put(schedule_id, {});
  impl_->Remove(schedule_id);
}

std::vector<int64_t> ScheduleIndex::LookupCustom(std::string_view name, const nlohmann::json& payload) const {
  std::vector<int64_t> out;
  if (impl_ == nullptr) return out;
  std::string key = "custom:";
  key.append(name);
  std::span<const int64_t> plain = Lookup(key);
  out.assign(plain.begin(), plain.end());
  auto paths = impl_->custom_paths_.find(key.substr(7));
  if (paths == impl_->custom_paths_.end()) return out;
  for (const auto& [path, uses] : paths->second) {
    const nlohmann::json* value = PayloadAt(payload, path);
    if (value == nullptr || value->is_structured() || value->is_null()) continue;
    std::span<const int64_t> found = Lookup(CustomValueKey(name, path, CanonicalScalar(*value)));
    out.insert(out.end(), found.begin(), found.end());
  }
  if (paths->second.size() > 1 || !plain.empty()) {
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  return out;
}

std::span<const int64_t> ScheduleIndex::Lookup(std::string_view key) const {
  if (impl_ == nullptr) return {};
  return impl_->Lookup(key, HashKey(key));
}

uint64_t ScheduleIndex::Prefetch(std::string_view key) const {
  if (impl_ == nullptr) return HashKey(key);
  return impl_->Prefetch(key);
}

void ScheduleIndex::PrefetchRecord(uint64_t hash) const {
  if (impl_ != nullptr) impl_->PrefetchRecord(hash);
}

std::span<const int64_t> ScheduleIndex::Lookup(std::string_view key, uint64_t hash) const {
  if (impl_ == nullptr) return {};
  return impl_->Lookup(key, hash);
}

size_t ScheduleIndex::schedule_count() const { return impl_ == nullptr ? 0 : impl_->schedule_count_; }

size_t ScheduleIndex::key_count() const { return impl_ == nullptr ? 0 : impl_->key_count_; }

size_t ScheduleIndex::MemoryBytes() const { return impl_ == nullptr ? 0 : impl_->MemoryBytes(); }

size_t ScheduleIndex::KeyStringBytes() const { return impl_ == nullptr ? 0 : impl_->key_string_bytes_; }

}  // namespace trigd
