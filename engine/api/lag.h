// `trigctl lag` and `GET /api/v1/lag`: per event-topic partition, the position trigd committed
// in PostgreSQL, the end of the partition in Kafka, and the difference. One implementation for
// both, so the CLI prints the same whether it reads the database or the API.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "log/kafka_config.h"

namespace trigd {

// {"rows": [{group, topic, partition, committed, end, lag}], "total": N, "warnings": [text]}.
// Warnings: event topics the broker lacks (some of them), a group with no stored positions.
// kInvalid when the broker has none of the event topics (a wrong prefix), kUnavailable when
// Kafka or PostgreSQL cannot be reached.
Result<nlohmann::json> ComputeLag(const KafkaConfig& kafka, const std::string& pg, const std::string& topic_prefix,
                                  const std::string& group);

}  // namespace trigd
