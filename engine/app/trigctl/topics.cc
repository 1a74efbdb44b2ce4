// trigctl topics create: the topics of topics/*.json under the prefix, those that do not exist.
#include <iostream>
#include <memory>

#include "app/trigctl/context.h"
#include "log/topics.h"

namespace trigctl {
namespace {

int TopicsCreate(const Context& ctx, int replication_factor) {
  auto specs = trigd::LoadTopicSpecs(trigd::DefaultTopicsDir(), ctx.config.topic_prefix);
  if (!specs.ok()) return Fail(specs.status(), "topics create");
  if (replication_factor != 0) {
    if (auto s = trigd::SetReplicationFactor(*specs, replication_factor); !s.ok()) return Fail(s, "topics create");
  }
  auto created = trigd::CreateTopics(ctx.config.kafka, *specs);
  if (!created.ok()) return Fail(created.status(), "topics create");
  if (ctx.as_json) {
    json out = json::array();
    for (const auto& c : *created) out.push_back({{"topic", c.name}, {"created", c.created}});
    std::cout << out.dump() << "\n";
  } else {
    for (const auto& c : *created) std::cout << (c.created ? "created  " : "exists   ") << c.name << "\n";
  }
  return 0;
}

}  // namespace

void AddTopics(CLI::App& root, Context& ctx) {
  CLI::App* topics = Noun(root, "topics", "Kafka topics");
  auto replication_factor = std::make_shared<int>(0);
  CLI::App* create = ctx.Verb(*topics, "create", "create the topics of topics/*.json that do not exist (idempotent)",
                              [&ctx, replication_factor] { return TopicsCreate(ctx, *replication_factor); });
  trigd::FlagValue(
      create
          ->add_option("--replication-factor", *replication_factor,
                       "replicas of each topic (default: the broker's default.replication.factor); at 3 or more, "
                       "min.insync.replicas 2 unless topics.json sets it")
          ->type_name("N"));
}

}  // namespace trigctl
