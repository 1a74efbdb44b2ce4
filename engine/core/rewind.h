// Whether PostgreSQL went back in time: its consumed positions behind those trigd copied to the
// Kafka group after committing them (docs/adr/0235-a-store-behind-the-group-stops-consumption.md).
// A store restored from a backup, or a standby promoted without the primary's last commits
// (asynchronous replication), lacks jobs and runs whose launch requests may be published and
// executed already: consuming again from its positions could launch them a second time.
//
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trigd {

// One partition's next offset as PostgreSQL holds it and as the group holds it in Kafka
// (nullopt: none stored).
struct PositionPair {
  std::string topic;
  int partition = 0;
  std::optional<int64_t> store;
  std::optional<int64_t> group;
};

struct Rewind {
  std::string topic;
  int partition = 0;
  int64_t store = 0;  // 0 when the store has no position (it would start at the beginning)
  int64_t group = 0;
};

// The partitions whose group position is ahead of the store's; a store without a position
// counts as 0. A group without one (never copied, or expired) says nothing.
std::vector<Rewind> FindRewinds(const std::vector<PositionPair>& positions);

// What trigd says when it stops for `rewinds` (non-empty): the partitions, the events in
// between, and the two ways out (`trigctl positions resolve --skip|--replay`).
std::string DescribeRewinds(const std::vector<Rewind>& rewinds, const std::string& group);

}  // namespace trigd
