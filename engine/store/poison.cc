// Ingest's isolation of a failing schedule (PgStore::ApplyIsolating): a batch that fails in a
// way no rerun fixes is applied without the (event, schedule) pairs that fail, each of them
// dead-lettered, so one schedule's bad value or a trigger on its rows never stalls the events of
// every other schedule (docs/adr/0055).
#include <algorithm>
#include <map>

#include <pqxx/pqxx>

#include "core/envelope.h"
#include "store/pg_internal.h"
#include "store/pg_store.h"
#include "store/sql_array.h"

namespace trigd {

// One event reaching one schedule (IngestBatch::schedule_ids), by the event's index.
struct PoisonPair {
  size_t event = 0;
  int64_t schedule = 0;
};

// The batch as probed: its events, with schedule_ids rewritten to a subset of `pairs` per probe.
// `pairs` come in the order they are tried; the pairs in [0, accepted) are known to apply.
struct PgStore::Isolation {
  IngestBatch work;
  std::vector<PoisonPair> pairs;
  std::vector<size_t> accepted;                        // indexes into pairs
  std::vector<std::pair<size_t, std::string>> poison;  // index into pairs, the database's message

  // `work` reaching only the pairs of `accepted` and of pairs[from, to).
  void Select(size_t from, size_t to) {
    for (auto& ids : work.schedule_ids) ids.clear();
    for (size_t k : accepted) work.schedule_ids[pairs[k].event].push_back(pairs[k].schedule);
    for (size_t k = from; k < to; ++k) work.schedule_ids[pairs[k].event].push_back(pairs[k].schedule);
    for (auto& ids : work.schedule_ids) std::sort(ids.begin(), ids.end());  // as the index routes them
  }
};

namespace {

// The dead letter of `event` for a schedule it could not be applied to.
DeadLetter ScheduleFailedLetter(const IngestBatch& batch, size_t event, const std::string& schedule,
                                const std::string& error) {
  const Event& e = batch.events[event];
  const IngestBatch::Source source = event < batch.sources.size() ? batch.sources[event] : IngestBatch::Source{};
  const Status why = DeadLetterStatus(DeadLetterReason::kScheduleFailed,
                                      "schedule " + schedule + " cannot apply this event: " + error);
  return {schedule, DeadLetterJson(why, source.topic, source.partition, source.offset, EnvelopeToJson(e).dump())};
}

// Schedule names by id, for dead letters ("id N" for a schedule deleted meanwhile).
std::map<int64_t, std::string> ScheduleNames(pqxx::connection& c, const std::vector<int64_t>& ids) {
  pg_internal::SqlArray array;
  for (int64_t id : ids) array.AddInt(id);
  std::map<int64_t, std::string> out;
  for (int64_t id : ids) out[id] = "id " + std::to_string(id);
  pqxx::nontransaction tx(c);
  for (const auto& r : tx.exec_params("SELECT id, name FROM schedules WHERE id = ANY($1::bigint[])", array.Take())) {
    out[r[0].as<int64_t>()] = r[1].as<std::string>();
  }
  return out;
}

}  // namespace

// Finds the failing pairs greedily: pairs[from, to) are added on top of the accepted ones when
// the batch then applies (a probe, rolled back), else split in halves, down to single pairs,
// each of which fails on top of what applies. k failing pairs of n take about k log2(n)
// probes. `fails_with`: the range is known to fail with this message (no probe).
Status PgStore::AddPairs(Isolation& iso, size_t from, size_t to, const std::string* fails_with) {
  if (from == to) return Status();
  std::string error = fails_with ? *fails_with : std::string();
  if (!fails_with) {
    iso.Select(from, to);
    bool seen_before = false;
    Result<IngestResult> r = ApplyBatchTx(iso.work, true, seen_before, TxEnd::kRollback, &error);
    if (r.ok() && (r->fenced || r->stale_index))
      return Aborted("ingest: batch fenced or stale while isolating a failure; rerun");
    if (r.ok()) {
      for (size_t k = from; k < to; ++k) iso.accepted.push_back(k);
      return Status();
    }
    if (error.empty()) return r.status();  // transient (a lost connection, a deadlock): rerun
  }
  if (to - from == 1) {
    iso.poison.emplace_back(from, error);
    return Status();
  }
  const size_t half = from + (to - from) / 2;
  if (Status s = AddPairs(iso, from, half, nullptr); !s.ok()) return s;
  return AddPairs(iso, half, to, nullptr);
}

Result<IngestResult> PgStore::ApplyIsolating(const IngestBatch& batch, const std::string& error) {
  Isolation iso{batch, {}, {}, {}};
  // Pairs of schedules that failed before go last: the others are then accepted in one probe.
  std::vector<PoisonPair> suspects;
  for (size_t i = 0; i < batch.events.size(); ++i) {
    for (int64_t id : batch.schedule_ids[i]) (poison_suspects_.count(id) ? suspects : iso.pairs).push_back({i, id});
  }
  const size_t usual = iso.pairs.size();
  iso.pairs.insert(iso.pairs.end(), suspects.begin(), suspects.end());
  Status s = suspects.empty() ? AddPairs(iso, 0, usual, &error) : AddPairs(iso, 0, usual, nullptr);
  if (s.ok()) s = AddPairs(iso, usual, iso.pairs.size(), nullptr);
  if (!s.ok()) return s;
  // The batch with what applies and the failing pairs' dead letters. If it still fails (every
  // pair failed: the failure is not a schedule's), nothing is dead-lettered and the error is
  // returned, as before.
  iso.Select(0, 0);
  std::vector<int64_t> failed_ids;
  for (const auto& [k, message] : iso.poison) failed_ids.push_back(iso.pairs[k].schedule);
  auto names = pg_internal::Guard(
      [&]() -> Result<std::map<int64_t, std::string>> { return ScheduleNames(*conn_->c, failed_ids); });
  if (!names.ok()) return names.status();
  for (const auto& [k, message] : iso.poison) {
    iso.work.dead.push_back(ScheduleFailedLetter(batch, iso.pairs[k].event, (*names)[iso.pairs[k].schedule], message));
  }
  bool seen_before = false;
  Result<IngestResult> r = ApplyBatchTx(iso.work, true, seen_before);
  if (!r.ok() || r->fenced || r->stale_index) return r;
  for (const auto& [k, message] : iso.poison) {
    const PoisonPair& p = iso.pairs[k];
    r->dead_reasons.push_back(DeadLetterReason::kScheduleFailed);
    // An event that reached no schedule it could be applied to (and reported no run) is dead.
    if (iso.work.schedule_ids[p.event].empty() && r->outcome[p.event] == EventOutcome::kNoMatch)
      r->outcome[p.event] = EventOutcome::kDead;
    if (poison_suspects_.size() >= kMaxSuspects) poison_suspects_.clear();
    poison_suspects_.insert(p.schedule);
  }
  return r;
}

}  // namespace trigd
