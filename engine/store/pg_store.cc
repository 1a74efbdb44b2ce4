#include "store/pg_store.h"

#include <mutex>
#include <shared_mutex>

#include "store/pg_store_parts.h"

namespace trigd {

using nlohmann::json;
using namespace pg_internal;  // NOLINT(google-build-using-namespace): the module's own helpers

struct ScheduleCache::State {
  explicit State(size_t capacity) : capacity(capacity) {}
  const size_t capacity;
  mutable std::shared_mutex mu;
  std::unordered_map<int64_t, std::pair<int, std::shared_ptr<const Schedule>>> entries;
};

ScheduleCache::ScheduleCache(size_t capacity) : state_(std::make_shared<State>(capacity)) {}

std::shared_ptr<const Schedule> ScheduleCache::Find(int64_t id, int version) const {
  std::shared_lock lock(state_->mu);
  auto it = state_->entries.find(id);
  if (it == state_->entries.end() || it->second.first != version) return nullptr;
  return it->second.second;
}

std::shared_ptr<const Schedule> ScheduleCache::Get(int64_t id, int version, const std::string& document) {
  if (auto found = Find(id, version)) return found;
  // Parsed without the lock: two threads may parse one document at once; either result is kept.
  json doc = json::parse(document, nullptr, false);
  if (doc.is_discarded()) return nullptr;
  ParsedSchedule parsed = ParseSchedule(doc);
  if (!parsed.ok()) return nullptr;
  auto s = std::make_shared<const Schedule>(std::move(parsed.schedule));
  std::unique_lock lock(state_->mu);
  if (state_->entries.size() >= state_->capacity) state_->entries.clear();
  state_->entries[id] = {version, s};
  return s;
}

PgStore::PgStore(std::unique_ptr<Conn> c, std::string topic_prefix)
    : conn_(std::move(c)), topics_(std::move(topic_prefix)) {}
PgStore::~PgStore() = default;

Result<std::unique_ptr<PgStore>> PgStore::Connect(const std::string& pg, const std::string& topic_prefix) {
  auto c = pg_internal::Connect(pg);
  if (!c.ok()) return c.status();
  for (const auto& [name, sql] : PreparedStatements()) (*c)->prepare(name, sql);
  // The prepared statements run on one generic plan each, made anew every plan_lifetime_ (a second)
  // (RenewPlans) for the tables as they are then. Planning every execution for its own
  // arguments (force_custom_plan) costs 0.1-0.4 ms per statement, a large share of a single
  // event's ingest transaction. A plan kept for good goes wrong: PostgreSQL's own choice (auto)
  // caches a generic plan made while `jobs` is empty, which then hashes the whole grown table
  // for every batch of checker writes until an autoanalyze (a storm stalls for minutes). A plan
  // made anew uses the tables' current size in pages, so a plan made for an empty table lasts a
  // second at most (docs/adr/0030-generic-plans-renewed.md).
  (*c)->set_variable("plan_cache_mode", "force_generic_plan");
  // No JIT compilation (docs/adr/0156-no-jit-for-the-engine.md): the engine's statements read
  // and write a few thousand rows through indexes, where compiling costs more than it saves,
  // and a plan whose estimate crosses jit_above_cost compiles anew on every execution. The job
  // gauge (CountJobs) disables sequential scans, so its count of the outbox's launch requests
  // is costed at 10^10 and compiled every 2 s: 250 ms of a backend's CPU each time
  // (EXPLAIN ANALYZE), taken from the storm and the latency of every event on two cores.
  (*c)->set_variable("jit", "off");
  return std::unique_ptr<PgStore>(new PgStore(std::make_unique<Conn>(std::move(*c)), topic_prefix));
}

void PgStore::RenewPlans() {
  const auto now = std::chrono::steady_clock::now();
  if (now - plans_made_ < plan_lifetime_) return;
  // Drops every cached plan of this connection; the statements stay prepared.
  pqxx::nontransaction(*conn_->c).exec("DISCARD PLANS");
  plans_made_ = now;
}

Result<std::string> PgStore::ExplainPrepared(const std::string& name, int params) {
  return Guard([&]() -> Result<std::string> {
    RenewPlans();
    conn_->c->prepare_now(name);  // libpqxx prepares on first use
    std::string sql = "EXPLAIN EXECUTE " + name + "(";
    for (int i = 0; i < params; ++i) sql += i == 0 ? "NULL" : ", NULL";
    pqxx::nontransaction tx(*conn_->c);
    std::string plan;
    for (const auto& r : tx.exec(sql + ")")) plan += r[0].as<std::string>() + "\n";
    return plan;
  });
}

Result<ScheduleChanges> PgStore::LoadScheduleChanges(int64_t after_seq) {
  return Guard([&]() -> Result<ScheduleChanges> {
    pqxx::read_transaction tx(*conn_->c);
    ScheduleChanges out;
    out.last_seq = tx.exec1("SELECT coalesce(max(seq), 0) FROM schedule_changes")[0].as<int64_t>();
    if (after_seq == 0) {
      // Start-up: every active schedule's keys in one ordered scan (1M schedules load in
      // seconds; rows of one schedule are adjacent, so no map is needed).
      for (const auto& r : tx.exec("SELECT t.schedule_id, t.event_key FROM schedule_triggers t "
                                   "JOIN schedules s ON s.id = t.schedule_id WHERE s.state = 'active' "
                                   "ORDER BY t.schedule_id")) {
        int64_t id = r[0].as<int64_t>();
        if (out.schedules.empty() || out.schedules.back().id != id) out.schedules.push_back({id, true, {}});
        out.schedules.back().event_keys.push_back(r[1].as<std::string>());
      }
      return out;
    }
    if (out.last_seq == after_seq) return out;
    // Changed schedules: removed unless they still have active keys.
    std::map<int64_t, ScheduleKeys> keys;
    for (const auto& r :
         tx.exec_params("SELECT DISTINCT schedule_id FROM schedule_changes WHERE seq > $1 AND seq <= $2", after_seq,
                        out.last_seq)) {
      int64_t id = r[0].as<int64_t>();
      keys[id] = {id, false, {}};
    }
    std::vector<int64_t> ids;
    for (const auto& [id, k] : keys) ids.push_back(id);
    for (const auto& r : tx.exec_params(
             "SELECT t.schedule_id, t.event_key FROM schedule_triggers t JOIN schedules s ON s.id = t.schedule_id "
             "WHERE s.state = 'active' AND t.schedule_id = ANY($1::bigint[])",
             IntArray(ids))) {
      ScheduleKeys& k = keys[r[0].as<int64_t>()];
      k.active = true;
      k.event_keys.push_back(r[1].as<std::string>());
    }
    out.schedules.reserve(keys.size());
    for (auto& [id, k] : keys) out.schedules.push_back(std::move(k));
    return out;
  });
}

Result<std::vector<std::optional<int64_t>>> PgStore::LoadOffsets(
    const std::string& group, const std::vector<std::pair<std::string, int>>& parts) {
  return Guard([&]() -> Result<std::vector<std::optional<int64_t>>> {
    pqxx::read_transaction tx(*conn_->c);
    std::vector<std::optional<int64_t>> out;
    for (const auto& [topic, partition] : parts) {
      auto r =
          tx.exec_params("SELECT next_offset FROM consumer_offsets WHERE group_id=$1 AND topic=$2 AND partition=$3",
                         group, topic, partition);
      out.push_back(r.empty() ? std::nullopt : std::optional<int64_t>(r[0][0].as<int64_t>()));
    }
    return out;
  });
}

Result<std::map<std::string, int64_t>> PgStore::CountJobs() {
  return Guard([&]() -> Result<std::map<std::string, int64_t>> {
    pqxx::read_transaction tx(*conn_->c);
    // Both counts go through an index scan: jobs_by_state keeps an entry for every job that was
    // ever pending until VACUUM, and the outbox (a queue) is mostly dead pages. A bitmap or
    // sequential scan visits all of that every time (60 ms with 26,000 dead entries); an index
    // scan marks the dead entries it meets, and the next count skips them.
    tx.exec("SET LOCAL enable_bitmapscan = off; SET LOCAL enable_seqscan = off");
    // pending_launch is no job state: a launched job whose request the relay has not published.
    std::map<std::string, int64_t> out = {{JobStateName(JobState::kPendingTrigger), 0},
                                          {JobStateName(JobState::kPendingConstraint), 0},
                                          {"pending_launch", 0}};
    for (const auto& r : tx.exec("SELECT state, count(*) FROM jobs WHERE state IN " +
                                 SqlIn(JobState::kPendingTrigger, JobState::kPendingConstraint) +
                                 " GROUP BY state "
                                 "UNION ALL SELECT 'pending_launch', count(*) FROM outbox WHERE job_id IS NOT NULL")) {
      out[r[0].as<std::string>()] = r[1].as<int64_t>();
    }
    return out;
  });
}

Result<PgStore::ChangeCounts> PgStore::TakeChangeCounts() {
  return Guard([&]() -> Result<ChangeCounts> {
    pqxx::work tx(*conn_->c);
    // A change holds the change log locked (EXCLUSIVE) for its whole transaction: do not wait.
    tx.exec("SET LOCAL lock_timeout = '50ms'");
    ChangeCounts out;
    try {
      const pqxx::row r = tx.exec1(
          "WITH c AS (SELECT seq, jobs_discarded, runs_killed FROM schedule_changes "
          "WHERE jobs_discarded > 0 OR runs_killed > 0 ORDER BY seq LIMIT 1000 FOR UPDATE SKIP LOCKED), "
          "u AS (UPDATE schedule_changes s SET jobs_discarded = 0, runs_killed = 0 FROM c WHERE s.seq = c.seq) "
          "SELECT coalesce(sum(jobs_discarded), 0)::bigint, coalesce(sum(runs_killed), 0)::bigint FROM c");
      out.jobs_discarded = r[0].as<int64_t>();
      out.runs_killed = r[1].as<int64_t>();
    } catch (const pqxx::sql_error& e) {
      if (e.sqlstate() != "55P03") throw;  // lock_not_available: a change in progress
      return ChangeCounts{};
    }
    tx.commit();
    return out;
  });
}

Result<std::map<std::string, int64_t>> PgStore::TakeOperatorActions() { return trigd::TakeOperatorActions(*conn_->c); }

Status PgStore::Prune(Millis keep) {
  Result<int> r = Guard([&]() -> Result<int> {
    pqxx::work tx(*conn_->c);
    tx.exec_params("DELETE FROM seen_events WHERE seen_at < now() - make_interval(secs => $1::bigint / 1000.0)",
                   static_cast<int64_t>(keep.count()));
    tx.exec(
        "DELETE FROM schedule_changes WHERE at < now() - interval '1 day' AND seq < (SELECT max(seq) FROM "
        "schedule_changes)");
    tx.commit();
    return 0;
  });
  return r.status();
}

}  // namespace trigd
