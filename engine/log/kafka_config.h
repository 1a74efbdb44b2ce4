// The Kafka client settings of trigd, trigd-worker and trigctl: the bootstrap servers
// (TRIGD_KAFKA) and the librdkafka properties of a Java-properties file (TRIGD_KAFKA_CONFIG),
// the same format Kafka's own tools take: TLS, SASL, timeouts, client.id, debug. Every client
// the three binaries make is configured from one KafkaConfig, through one function
// (log/kafka_internal.h). A value type: copy it freely.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace trigd {

struct KafkaProperty {
  std::string name;
  std::string value;
  int line = 0;  // where it starts in its file (1-based)
};

struct KafkaConfig {
  KafkaConfig() = default;
  // Bootstrap servers alone, no properties (tests, tools).
  KafkaConfig(std::string bootstrap_servers) : bootstrap(std::move(bootstrap_servers)) {}  // NOLINT: implicit
  KafkaConfig(const char* bootstrap_servers) : bootstrap(bootstrap_servers) {}             // NOLINT: implicit

  std::string bootstrap = "127.0.0.1:9092";  // TRIGD_KAFKA, --kafka
  std::string file;                          // TRIGD_KAFKA_CONFIG, --kafka-config; empty: none
  std::vector<KafkaProperty> properties;     // read from `file` by LoadKafkaProperties

  // The log level the user asked for: `log_level` of the file, 7 with `debug`, else 2.
  int LogLevel() const;

  // `text` with the value of every secret property (IsSecretProperty) replaced by
  // "[redacted]": for anything librdkafka says that trigd passes on.
  std::string Redact(std::string text) const;
};

// Whether a property's value is a secret that never appears in a log line, a metric, a
// command's output or an error (passwords, private keys, client secrets).
bool IsSecretProperty(std::string_view name);

// Why trigd refuses `name` = `value` in TRIGD_KAFKA_CONFIG: the properties it sets itself for
// correctness (offsets, idempotence, acks, isolation, groups, assignment) or from another
// setting (the bootstrap servers, the group, the instance id). Empty: the user may set it.
std::string RefusedPropertyReason(std::string_view name, std::string_view value);

// Parses Java-properties text (java.util.Properties.load: `#` and `!` comments, `=`, `:` or
// blanks between name and value, a trailing backslash continuing a line, \t \n \r \f \uXXXX
// escapes). kInvalid "line N: ..." naming what is wrong; no error repeats a value.
Result<std::vector<KafkaProperty>> ParseJavaProperties(std::string_view text);

// Reads config.file into config.properties and checks them before any client is made:
// a refused property (RefusedPropertyReason), an unknown one or a bad value (librdkafka's own
// check), and then the producer's and the consumer's whole configuration as trigd builds it,
// without a broker (librdkafka's cross-checks: idempotence limits, TLS files that cannot be
// loaded). kInvalid "FILE:LINE: ..." naming the property; nothing when config.file is empty.
Status LoadKafkaProperties(KafkaConfig& config);

}  // namespace trigd
