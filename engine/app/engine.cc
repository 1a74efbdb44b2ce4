#include "app/engine.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "log/kafka.h"
#include "metrics/metrics.h"
#include "store/migrator.h"
#include "store/pg_store.h"

namespace trigd {

namespace {

using Json = nlohmann::json;
using Index = std::unordered_map<std::string, std::vector<ScheduleRow>>;

// The skeleton's envelope check: what it cannot read goes to the dead-letter topic with the
// reason, never stops the loop.
std::optional<std::string> CheckEnvelope(const Json& e) {
  if (!e.is_object()) return "not_object: event is not a JSON object";
  for (const char* f : {"id", "type"}) {
    if (!e.contains(f) || !e[f].is_string()) return std::string("missing_field: ") + f;
  }
  if (!e.contains("payload") || !e["payload"].is_object()) return "missing_field: payload";
  const std::string type = e["type"];
  const Json& p = e["payload"];
  if (type == "partition") {
    if (!p.contains("dataset") || !p["dataset"].is_string()) return "missing_field: payload.dataset";
  } else if (type == "program") {
    for (const char* f : {"program", "status"})
      if (!p.contains(f) || !p[f].is_string()) return std::string("missing_field: payload.") + f;
  } else if (type != "tick") {
    return "unknown_type: " + type;
  }
  return std::nullopt;
}

// Skeleton matching: a single-leaf partition trigger fires on its first partition event; a
// single-leaf program trigger fires on an event with one of its statuses.
bool Fires(const Json& trigger, const std::string& type, const Json& payload) {
  if (type == "partition" && trigger.contains("partition")) return true;
  if (type == "program" && trigger.contains("program")) {
    Json statuses = trigger["program"].value("status", Json::array({"succeeded"}));
    for (const auto& s : statuses)
      if (s == payload["status"]) return true;
  }
  return false;
}

std::string EventKey(const std::string& type, const Json& payload) {
  if (type == "partition") return "partition:" + payload.value("dataset", "");
  if (type == "program") return "program:" + payload.value("program", "");
  return "time:" + payload.value("schedule", "");
}

}  // namespace

Status RunEngine(const Config& config, const std::atomic<bool>& stop) {
  if (Status s = ApplyMigrations(config.pg, DefaultSchemaDir(), nullptr); !s.ok()) return s;
  auto store = PgStore::Connect(config.pg);
  if (!store.ok()) return store.status();
  auto relay_store = PgStore::Connect(config.pg);
  if (!relay_store.ok()) return relay_store.status();
  auto producer = Producer::Create(config.kafka);
  if (!producer.ok()) return producer.status();

  Metrics metrics;
  if (Status s = metrics.Serve(config.metrics); !s.ok()) return s;
  PgStore* pg = store->get();
  auto consumer = Consumer::Create(
      config.kafka, config.group,
      {config.topic_prefix + "events.data", config.topic_prefix + "events.program",
       config.topic_prefix + "events.time"},
      [&](const std::vector<std::pair<std::string, int>>& parts) {
        auto r = pg->LoadOffsets(config.group, parts);
        return r.ok() ? *r : std::vector<std::optional<int64_t>>(parts.size());
      });
  if (!consumer.ok()) return consumer.status();

  Index index;
  // Receipt times of batches whose launches are not yet confirmed, for the latency histogram.
  std::vector<std::pair<std::chrono::steady_clock::time_point, int>> pending_launch;
  auto last_load = std::chrono::steady_clock::time_point{};
  auto last_sweep = std::chrono::steady_clock::time_point{};
  while (!stop.load()) {
    if (std::chrono::steady_clock::now() - last_load > std::chrono::seconds(1)) {
      if (auto r = pg->LoadScheduleIndex(); r.ok()) index = std::move(*r);
      last_load = std::chrono::steady_clock::now();
    }
    std::vector<Message> batch = (*consumer)->Poll(5000, 100, 5);
    if (!batch.empty()) {
      const auto received = std::chrono::steady_clock::now();
      std::vector<MatchedEvent> matched;
      std::vector<std::string> no_match;
      std::vector<RunReport> reports;
      std::vector<std::pair<std::string, std::string>> dead;
      std::map<std::pair<std::string, int>, ConsumedPosition> positions;
      for (const Message& m : batch) {
        auto& pos = positions[{m.topic, m.partition}];
        if (pos.topic.empty()) pos = {m.topic, m.partition, m.offset, m.offset + 1};
        pos.next_offset = m.offset + 1;
        Json e = Json::parse(m.value, nullptr, false);
        std::optional<std::string> problem =
            e.is_discarded() ? std::optional<std::string>("bad_json: not valid JSON") : CheckEnvelope(e);
        if (problem) {
          metrics.DeadLetter(problem->substr(0, problem->find(':'))).Increment();
          dead.emplace_back(m.key, Json{{"reason", *problem}, {"topic", m.topic},
                                        {"partition", m.partition}, {"offset", m.offset},
                                        {"original", m.value}}.dump());
          continue;
        }
        const std::string type = e["type"];
        if (type == "program" && e["payload"].contains("run_id") && e["payload"]["run_id"].is_string()) {
          reports.push_back({e["payload"]["run_id"], e["payload"]["status"]});
        }
        auto it = index.find(EventKey(type, e["payload"]));
        if (it == index.end()) {
          no_match.push_back(type);
          continue;
        }
        MatchedEvent me{e["id"], type, e["payload"], {}};
        for (const ScheduleRow& s : it->second)
          if (Fires(s.document["trigger"], type, e["payload"])) me.schedules.push_back(&s);
        if (me.schedules.empty()) no_match.push_back(type);
        else matched.push_back(std::move(me));
      }
      std::vector<ConsumedPosition> pos;
      for (auto& [k, v] : positions) pos.push_back(v);
      auto r = pg->ApplyBatch(config.group, config.topic_prefix, matched, dead, pos, reports);
      if (!r.ok()) {
        std::cerr << "trigd: batch not applied (" << r.status().ToString() << "); re-reading\n";
        if (r.status().code() == StatusCode::kUnavailable) {
          std::this_thread::sleep_for(std::chrono::seconds(1));
          if (auto again = PgStore::Connect(config.pg); again.ok()) *store = std::move(*again);
          pg = store->get();
        }
        (*consumer)->Rewind();
        continue;
      }
      (*consumer)->CommitKafka(batch);
      for (const auto& t : no_match) metrics.Event(t, "no_match").Increment();
      for (const auto& rep : reports) {
        if (rep.status == "succeeded" || rep.status == "failed" || rep.status == "killed")
          metrics.RunOutcome(rep.status).Increment();
      }
      for (size_t i = 0; i < matched.size(); ++i) {
        metrics.Event(matched[i].type, r->duplicate[i] ? "duplicate" : "applied").Increment();
      }
      metrics.JobTransition("opened").Increment(r->jobs_launched);
      metrics.JobTransition("ready").Increment(r->jobs_launched);
      pending_launch.emplace_back(received, r->jobs_launched);
    }
    if (std::chrono::steady_clock::now() - last_sweep > std::chrono::seconds(1)) {
      last_sweep = std::chrono::steady_clock::now();
      if (auto sw = (*relay_store)->SweepRuns(config.topic_prefix); sw.ok()) {
        metrics.RunOutcome("lost").Increment(sw->lost);
        metrics.RunOutcome("retried").Increment(sw->retried);
        metrics.RunOutcome("failed").Increment(sw->failed);
      } else {
        std::cerr << "trigd: run sweep: " << sw.status().ToString() << "\n";
      }
    }
    // Relay: publish what the committed transactions decided.
    auto rows = (*relay_store)->ClaimOutbox(1000);
    if (rows.ok() && !rows->empty()) {
      std::vector<OutMessage> out;
      for (const auto& row : *rows) out.push_back({row.topic, row.key, row.payload});
      std::vector<bool> ok = (*producer)->ProduceAndWait(out, 10000);
      std::vector<int64_t> confirmed, jobs;
      for (size_t i = 0; i < rows->size(); ++i) {
        if (!ok[i]) continue;
        confirmed.push_back((*rows)[i].id);
        if ((*rows)[i].job_id) jobs.push_back(*(*rows)[i].job_id);
      }
      if (Status s = (*relay_store)->CompleteOutbox(confirmed, jobs); !s.ok()) {
        std::cerr << "trigd: relay: " << s.ToString() << "\n";
      } else {
        metrics.JobTransition("launched").Increment(jobs.size());
        size_t left = jobs.size();
        auto now = std::chrono::steady_clock::now();
        while (left > 0 && !pending_launch.empty()) {
          auto& [at, n] = pending_launch.front();
          int take = static_cast<int>(std::min<size_t>(left, n));
          for (int k = 0; k < take; ++k)
            metrics.EventToLaunch().Observe(std::chrono::duration<double>(now - at).count());
          n -= take;
          left -= take;
          if (n == 0) pending_launch.erase(pending_launch.begin());
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace trigd
