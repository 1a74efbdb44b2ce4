#include "store/pg_store.h"

#include <chrono>
#include <random>
#include <sstream>

#include <pqxx/pqxx>

#include "common/time.h"

namespace trigd {

struct PgStore::Conn {
  explicit Conn(const std::string& pg) : c(pg) {}
  pqxx::connection c;
};

struct PgStore::Claim {
  explicit Claim(pqxx::connection& c) : tx(c) {}
  pqxx::work tx;
};

namespace {

std::string NewRunId() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  std::ostringstream out;
  out << std::hex << rng() << rng();
  std::string s = out.str();
  s.resize(32, '0');
  return s.substr(0, 8) + "-" + s.substr(8, 4) + "-" + s.substr(12, 4) + "-" + s.substr(16, 4) +
         "-" + s.substr(20, 12);
}

std::string NowRfc3339() {
  auto now = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

int64_t DocDurationMs(const nlohmann::json& doc, const char* field, int64_t fallback) {
  if (!doc.contains(field) || !doc[field].is_string()) return fallback;
  auto d = ParseDuration(doc[field].get<std::string>());
  return d.ok() ? d->count() : fallback;
}

template <class F>
auto Guard(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const pqxx::broken_connection& e) {
    return Unavailable(std::string("PostgreSQL: ") + e.what());
  } catch (const pqxx::transaction_rollback& e) {
    return Aborted(std::string("PostgreSQL: ") + e.what());
  } catch (const std::exception& e) {
    return Internal(std::string("PostgreSQL: ") + e.what());
  }
}

}  // namespace

PgStore::PgStore(std::unique_ptr<Conn> c) : conn_(std::move(c)) {}
PgStore::~PgStore() = default;

Result<std::unique_ptr<PgStore>> PgStore::Connect(const std::string& pg) {
  try {
    return std::unique_ptr<PgStore>(new PgStore(std::make_unique<Conn>(pg)));
  } catch (const std::exception& e) {
    return Unavailable(std::string("cannot connect to PostgreSQL: ") + e.what());
  }
}

Result<std::unordered_map<std::string, std::vector<ScheduleRow>>> PgStore::LoadScheduleIndex() {
  return Guard([&]() -> Result<std::unordered_map<std::string, std::vector<ScheduleRow>>> {
    pqxx::read_transaction tx(conn_->c);
    std::unordered_map<std::string, std::vector<ScheduleRow>> index;
    for (const auto& r : tx.exec(
             "SELECT t.event_key, s.id, s.name, s.version, s.document::text FROM schedule_triggers t "
             "JOIN schedules s ON s.id = t.schedule_id WHERE s.state = 'active'")) {
      index[r[0].as<std::string>()].push_back(
          {r[1].as<int64_t>(), r[2].as<std::string>(), r[3].as<int>(),
           nlohmann::json::parse(r[4].as<std::string>())});
    }
    return index;
  });
}

Result<std::vector<std::optional<int64_t>>> PgStore::LoadOffsets(
    const std::string& group, const std::vector<std::pair<std::string, int>>& parts) {
  return Guard([&]() -> Result<std::vector<std::optional<int64_t>>> {
    pqxx::read_transaction tx(conn_->c);
    std::vector<std::optional<int64_t>> out;
    for (const auto& [topic, partition] : parts) {
      auto r = tx.exec_params(
          "SELECT next_offset FROM consumer_offsets WHERE group_id=$1 AND topic=$2 AND partition=$3",
          group, topic, partition);
      out.push_back(r.empty() ? std::nullopt : std::optional<int64_t>(r[0][0].as<int64_t>()));
    }
    return out;
  });
}

Result<BatchResult> PgStore::ApplyBatch(const std::string& group, const std::string& topic_prefix,
                                        const std::vector<MatchedEvent>& events,
                                        const std::vector<std::pair<std::string, std::string>>& dead,
                                        const std::vector<ConsumedPosition>& positions,
                                        const std::vector<RunReport>& reports) {
  return Guard([&]() -> Result<BatchResult> {
    pqxx::work tx(conn_->c);
    BatchResult result;
    // Positions first: a compare-and-set on the stored offset fences a consumer that lost its
    // partition in a rebalance but still holds a batch of it.
    for (const auto& p : positions) {
      auto r = tx.exec_params(
          "INSERT INTO consumer_offsets (group_id, topic, partition, next_offset) "
          "VALUES ($1, $2, $3, $5) ON CONFLICT (group_id, topic, partition) DO UPDATE "
          "SET next_offset = EXCLUDED.next_offset, updated_at = now() "
          "WHERE consumer_offsets.next_offset <= $4 RETURNING 1",
          group, p.topic, p.partition, p.first_offset, p.next_offset);
      if (r.empty()) return Aborted("position of " + p.topic + "/" + std::to_string(p.partition) +
                                    " moved by another consumer");
    }
    for (const auto& e : events) {
      if (tx.exec_params("INSERT INTO seen_events (id) VALUES ($1) ON CONFLICT DO NOTHING RETURNING 1",
                         e.id).empty()) {
        ++result.duplicates;
        result.duplicate.push_back(true);
        continue;
      }
      result.duplicate.push_back(false);
      nlohmann::json triggered_by = nlohmann::json::array(
          {{{"id", e.id}, {"type", e.type}, {"payload", e.payload}}});
      for (const ScheduleRow* s : e.schedules) {
        const auto& program = s->document.at("program");
        int64_t job_id = tx.exec_params1(
            "INSERT INTO jobs (schedule_id, schedule_name, schedule_version, state, trigger_state, "
            "triggered_by, history, opened_at, first_event_at, ready_at) VALUES "
            "($1, $2, $3, 'pending_launch', '[{\"count\":1,\"satisfied\":true}]', $4::jsonb, "
            "jsonb_build_array(jsonb_build_object('at', now(), 'what', 'opened and complete: ' || $5::text, "
            "'event', $6::text)), now(), now(), now()) RETURNING id",
            s->id, s->name, s->version, triggered_by.dump(), e.type, e.id)[0].as<int64_t>();
        std::string run_id = NewRunId();
        std::string target = program.value("target", "default");
        nlohmann::json request = {
            {"run_id", run_id}, {"schedule", s->name}, {"schedule_version", s->version},
            {"program", {{"name", program.at("name")}, {"args", program.value("args", nlohmann::json::object())}, {"target", target}}},
            {"attempt", 1}, {"heartbeat_timeout", s->document.value("heartbeat_timeout", "5m")},
            {"launched_at", NowRfc3339()}, {"triggered_by", triggered_by}};
        tx.exec_params(
            "INSERT INTO runs (run_id, job_id, schedule_id, schedule_name, program, target, state, "
            "heartbeat_timeout_ms, max_attempts, launched_at, last_seen_at, request) VALUES "
            "($1, $2, $3, $4, $5, $6, 'launched', $8, $9, now(), now(), $7::jsonb)",
            run_id, job_id, s->id, s->name, program.at("name").get<std::string>(), target,
            request.dump(), DocDurationMs(s->document, "heartbeat_timeout", 300000),
            s->document.contains("retry") ? s->document["retry"].value("max_attempts", int64_t{1}) : int64_t{1});
        tx.exec_params("INSERT INTO outbox (topic, key, payload, job_id) VALUES ($1, $2, $3, $4)",
                       topic_prefix + "launch." + target, program.at("name").get<std::string>(),
                       request.dump(), job_id);
        ++result.jobs_launched;
      }
    }
    // Only a run still in flight moves: a duplicate or late report changes nothing.
    for (const auto& rep : reports) {
      bool final_status = rep.status == "succeeded" || rep.status == "failed" || rep.status == "killed";
      tx.exec_params(
          "UPDATE runs SET state = CASE WHEN $3 THEN $2 ELSE 'running' END, last_seen_at = now(), "
          "finished_at = CASE WHEN $3 THEN now() END, history = history || jsonb_build_array("
          "jsonb_build_object('at', now(), 'status', $2::text)) "
          "WHERE run_id = $1 AND state IN ('launched', 'running')",
          rep.run_id, rep.status, final_status);
    }
    for (const auto& [key, payload] : dead) {
      tx.exec_params("INSERT INTO outbox (topic, key, payload) VALUES ($1, $2, $3)",
                     topic_prefix + "dead", key, payload);
    }
    tx.commit();
    return result;
  });
}

Result<std::vector<OutboxRow>> PgStore::ClaimOutbox(size_t limit) {
  return Guard([&]() -> Result<std::vector<OutboxRow>> {
    claim_.reset();
    claim_ = std::make_unique<Claim>(conn_->c);
    std::vector<OutboxRow> rows;
    for (const auto& r : claim_->tx.exec_params(
             "SELECT id, topic, coalesce(key, ''), payload, job_id FROM outbox ORDER BY id "
             "LIMIT $1 FOR UPDATE SKIP LOCKED", static_cast<int64_t>(limit))) {
      OutboxRow row{r[0].as<int64_t>(), r[1].as<std::string>(), r[2].as<std::string>(),
                    r[3].as<std::string>(), std::nullopt};
      if (!r[4].is_null()) row.job_id = r[4].as<int64_t>();
      rows.push_back(std::move(row));
    }
    if (rows.empty()) claim_.reset();
    return rows;
  });
}

Status PgStore::CompleteOutbox(const std::vector<int64_t>& confirmed, const std::vector<int64_t>& job_ids) {
  if (!claim_) return Status::Ok();
  Result<int> r = Guard([&]() -> Result<int> {
    for (int64_t id : confirmed) claim_->tx.exec_params("DELETE FROM outbox WHERE id = $1", id);
    for (int64_t id : job_ids) {
      claim_->tx.exec_params(
          "UPDATE jobs SET state = 'launched', finished_at = now(), history = history || "
          "jsonb_build_array(jsonb_build_object('at', now(), 'what', 'launch request published')) "
          "WHERE id = $1 AND state = 'pending_launch'", id);
    }
    claim_->tx.commit();
    return 0;
  });
  claim_.reset();
  return r.status();
}

}  // namespace trigd

namespace trigd {

Result<std::vector<ApplyOutcome>> ApplySchedules(const std::string& pg,
                                                 const std::vector<ScheduleDoc>& docs) {
  std::unique_ptr<pqxx::connection> conn;
  try {
    conn = std::make_unique<pqxx::connection>(pg);
  } catch (const std::exception& e) {
    return Unavailable(std::string("cannot connect to PostgreSQL: ") + e.what());
  }
  return Guard([&]() -> Result<std::vector<ApplyOutcome>> {
    pqxx::work tx(*conn);
    std::vector<ApplyOutcome> out;
    for (const auto& d : docs) {
      std::string text = d.document.dump();
      std::string hash = std::to_string(std::hash<std::string>()(text));
      auto cur = tx.exec_params("SELECT id, version, doc_hash FROM schedules WHERE name = $1 FOR UPDATE", d.name);
      if (!cur.empty() && cur[0][2].as<std::string>() == hash) {
        out.push_back({d.name, cur[0][1].as<int>(), false});
        continue;
      }
      int64_t id;
      int version;
      if (cur.empty()) {
        auto r = tx.exec_params1(
            "INSERT INTO schedules (name, version, doc_hash, document) VALUES ($1, 1, $2, $3::jsonb) "
            "RETURNING id, version", d.name, hash, text);
        id = r[0].as<int64_t>();
        version = r[1].as<int>();
      } else {
        id = cur[0][0].as<int64_t>();
        version = cur[0][1].as<int>() + 1;
        tx.exec_params("UPDATE schedules SET version=$2, doc_hash=$3, document=$4::jsonb, updated_at=now() "
                       "WHERE id=$1", id, version, hash, text);
        tx.exec_params("UPDATE jobs SET state='discarded', discard_reason='schedule updated', "
                       "finished_at=now() WHERE schedule_id=$1 AND state IN "
                       "('pending_trigger','pending_constraint')", id);
        tx.exec_params("DELETE FROM schedule_triggers WHERE schedule_id=$1", id);
      }
      for (size_t i = 0; i < d.event_keys.size(); ++i) {
        tx.exec_params("INSERT INTO schedule_triggers (schedule_id, leaf, event_key) VALUES ($1,$2,$3)",
                       id, static_cast<int>(i), d.event_keys[i]);
      }
      out.push_back({d.name, version, true});
    }
    tx.exec("NOTIFY trigd_schedules");
    tx.commit();
    return out;
  });
}

}  // namespace trigd

namespace trigd {

namespace {

Result<nlohmann::json> QueryJson(const std::string& pg, const std::string& sql,
                                 const std::vector<std::optional<std::string>>& params) {
  std::unique_ptr<pqxx::connection> conn;
  try {
    conn = std::make_unique<pqxx::connection>(pg);
  } catch (const std::exception& e) {
    return Unavailable(std::string("cannot connect to PostgreSQL: ") + e.what());
  }
  return Guard([&]() -> Result<nlohmann::json> {
    pqxx::read_transaction tx(*conn);
    // Rows come back as one JSON document built by PostgreSQL itself.
    std::string wrapped = "SELECT coalesce(json_agg(q), '[]'::json)::text FROM (" + sql + ") q";
    pqxx::result r;
    switch (params.size()) {
      case 0: r = tx.exec(wrapped); break;
      case 1: r = tx.exec_params(wrapped, params[0]); break;
      default: r = tx.exec_params(wrapped, params[0], params[1]); break;
    }
    return nlohmann::json::parse(r[0][0].as<std::string>());
  });
}

}  // namespace

Result<nlohmann::json> QueryJobs(const std::string& pg, const std::optional<std::string>& state,
                                 const std::optional<std::string>& schedule, size_t limit) {
  return QueryJson(pg,
                   "SELECT id, schedule_name AS schedule, schedule_version AS version, state, priority, "
                   "opened_at, ready_at, next_check_at, finished_at, discard_reason FROM jobs "
                   "WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR schedule_name = $2) "
                   "ORDER BY id DESC LIMIT " + std::to_string(limit),
                   {state, schedule});
}

Result<nlohmann::json> QueryJob(const std::string& pg, int64_t id) {
  return QueryJson(pg,
                   "SELECT j.*, r.run_id FROM jobs j LEFT JOIN runs r ON r.job_id = j.id WHERE j.id = $1::bigint",
                   {std::to_string(id)});
}

Result<nlohmann::json> QueryRuns(const std::string& pg, size_t limit) {
  return QueryJson(pg,
                   "SELECT run_id, job_id, schedule_name AS schedule, program, target, state, attempt, "
                   "launched_at, last_seen_at, finished_at, reason FROM runs ORDER BY launched_at DESC LIMIT " +
                       std::to_string(limit),
                   {});
}

Result<nlohmann::json> QueryRun(const std::string& pg, const std::string& run_id) {
  return QueryJson(pg, "SELECT * FROM runs WHERE run_id = $1", {run_id});
}

}  // namespace trigd

namespace trigd {

Result<nlohmann::json> QuerySchedules(const std::string& pg) {
  return QueryJson(pg,
                   "SELECT s.name, s.version, s.state, s.updated_at, "
                   "(SELECT count(*) FROM jobs j WHERE j.schedule_id = s.id AND j.state IN "
                   "('pending_trigger','pending_constraint')) AS open_jobs FROM schedules s ORDER BY s.name",
                   {});
}

Result<nlohmann::json> QuerySchedule(const std::string& pg, const std::string& name) {
  return QueryJson(pg, "SELECT name, version, state, created_at, updated_at, document FROM schedules WHERE name = $1",
                   {name});
}

Status ChangeSchedule(const std::string& pg, const std::string& name, ScheduleAction action) {
  std::unique_ptr<pqxx::connection> conn;
  try {
    conn = std::make_unique<pqxx::connection>(pg);
  } catch (const std::exception& e) {
    return Unavailable(std::string("cannot connect to PostgreSQL: ") + e.what());
  }
  Result<int> r = Guard([&]() -> Result<int> {
    pqxx::work tx(*conn);
    auto row = tx.exec_params("SELECT id FROM schedules WHERE name = $1 FOR UPDATE", name);
    if (row.empty()) return NotFound("no schedule named " + name);
    int64_t id = row[0][0].as<int64_t>();
    const char* reason = action == ScheduleAction::kDelete ? "schedule deleted"
                         : action == ScheduleAction::kSuspend ? "schedule suspended"
                                                              : "schedule resumed";
    // The job rows are locked here; a checker holding one finishes first or sees 'discarded'.
    tx.exec_params("UPDATE jobs SET state='discarded', discard_reason=$2, finished_at=now(), "
                   "history = history || jsonb_build_array(jsonb_build_object('at', now(), 'what', $2::text)) "
                   "WHERE schedule_id=$1 AND state IN ('pending_trigger','pending_constraint')",
                   id, std::string(reason));
    if (action == ScheduleAction::kDelete) {
      tx.exec_params("DELETE FROM schedules WHERE id=$1", id);
    } else {
      tx.exec_params("UPDATE schedules SET state=$2, updated_at=now() WHERE id=$1", id,
                     std::string(action == ScheduleAction::kSuspend ? "suspended" : "active"));
    }
    tx.exec("NOTIFY trigd_schedules");
    tx.commit();
    return 0;
  });
  return r.status();
}

}  // namespace trigd

namespace trigd {

Result<SweepResult> PgStore::SweepRuns(const std::string& topic_prefix) {
  return Guard([&]() -> Result<SweepResult> {
    pqxx::work tx(conn_->c);
    SweepResult out;
    for (const auto& r : tx.exec(
             "SELECT run_id, attempt, max_attempts, program, request::text, "
             "(SELECT document::text FROM schedules s WHERE s.id = runs.schedule_id) FROM runs "
             "WHERE state IN ('launched', 'running') "
             "AND last_seen_at < now() - make_interval(secs => heartbeat_timeout_ms / 1000.0) "
             "ORDER BY last_seen_at LIMIT 1000 FOR UPDATE SKIP LOCKED")) {
      ++out.lost;
      std::string run_id = r[0].as<std::string>();
      int64_t attempt = r[1].as<int64_t>(), max_attempts = r[2].as<int64_t>();
      if (attempt < max_attempts) {
        nlohmann::json doc = r[5].is_null() ? nlohmann::json::object() : nlohmann::json::parse(r[5].as<std::string>());
        nlohmann::json retry = doc.value("retry", nlohmann::json::object());
        int64_t backoff = DocDurationMs(retry, "backoff", 60000);
        int64_t cap = DocDurationMs(retry, "max_backoff", 3600000);
        // Exponential, capped; the shift is bounded so it cannot overflow.
        int64_t wait = backoff << std::min<int64_t>(attempt - 1, 20);
        if (wait > cap || wait < 0) wait = cap;
        tx.exec_params("UPDATE runs SET state='retry_wait', reason='lost', "
                       "next_attempt_at = now() + make_interval(secs => $2 / 1000.0), "
                       "history = history || jsonb_build_array(jsonb_build_object('at', now(), "
                       "'status', 'lost', 'attempt', attempt)) WHERE run_id=$1",
                       run_id, wait);
      } else {
        ++out.failed;
        tx.exec_params("UPDATE runs SET state='failed', reason='lost', finished_at=now(), "
                       "history = history || jsonb_build_array(jsonb_build_object('at', now(), "
                       "'status', 'failed', 'reason', 'lost')) WHERE run_id=$1", run_id);
        std::string program = r[3].as<std::string>();
        nlohmann::json event = {
            {"id", "lost:" + run_id + ":" + std::to_string(attempt)}, {"type", "program"},
            {"time", FormatTime(SystemClock::Get().Now())},
            {"payload", {{"program", program}, {"run_id", run_id}, {"status", "failed"},
                         {"attempt", attempt}, {"reason", "lost"}}}};
        tx.exec_params("INSERT INTO outbox (topic, key, payload) VALUES ($1, $2, $3)",
                       topic_prefix + "events.program", program, event.dump());
      }
    }
    for (const auto& r : tx.exec(
             "UPDATE runs SET state='launched', attempt = attempt + 1, last_seen_at = now(), "
             "next_attempt_at = NULL, request = jsonb_set(jsonb_set(request, '{attempt}', to_jsonb(attempt + 1)), "
             "'{launched_at}', to_jsonb(to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'))) "
             "WHERE run_id IN (SELECT run_id FROM runs WHERE state='retry_wait' AND next_attempt_at <= now() "
             "LIMIT 1000 FOR UPDATE SKIP LOCKED) RETURNING target, program, request::text")) {
      ++out.retried;
      tx.exec_params("INSERT INTO outbox (topic, key, payload) VALUES ($1, $2, $3)",
                     topic_prefix + "launch." + r[0].as<std::string>(), r[1].as<std::string>(),
                     r[2].as<std::string>());
    }
    tx.commit();
    return out;
  });
}

}  // namespace trigd
