#include "core/rewind.h"

namespace trigd {

std::vector<Rewind> FindRewinds(const std::vector<PositionPair>& positions) {
  std::vector<Rewind> out;
  for (const PositionPair& p : positions) {
    if (!p.group) continue;
    const int64_t store = p.store.value_or(0);
    if (*p.group > store) out.push_back({p.topic, p.partition, store, *p.group});
  }
  return out;
}

std::string DescribeRewinds(const std::vector<Rewind>& rewinds, const std::string& group) {
  std::string parts;
  int64_t events = 0;
  for (const Rewind& r : rewinds) {
    parts += (parts.empty() ? "" : ", ") + r.topic + "[" + std::to_string(r.partition) + "] store " +
             std::to_string(r.store) + " < group " + std::to_string(r.group);
    events += r.group - r.store;
  }
  return "PostgreSQL's consumed positions are behind those copied to Kafka group " + group + " (" + parts +
         "): the database went back in time (a failover that lost commits, or a restore), and consuming again "
         "could launch up to " +
         std::to_string(events) +
         " events' runs a second time. trigd consumes nothing until an operator resolves it: "
         "`trigctl positions resolve --skip` (the store takes the group's positions: those events are not "
         "applied again, their jobs are lost) or `trigctl positions resolve --replay` (the group takes the "
         "store's: they are applied again, and what they launched before may launch twice); see "
         "docs/production.md";
}

}  // namespace trigd
