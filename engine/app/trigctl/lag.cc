// trigctl lag: how far trigd's ingest is behind the event topics.
#include <cstdint>
#include <iostream>

#include "api/lag.h"
#include "app/trigctl/context.h"

namespace trigctl {
namespace {

// Per event-topic partition: the position trigd committed in PostgreSQL, the end of the
// partition in Kafka, and the difference (api/lag.h); its warnings on stderr.
int Lag(const Context& ctx) {
  const trigd::Config& config = ctx.config;
  auto r = ctx.api ? ctx.api->Call("GET", "/api/v1/lag")
                   : trigd::ComputeLag(config.kafka, config.pg, config.topic_prefix, config.group);
  if (!r.ok()) return Fail(r.status(), "lag");
  PrintRows((*r)["rows"], {"group", "topic", "partition", "committed", "end", "lag"}, ctx.as_json);
  if (!ctx.as_json) std::cout << "total lag: " << (*r)["total"].get<int64_t>() << "\n";
  for (const auto& w : (*r)["warnings"]) std::cerr << "trigctl lag: " << w.get<std::string>() << "\n";
  return 0;
}

}  // namespace

void AddLag(CLI::App& root, Context& ctx) {
  CLI::App* lag = root.add_subcommand("lag", "per event-topic partition: trigd's committed position, the end, the lag");
  lag->allow_extras();
  ctx.commands[lag] = [&ctx] { return Lag(ctx); };
}

}  // namespace trigctl
