#include "app/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace trigd {
namespace {

constexpr size_t kHugePageBytes = size_t{2} << 20;

size_t RoundUpToHugePage(size_t bytes) { return (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1); }

}  // namespace

void* HugePageMemory::Allocate(size_t bytes) {
  // Over-map by one huge page, then unmap the ends so the array starts on a 2 MiB boundary.
  const size_t length = RoundUpToHugePage(bytes);
  void* mapped = mmap(nullptr, length + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(mapped);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  if (aligned > start) munmap(mapped, aligned - start);
  const uintptr_t end = start + length + kHugePageBytes;
  if (end > aligned + length) munmap(reinterpret_cast<void*>(aligned + length), end - (aligned + length));
  madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);  // advice: ignored where unsupported
  return reinterpret_cast<void*>(aligned);
}

void HugePageMemory::Deallocate(void* p, size_t bytes) { munmap(p, RoundUpToHugePage(bytes)); }

void UseHugePagesForScheduleIndex() {
  static HugePageMemory memory;
  SetLargeArrayMemory(&memory);
}

}  // namespace trigd
