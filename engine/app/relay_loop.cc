// The relay loop: outbox rows published, confirmed, deleted.
#include "app/engine_loops.h"

namespace trigd::engine_internal {

using nlohmann::json;

// Sends of a message the broker refuses for good (too large for the topic, a policy) before its
// run is failed as unpublishable: a few, in case the refusal came from a broker being reconfigured.
constexpr int kMaxRefusedSends = 5;

// Outbox rows whose every send the broker refused for good, by id: those refused
// kMaxRefusedSends times in a row are returned, and forgotten. A row sent or not refused is
// forgotten too, so the map holds only rows of the current claims.
class RefusedSends {
 public:
  std::vector<int64_t> Count(const std::vector<OutboxRow>& rows, const std::vector<bool>& refused) {
    std::map<int64_t, int> next;
    std::vector<int64_t> give_up;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!refused[i] || next.contains(rows[i].id)) continue;
      const int sends = tries_[rows[i].id] + 1;
      if (sends >= kMaxRefusedSends) {
        give_up.push_back(rows[i].id);
      } else {
        next[rows[i].id] = sends;
      }
    }
    tries_ = std::move(next);
    return give_up;
  }

 private:
  std::map<int64_t, int> tries_;
};

// Messages per claim, and how long the relay waits for a wake before it looks at the outbox
// anyway (rows written by another instance, or by a transaction whose wake was missed).
constexpr size_t kClaimLimit = 5000;
constexpr auto kPollInterval = std::chrono::milliseconds(50);

// The relay: publishes what committed transactions decided, deletes a row only once the
// broker confirmed it (a crash in between re-sends it: same run id).
// After a claim that was not full it claims again only when woken (a committing loop wakes it
// after its commit) or after kPollInterval: a wake that comes while it publishes is kept, so
// the next claim starts as soon as the publication is done, and no claim that finds the outbox
// empty (two round trips: the claim and its rollback) stands between a commit and its claim.
void RelayLoop(Shared& sh) {
  StoreHandle store(sh.config, sh.store_factory, "relay");
  std::unique_ptr<Producer> producer;
  std::set<std::string> known_topics;
  RefusedSends refused_sends;
  bool claim_at_once = true;  // at the start, after a full claim, a failure or unconfirmed sends
  while (!sh.Stopping()) {
    if (!producer) {
      auto p = Producer::Create(sh.config.kafka);
      if (!p.ok()) {
        Log("relay: " + p.status().ToString());
        std::this_thread::sleep_for(std::chrono::seconds(1));
        continue;
      }
      producer = std::move(*p);
    }
    EngineStore* pg = store.Get();
    if (!pg) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    if (!claim_at_once) sh.relay_wake.Wait(kPollInterval);
    claim_at_once = true;
    auto claim = pg->ClaimOutbox(kClaimLimit);
    if (!claim.ok()) {
      store.Failed(claim.status());
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    std::vector<OutboxRow>& rows = claim->messages;
    if (rows.empty()) {
      claim_at_once = false;
      continue;
    }
    // A launch topic for a new target is created on first use (trigd.launch.<target>).
    std::vector<TopicSpec> missing;
    for (const auto& row : rows) {
      if (known_topics.insert(row.topic).second) missing.push_back({row.topic, 4, {{"retention.ms", "604800000"}}});
    }
    if (!missing.empty()) {
      if (auto c = CreateTopics(sh.config.kafka, missing); !c.ok()) {
        Log("relay: creating topics: " + c.status().ToString());
        for (const auto& t : missing) known_topics.erase(t.name);
      }
    }
    std::vector<OutMessage> out;
    out.reserve(rows.size());
    // Moved, not copied: from here on only the rows' ids are read.
    for (auto& row : rows) out.push_back({std::move(row.topic), std::move(row.key), std::move(row.payload)});
    std::vector<bool> ok = producer->ProduceAndWait(out, 10000);
    const std::vector<int64_t> given_up = refused_sends.Count(rows, producer->Refused());
    if (!given_up.empty()) {
      auto failed = pg->FailUnpublishable(given_up);
      if (!failed.ok()) {
        store.Failed(failed.status());
        continue;
      }
      Log("relay: " + std::to_string(given_up.size()) + " launch requests refused by Kafka " +
          std::to_string(kMaxRefusedSends) + " times (" + producer->LastError() + "): " + std::to_string(*failed) +
          " runs failed as unpublishable");
      sh.metrics.RunOutcome("failed").Increment(*failed);
      sh.metrics.RunOutcome("unpublishable").Increment(*failed);
    }
    // A row is confirmed when all its messages are (a bundle's share its id; rows come in id order).
    std::vector<int64_t> confirmed;
    size_t unconfirmed = 0;
    for (size_t i = 0; i < rows.size();) {
      size_t end = i;
      if (std::find(given_up.begin(), given_up.end(), rows[i].id) != given_up.end()) {  // withdrawn
        while (end < rows.size() && rows[end].id == rows[i].id) ++end;
        i = end;
        continue;
      }
      bool all = true;
      for (; end < rows.size() && rows[end].id == rows[i].id; ++end) {
        if (!ok[end]) ++unconfirmed, all = false;
      }
      if (all) confirmed.push_back(rows[i].id);
      i = end;
    }
    auto done = pg->CompleteOutbox(confirmed);
    if (!done.ok()) {
      store.Failed(done.status());
      continue;
    }
    sh.metrics.JobTransition("launched").Increment(static_cast<double>(done->size()));
    for (double s : *done) sh.metrics.EventToLaunch().Observe(s);
    claim_at_once = claim->full;
    if (unconfirmed > 0) {
      Log("relay: " + std::to_string(unconfirmed) + " messages not confirmed by Kafka (" + producer->LastError() +
          "); will re-send with a new producer");
      // A fresh producer: an idempotent producer can be left fenced or fatal after a broker
      // restart; the rows stay in the outbox and go again, with the same run ids.
      producer.reset();
      claim_at_once = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
}

}  // namespace trigd::engine_internal
