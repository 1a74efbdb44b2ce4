#include "api/backfill.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/topic_names.h"
#include "log/kafka.h"
#include "log/topics.h"

namespace trigd {

using nlohmann::json;

Result<BackfillPlan> Backfill(const std::string& pg, const KafkaConfig& kafka, const std::string& topic_prefix,
                              const BackfillRequest& request) {
  const std::string& name = request.schedule;
  auto plan = PlanBackfill(pg, name, request.from, request.to, request.max);
  if (!plan.ok() || request.dry_run || plan->fire_times.empty()) return plan;
  const std::string topic = TopicNames(topic_prefix).events_time;
  auto missing = MissingTopics(kafka, {topic});
  if (!missing.ok()) return missing.status();
  if (!missing->empty()) return Invalid(NoSuchTopics(*missing, kafka));
  auto producer = Producer::Create(kafka);
  if (!producer.ok()) return producer.status();
  const std::string now = FormatTime(SystemClock::Get().Now());
  std::vector<OutMessage> ticks;
  for (TimePoint t : plan->fire_times) {
    const std::string fire = FormatTime(t);
    json e = {{"id", "backfill:" + name + ":" + fire},
              {"type", "tick"},
              {"time", now},
              {"payload", {{"schedule", name}, {"fire_time", fire}}}};
    ticks.push_back({topic, name, e.dump()});
  }
  auto ok = (*producer)->ProduceAndWait(ticks, 30000);
  const size_t failed = static_cast<size_t>(std::count(ok.begin(), ok.end(), false));
  if (failed > 0) {
    return Unavailable(std::to_string(failed) + " of " + std::to_string(ticks.size()) + " ticks not delivered to " +
                       topic + ": " + (*producer)->LastError() +
                       " (running it again sends each once more, harmlessly)");
  }
  if (Status recorded =
          RecordBackfill(pg, name, request.from, request.to, static_cast<int64_t>(ticks.size()), request.actor);
      !recorded.ok()) {
    return Status(recorded.code(), std::to_string(ticks.size()) + " ticks sent to " + topic +
                                       " but the backfill is not recorded (counters, audit): " + recorded.message());
  }
  return plan;
}

}  // namespace trigd
