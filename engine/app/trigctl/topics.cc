// trigctl topics create: the topics of topics/*.json under the prefix, those that do not exist.
#include <iostream>

#include "app/trigctl/context.h"
#include "log/topics.h"

namespace trigctl {
namespace {

int TopicsCreate(const Context& ctx) {
  auto specs = trigd::LoadTopicSpecs(trigd::DefaultTopicsDir(), ctx.config.topic_prefix);
  if (!specs.ok()) return Fail(specs.status(), "topics create");
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
  ctx.Verb(*topics, "create", "create the topics of topics/*.json that do not exist (idempotent)",
           [&ctx] { return TopicsCreate(ctx); });
}

}  // namespace trigctl
