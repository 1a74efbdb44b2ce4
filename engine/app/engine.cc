#include "app/engine.h"

#include "app/engine_loops.h"

namespace trigd {

using engine_internal::Log;
using engine_internal::Shared;

namespace {

using Clock = std::chrono::steady_clock;

// The topics trigd reads, the dead-letter topic and the control topic must exist before it
// starts: one started with a mistyped --topic-prefix would run against the shared database, take
// fire times from the real instances and publish their launch requests where no worker reads (the
// broker makes the topics on the first produce), and those runs would fail as lost 10 minutes
// later (docs/adr/0028-topics-must-exist.md). The control topic, made by the relay on first use,
// would have the relay's launch-topic settings, not those of topics/. Missing: refused (kInvalid).
// Kafka not reachable yet: waits, saying so.
Status CheckTopics(const Config& config, const std::atomic<bool>& stop) {
  const std::vector<std::string> needed = TopicNames(config.topic_prefix).Needed();
  auto said = Clock::time_point{};
  while (!stop.load()) {
    auto missing = MissingTopics(config.kafka, needed);
    if (missing.ok()) {
      if (missing->empty()) return Status();
      return Invalid(NoSuchTopics(*missing, config.kafka));
    }
    // Refused for good (credentials, certificate, a denied principal): said, and trigd stops.
    if (missing.status().code() == StatusCode::kInvalid) return missing.status();
    if (Clock::now() - said >= std::chrono::seconds(30)) {
      Log(missing.status().message() + " (looking up trigd's topics); retrying");
      said = Clock::now();
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return Status();
}

}  // namespace

Status RunEngine(const Config& config, const std::atomic<bool>& stop) {
  if (Status s = ApplyMigrations(config.pg, DefaultSchemaDir(), nullptr); !s.ok()) return s;
  if (Status s = CheckTopics(config, stop); !s.ok() || stop.load()) return s;
  Metrics metrics;
  if (Status s = metrics.Serve(config.metrics); !s.ok()) return s;
  Shared shared{config, stop, metrics, PgEngineStoreFactory(config.pg, config.topic_prefix), {}, {}};
  Log("running: kafka " + config.kafka.bootstrap + ", group " + config.group + ", topics " + config.topic_prefix +
      "*, metrics http://" + config.metrics + "/metrics" +
      (config.retention.count() > 0 ? ", retention " + FormatDuration(config.retention) : ""));
  std::thread ingest([&] { engine_internal::IngestLoop(shared); });
  std::vector<std::thread> checkers;
  for (int i = 0; i < config.checkers; ++i) checkers.emplace_back([&, i] { engine_internal::CheckerLoop(shared, i); });
  std::thread relay([&] { engine_internal::RelayLoop(shared); });
  std::thread retention;
  if (config.retention.count() > 0) retention = std::thread([&] { engine_internal::RetentionLoop(shared); });
  ingest.join();
  shared.checker_wake.Wake();
  shared.relay_wake.Wake();
  for (std::thread& t : checkers) t.join();
  relay.join();
  if (retention.joinable()) retention.join();
  std::lock_guard<std::mutex> lock(shared.why_mu);
  return shared.why;
}

}  // namespace trigd
