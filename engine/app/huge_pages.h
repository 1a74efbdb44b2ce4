// Large arrays on 2 MiB pages where the kernel allows it (transparent huge pages;
// MADV_HUGEPAGE is all the "madvise" mode needs). The schedule index's lookup reads two random
// cache lines of arrays that reach tens of megabytes at 1M schedules; on 4 KiB pages each of
// those reads also missed the TLB and walked the page tables.
#pragma once

#include "core/schedule_index.h"

namespace trigd {

class HugePageMemory : public ArrayMemory {
 public:
  void* Allocate(size_t bytes) override;
  void Deallocate(void* p, size_t bytes) override;
};

// Installs one HugePageMemory for every schedule index of the process (trigd and the
// benchmarks that run its code in process).
void UseHugePagesForScheduleIndex();

}  // namespace trigd
