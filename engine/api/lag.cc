#include "api/lag.h"

#include <algorithm>
#include <cstdint>
#include <set>

#include "common/topic_names.h"
#include "log/kafka.h"
#include "log/topics.h"
#include "store/admin.h"

namespace trigd {

Result<nlohmann::json> ComputeLag(const KafkaConfig& kafka, const std::string& pg, const std::string& topic_prefix,
                                  const std::string& group) {
  using nlohmann::json;
  const std::vector<std::string> topics = TopicNames(topic_prefix).Events();
  json warnings = json::array();
  // A missing topic has no partitions: without this, a wrong --topic-prefix printed an empty
  // table and "total lag: 0".
  auto missing = MissingTopics(kafka, topics);
  if (!missing.ok()) return missing.status();
  if (missing->size() == topics.size()) return Invalid(NoSuchTopics(*missing, kafka));
  if (!missing->empty()) warnings.push_back(NoSuchTopics(*missing, kafka));
  auto ends = QueryEndOffsets(kafka, topics);
  if (!ends.ok()) return ends.status();
  auto stored = QueryOffsets(pg);
  if (!stored.ok()) return stored.status();
  json rows = json::array();
  int64_t total = 0;
  for (const auto& e : *ends) {
    int64_t committed = 0;
    for (const auto& s : *stored) {
      if (s.value("group", "") == group && s.value("topic", "") == e.topic && s.value("partition", -1) == e.partition)
        committed = s.value("next_offset", int64_t{0});
    }
    int64_t lag = std::max<int64_t>(0, e.end_offset - committed);
    total += lag;
    rows.push_back({{"group", group},
                    {"topic", e.topic},
                    {"partition", e.partition},
                    {"committed", committed},
                    {"end", e.end_offset},
                    {"lag", lag}});
  }
  // A mistyped --group reads as a backlog of every message ever produced: said, with the
  // groups that have positions.
  bool known = false;
  std::set<std::string> groups;
  for (const auto& s : *stored) {
    known = known || s.value("group", "") == group;
    groups.insert(s.value("group", ""));
  }
  if (!known) {
    std::string others;
    for (const auto& g : groups) others += (others.empty() ? "" : ", ") + g;
    warnings.push_back("group " + group + " has no positions in PostgreSQL (no trigd has consumed in it yet" +
                       (others.empty() ? "" : "; check --group: groups with positions: " + others) + ")");
  }
  return json{{"rows", rows}, {"total", total}, {"warnings", warnings}};
}

}  // namespace trigd
