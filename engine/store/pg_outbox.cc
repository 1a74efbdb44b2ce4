// The relay's side of the outbox: claim, complete, and requests the broker refuses for good.
#include "store/pg_store_parts.h"

namespace trigd {

using nlohmann::json;
using namespace pg_internal;  // NOLINT(google-build-using-namespace): the module's own helpers

// The relay's transaction is opened by the claim's query and closed by CompleteOutbox's, each
// a simple query of several statements (one round trip each: BEGIN and COMMIT would be a round
// trip of their own with pqxx::work). The connection is the relay's alone.
Result<OutboxClaim> PgStore::ClaimOutbox(size_t limit) {
  claim_.reset();  // a claim never completed is rolled back
  auto result = Guard([&]() -> Result<OutboxClaim> {
    RenewPlans();
    claim_ = std::make_unique<OpenTransaction>(*conn_->c);
    OutboxClaim claim;
    std::vector<OutboxRow>& rows = claim.messages;
    claim_ages_.clear();
    claim_started_ = std::chrono::steady_clock::now();
    const size_t bundles = (limit + kBundleMessages - 1) / kBundleMessages;
    size_t singles_taken = 0, bundles_taken = 0;
    for (const auto& r : claim_->Begin("outbox_claim", {std::to_string(limit), std::to_string(bundles)})) {
      const int64_t id = r[0].as<int64_t>();
      if (r[5].as<bool>()) {
        ++bundles_taken;
        auto messages = ParseBundle(std::string_view(r[3].c_str(), r[3].size()));
        if (!messages.ok()) return Internal("outbox row " + std::to_string(id) + ": " + messages.status().message());
        for (auto& [key, payload] : *messages)
          rows.push_back({id, r[1].as<std::string>(), std::move(key), std::move(payload)});
        continue;
      }
      ++singles_taken;
      if (r[6].is_null()) {
        rows.push_back({id, r[1].as<std::string>(), r[2].as<std::string>(), r[3].as<std::string>()});
      } else {
        // A launch request: the attempt's fields placed into its template, the same on every
        // publication of this row (the same run id and attempt).
        const LaunchAttempt a{r[6].as<int64_t>(), Millis(r[8].as<int64_t>()), FromMillis(r[7].as<int64_t>())};
        rows.push_back({id, r[1].as<std::string>(), r[2].as<std::string>(),
                        RenderLaunchRequest(std::string_view(r[3].c_str(), r[3].size()), a)});
      }
      if (!r[4].is_null())
        claim_ages_.emplace_back(id, static_cast<double>(r[4].as<int64_t>()) / 1e6);  // a first launch
    }
    if (rows.empty()) claim_.reset();
    claim.full = (limit > 0 && singles_taken >= limit) || (bundles > 0 && bundles_taken >= bundles);
    return claim;
  });
  if (!result.ok()) claim_.reset();
  return result;
}

Result<std::vector<double>> PgStore::CompleteOutbox(const std::vector<int64_t>& confirmed) {
  if (!claim_) return std::vector<double>{};
  // The broker confirmed the publication before this call: the time since the claim began.
  const double since_claim = std::chrono::duration<double>(std::chrono::steady_clock::now() - claim_started_).count();
  auto result = Guard([&]() -> Result<std::vector<double>> {
    // Committed without waiting for the WAL flush: if PostgreSQL crashes before the flush, the
    // delete is lost and the relay publishes those requests again, with the same run ids,
    // which a crash between publishing and deleting does anyway (SPEC §5). The relay's next
    // claim does not wait for an fsync of its own, and nor do the launches behind it.
    claim_->Commit(confirmed.empty() ? std::string()
                                     : "SET LOCAL synchronous_commit = off; DELETE FROM outbox WHERE id = ANY('" +
                                           IntArray(confirmed) + "'::bigint[])");
    // Event to launch (trigd_event_to_launch_seconds): a launch request's age when claimed
    // (now(), the claim transaction's start, minus the ready_at its job was made ready with)
    // plus the time from the claim to the broker's confirmation.
    std::vector<double> ages;
    for (int64_t id : confirmed) {
      auto it = std::lower_bound(claim_ages_.begin(), claim_ages_.end(), std::pair<int64_t, double>{id, -1e300});
      if (it != claim_ages_.end() && it->first == id) ages.push_back(it->second + since_claim);
    }
    return ages;
  });
  claim_.reset();
  return result;
}

Result<int> PgStore::FailUnpublishable(const std::vector<int64_t>& refused) {
  if (!claim_ || refused.empty()) return 0;
  auto result = Guard([&]() -> Result<int> {
    pqxx::transaction_base& tx = claim_->tx();
    // Launch requests only: bundles (program events, ticks, dead letters) are trigd's own small
    // messages, kept under the limit when written.
    const pqxx::result ended =
        tx.exec("WITH gone AS (DELETE FROM outbox WHERE id = ANY('" + IntArray(refused) +
                "'::bigint[]) AND NOT bundle "
                "RETURNING payload::jsonb->>'run_id' AS gone_run, coalesce(attempt, (payload::jsonb->>'attempt')::int) "
                "AS gone_attempt) "
                "UPDATE runs SET state=" +
                Sql(RunState::kFailed) +
                ", reason='unpublishable', finished_at=now(), "
                "history = trigd_append_history(history, jsonb_build_array(jsonb_build_object('at', " TRIGD_NOW_TEXT
                ", "
                "'status', 'failed', 'reason', 'unpublishable', 'attempt', attempt))) "
                "FROM gone WHERE runs.run_id = gone.gone_run AND runs.attempt = gone.gone_attempt AND runs.state = " +
                Sql(RunState::kLaunched) +
                " "
                "RETURNING schedule_id, concurrency_group, " TRIGD_ENDED_RUN_COLUMNS);
    std::vector<EndedRun> runs;
    for (const auto& r : ended) {
      runs.push_back(
          {r[0].as<int64_t>(), r[1].is_null() ? std::nullopt : std::optional<std::string>(r[1].as<std::string>())});
    }
    pg_internal::AnnounceEndedRuns(tx, topics_, ended, 2, {"failed", "unpublishable", "unpublishable"});
    ReleaseRuns(tx, runs);
    return static_cast<int>(ended.size());
  });
  if (!result.ok()) claim_.reset();
  return result;
}

}  // namespace trigd
