// Topic definitions (topics/*.json) and their creation on the broker. Only this module sees
// librdkafka.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "log/kafka_config.h"

namespace trigd {

struct TopicSpec {
  std::string name;  // full name, prefix applied
  int partitions = 1;
  std::vector<std::pair<std::string, std::string>> config;
  int replication_factor = -1;  // -1: the broker's default.replication.factor
};

// Sets every topic's replication factor to `n` (1 to 32767), and at 3 or more its
// min.insync.replicas to 2 unless the definition sets one: with acks=all a write then survives
// a broker's loss, and one broker may be down without stopping writes. kInvalid for another n.
Status SetReplicationFactor(std::vector<TopicSpec>& topics, int n);

// Reads every *.json file in `dir` (each an array of {"name","partitions","config"}) and
// prefixes names with `prefix`. kInvalid names the file and the field at fault.
Result<std::vector<TopicSpec>> LoadTopicSpecs(const std::string& dir, const std::string& prefix);

struct TopicCreation {
  std::string name;
  bool created = false;  // false: it existed already
};

// Creates the topics that do not exist yet (idempotent). kUnavailable when the broker cannot
// be reached within `timeout_ms`; kInvalid when it refuses the client for good (credentials,
// certificate, a denied principal: the reason said).
Result<std::vector<TopicCreation>> CreateTopics(const KafkaConfig& kafka, const std::vector<TopicSpec>& topics,
                                                int timeout_ms = 15000);

// The topics of `names` that the broker does not have, in the order given (empty: all exist).
// kUnavailable when it cannot be reached within `timeout_ms`; kInvalid when it refuses the
// client for good (as CreateTopics). It asks for every topic's metadata, which never creates
// one, whatever the broker's auto.create.topics.enable; a topic the principal may not describe
// is not in it either, so it counts as missing.
Result<std::vector<std::string>> MissingTopics(const KafkaConfig& kafka, const std::vector<std::string>& names,
                                               int timeout_ms = 5000);

// Topics the broker does not have (MissingTopics), said so that the user can fix it: their
// names, the broker, and the usual causes (topics not created, a wrong --topic-prefix, and, for
// a client with properties of its own (TRIGD_KAFKA_CONFIG), a principal without the Describe
// ACL: the broker leaves such topics out of its metadata).
std::string NoSuchTopics(const std::vector<std::string>& missing, const KafkaConfig& kafka);

// The topic directory baked in at build time (the source tree's topics/), or $TRIGD_TOPICS_DIR.
std::string DefaultTopicsDir();

}  // namespace trigd
