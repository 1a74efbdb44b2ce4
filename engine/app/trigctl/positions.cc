// trigctl positions resolve --skip|--replay: the way out when trigd stopped because PostgreSQL's
// positions are behind those it copied to the Kafka group (core/rewind.h).
#include <iostream>
#include <memory>
#include <tuple>

#include "app/trigctl/context.h"
#include "common/topic_names.h"
#include "core/rewind.h"
#include "log/kafka.h"
#include "store/admin.h"

namespace trigctl {
namespace {

struct ResolveFlags {
  bool skip = false;
  bool replay = false;
};

int Resolve(const Context& ctx, const ResolveFlags& f) {
  if (f.skip == f.replay) return Refuse("positions resolve", "expected exactly one of --skip and --replay");
  const trigd::Config& config = ctx.config;
  auto ends = trigd::QueryEndOffsets(config.kafka, trigd::TopicNames(config.topic_prefix).Events());
  if (!ends.ok()) return Fail(ends.status(), "positions resolve");
  std::vector<std::pair<std::string, int>> parts;
  for (const auto& e : *ends) parts.emplace_back(e.topic, e.partition);
  auto group = trigd::QueryGroupOffsets(config.kafka, config.group, parts);
  if (!group.ok()) return Fail(group.status(), "positions resolve");
  auto stored = trigd::QueryOffsets(config.pg);
  if (!stored.ok()) return Fail(stored.status(), "positions resolve");
  std::vector<trigd::PositionPair> pairs;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::optional<int64_t> store;
    for (const auto& row : *stored) {
      if (row["group"] == config.group && row["topic"] == parts[i].first && row["partition"] == parts[i].second)
        store = row["next_offset"].get<int64_t>();
    }
    pairs.push_back({parts[i].first, parts[i].second, store, (*group)[i]});
  }
  const std::vector<trigd::Rewind> rewinds = trigd::FindRewinds(pairs);
  if (rewinds.empty()) {
    std::cout << "positions agree: PostgreSQL is not behind group " << config.group << "\n";
    return 0;
  }
  if (f.skip) {
    std::vector<std::tuple<std::string, int, int64_t>> offsets;
    for (const auto& r : rewinds) offsets.emplace_back(r.topic, r.partition, r.group);
    if (auto s = trigd::SetOffsets(config.pg, config.group, offsets); !s.ok()) return Fail(s, "positions resolve");
  } else {
    std::vector<trigd::PartitionOffset> offsets;
    for (const auto& r : rewinds) offsets.push_back({r.topic, r.partition, r.store});
    if (auto s = trigd::CommitGroupOffsets(config.kafka, config.group, offsets); !s.ok())
      return Fail(s, "positions resolve");
  }
  for (const auto& r : rewinds) {
    std::cout << (f.skip ? "skipped  " : "replay   ") << r.topic << "[" << r.partition << "] " << r.store << ".."
              << r.group << " (" << (r.group - r.store) << " events)\n";
  }
  return 0;
}

}  // namespace

void AddPositions(CLI::App& root, Context& ctx) {
  CLI::App* positions = Noun(root, "positions", "trigd's consumed positions in PostgreSQL and in the Kafka group");
  auto f = std::make_shared<ResolveFlags>();
  CLI::App* resolve = ctx.Verb(*positions, "resolve",
                               "after trigd stopped for positions behind the group's: --skip (the store takes the "
                               "group's) or --replay (the group takes the store's); stop every trigd first",
                               [&ctx, f] { return Resolve(ctx, *f); });
  resolve->add_flag("--skip", f->skip, "the store takes the group's positions: the events between are not applied");
  resolve->add_flag("--replay", f->replay,
                    "the group takes the store's positions: the events between are applied again (may launch twice)");
}

}  // namespace trigctl
