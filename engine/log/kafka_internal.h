// What the Kafka adapters of log/ share: the one place a librdkafka configuration is built
// from a KafkaConfig, and how a connection that a broker refuses for good is recognised.
#pragma once

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

#include "common/status.h"
#include "log/kafka_config.h"

namespace trigd::kafka_internal {

using Settings = std::vector<std::pair<std::string, std::string>>;

// Sets on `conf`, in this order: bootstrap.servers, `tunables` (trigd's defaults, which a
// property of the user's file replaces), the user's properties, then `owned` (what trigd sets
// for correctness; LoadKafkaProperties refuses those names in the file, so nothing the user
// wrote is overridden). kInvalid naming the property and librdkafka's reason.
Status Configure(rd_kafka_conf_t* conf, const KafkaConfig& kafka, const Settings& tunables, const Settings& owned);

// librdkafka's connection failures below warning level (level 6) include the one that tells a
// plaintext client on a TLS or SASL port: Configure's clients that route librdkafka's logs
// (RouteLogsAndErrors, the adapters' event callbacks) are set to level 6 at least and print
// only up to KafkaConfig::LogLevel, passing the hint to Refusals.
inline constexpr int kWatchedLogLevel = 6;
// A log line of librdkafka's that says the broker closed the connection before answering its
// first request, for the reason librdkafka gives.
bool IsProtocolHint(const std::string& text);

// The settings trigd owns on every producer: idempotent, acknowledged by every in-sync replica.
const Settings& ProducerOwned();
// The settings trigd owns on every consumer, besides the group and the commits of each kind.
const Settings& ConsumerOwned();

// Tells a connection failure that retrying cannot cure (wrong credentials, a certificate that
// does not verify, TLS spoken to a plaintext port or the reverse) from one that may heal (a
// broker down or restarting). Thread-safe: librdkafka's threads report into it.
class Refusals {
 public:
  // An error librdkafka reported (error_cb or an error event).
  void Report(rd_kafka_resp_err_t err, const std::string& text);
  // The client heard from a broker.
  void Reached();
  // Why the broker refuses this client for good, said for the user; empty while none seen.
  std::string Why() const;

 private:
  mutable std::mutex mu_;
  bool reached_ = false;
  int protocol_hints_ = 0;  // "incorrect security.protocol" disconnects before any contact
  std::string why_;
};

// Log lines of librdkafka (debug included) on trigd's log, with secrets redacted; and error
// events into `refusals` when given. Sets conf's opaque: `sink` must outlive the client.
struct ErrorSink {
  const KafkaConfig* kafka = nullptr;
  Refusals refusals;
};
// Sets conf's log_level to kWatchedLogLevel when the user's is lower.
Status WatchConnectionLogs(rd_kafka_conf_t* conf, const KafkaConfig& kafka);
void RouteLogsAndErrors(rd_kafka_conf_t* conf, ErrorSink* sink);

}  // namespace trigd::kafka_internal
