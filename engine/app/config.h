// Configuration shared by trigd, trigctl and trigd-worker: flags with environment defaults
// (SPEC §8).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "log/kafka_config.h"

namespace trigd {

struct Config {
  // TRIGD_KAFKA (bootstrap servers) and TRIGD_KAFKA_CONFIG (a file of librdkafka properties,
  // read by FinishConfig): every Kafka client of the binary is made from it.
  KafkaConfig kafka;
  // TRIGD_PG, with TRIGD_PG_CONNECT_TIMEOUT as its connect_timeout when it names none
  // (kDefaultPgConnectTimeout, 10 s, when neither does: store/pg_conninfo.h).
  std::string pg = "host=127.0.0.1 port=55432 user=trigd dbname=trigd";
  std::string metrics = "127.0.0.1:9464";  // TRIGD_METRICS
  std::string topic_prefix = "trigd.";     // TRIGD_TOPIC_PREFIX
  std::string group = "trigd";             // TRIGD_GROUP
  // TRIGD_INSTANCE_ID / --instance-id: Kafka static group membership (group.instance.id) for
  // the event consumer when set, one stable id per trigd process of the group (e.g. the pod
  // name of a StatefulSet). A restarted process takes its partitions back without a rebalance;
  // empty (the default): dynamic membership (see ConsumerOptions::instance_id).
  std::string instance_id;
  // TRIGD_FAST_PATH=0 leaves every ready job to the checker loop (two commits per launch
  // instead of one): a diagnostic switch, used by the latency benchmark as its comparison.
  bool fast_path = true;
  // TRIGD_CHECKERS: checker loops per process, each with its own connection and its share of
  // the schedules (PgStore::SetCheckerShard), so while one waits for PostgreSQL another
  // decides and they never wait for each other's run counters (tools/bench launch: 1.6x the
  // launches of one checker on two cores).
  int checkers = 2;
  // TRIGD_RETENTION / --retention (trigd only, ParseRetention): finished jobs and runs older
  // than this are deleted, a pass every hour (store/retention.h). 0, the default: kept forever.
  Millis retention{0};
};

// A retention as TRIGD_RETENTION or --retention gives it: "" or "0" keep everything, otherwise
// a duration of at least a day ("90d"). kInvalid naming what is wrong.
Result<Millis> ParseRetention(const std::string& text);

// The most checker loops a process runs (each holds a PostgreSQL connection).
inline constexpr int kMaxCheckers = 16;

// TRIGD_CHECKERS: an integer from 1 to kMaxCheckers; kInvalid naming the range otherwise (a
// value out of range is refused, not silently capped).
Result<int> ParseCheckers(const std::string& text);

// Reads the settings that have no flag (TRIGD_FAST_PATH, TRIGD_CHECKERS) into `c`.
void ReadEnvironmentSettings(Config& c);

// Completes `c` once its flags are parsed: what depends on more than one setting, and the
// properties of TRIGD_KAFKA_CONFIG (LoadKafkaProperties). kInvalid naming what is wrong.
Status FinishConfig(Config& c);

}  // namespace trigd
