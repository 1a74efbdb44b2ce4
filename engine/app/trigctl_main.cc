// trigctl: the inspection and administration CLI. Exit codes (SPEC §6): 0 ok, 1 refused
// input, 2 cannot reach Kafka or PostgreSQL.
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/config.h"
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <filesystem>
#include <fstream>

#include <random>
#include <set>

#include "common/time.h"
#include "log/kafka.h"
#include "log/topics.h"
#include "store/pg_store.h"

namespace {

int ExitCodeFor(const trigd::Status& s) {
  return s.code() == trigd::StatusCode::kUnavailable ? 2 : 1;
}

int TopicsCreate(const trigd::Config& config, bool json) {
  auto specs = trigd::LoadTopicSpecs(trigd::DefaultTopicsDir(), config.topic_prefix);
  if (!specs.ok()) {
    std::cerr << "trigctl topics create: " << specs.status().message() << "\n";
    return 1;
  }
  auto created = trigd::CreateTopics(config.kafka, *specs);
  if (!created.ok()) {
    std::cerr << "trigctl topics create: " << created.status().message() << "\n";
    return ExitCodeFor(created.status());
  }
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& c : *created) out.push_back({{"topic", c.name}, {"created", c.created}});
    std::cout << out.dump() << "\n";
  } else {
    for (const auto& c : *created)
      std::cout << (c.created ? "created  " : "exists   ") << c.name << "\n";
  }
  return 0;
}

// Collects the leaf triggers' event keys, refusing what the skeleton cannot read.
bool LeafKeys(const nlohmann::json& t, const std::string& name, const std::string& path,
              std::vector<std::string>& keys, std::string& error) {
  if (!t.is_object() || t.size() != 1) {
    error = path + ": expected an object with exactly one trigger kind";
    return false;
  }
  const auto& [kind, body] = *t.items().begin();
  if (kind == "all" || kind == "any") {
    if (!body.is_array() || body.empty()) { error = path + "." + kind + ": expected a non-empty array"; return false; }
    for (size_t i = 0; i < body.size(); ++i)
      if (!LeafKeys(body[i], name, path + "." + kind + "[" + std::to_string(i) + "]", keys, error)) return false;
    return true;
  }
  if (kind == "partition" && body.contains("dataset") && body["dataset"].is_string()) {
    keys.push_back("partition:" + body["dataset"].get<std::string>());
  } else if (kind == "program" && body.contains("name") && body["name"].is_string()) {
    keys.push_back("program:" + body["name"].get<std::string>());
  } else if (kind == "time") {
    keys.push_back("time:" + name);
  } else {
    error = path + "." + kind + ": unknown trigger kind or missing dataset/name";
    return false;
  }
  return true;
}

int SchedulesApply(const trigd::Config& config, const std::string& path, bool json) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(path)) {
    for (const auto& e : std::filesystem::directory_iterator(path))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  std::vector<trigd::ScheduleDoc> docs;
  std::vector<std::string> errors;
  for (const auto& f : files) {
    std::ifstream in(f);
    if (!in) { errors.push_back(f.string() + ": cannot read"); continue; }
    nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
    if (doc.is_discarded()) { errors.push_back(f.string() + ": not valid JSON"); continue; }
    if (!doc.is_array()) doc = nlohmann::json::array({doc});
    for (size_t i = 0; i < doc.size(); ++i) {
      const auto& d = doc[i];
      std::string where = f.string() + ": [" + std::to_string(i) + "]";
      if (!d.is_object() || !d.contains("name") || !d["name"].is_string()) { errors.push_back(where + " name: required"); continue; }
      if (!d.contains("program") || !d["program"].contains("name")) { errors.push_back(where + " program.name: required"); continue; }
      std::string name = d.value("namespace", "default") + "/" + d["name"].get<std::string>();
      std::vector<std::string> keys;
      std::string error;
      if (!d.contains("trigger") || !LeafKeys(d["trigger"], name, "trigger", keys, error)) {
        errors.push_back(where + " " + (error.empty() ? "trigger: required" : error));
        continue;
      }
      docs.push_back({name, d, keys});
    }
  }
  if (!errors.empty()) {
    for (const auto& e : errors) std::cerr << e << "\n";
    std::cerr << "trigctl schedules apply: nothing applied\n";
    return 1;
  }
  auto r = trigd::ApplySchedules(config.pg, docs);
  if (!r.ok()) {
    std::cerr << "trigctl schedules apply: " << r.status().message() << "\n";
    return ExitCodeFor(r.status());
  }
  for (const auto& o : *r) {
    if (json) std::cout << nlohmann::json{{"schedule", o.name}, {"version", o.version}, {"changed", o.changed}}.dump() << "\n";
    else std::cout << (o.changed ? "applied    " : "unchanged  ") << o.name << " v" << o.version << "\n";
  }
  return 0;
}

// Prints rows as an aligned table with the given columns, or as JSON.
void PrintRows(const nlohmann::json& rows, const std::vector<std::string>& columns, bool json) {
  if (json) {
    std::cout << rows.dump() << "\n";
    return;
  }
  auto cell = [](const nlohmann::json& v) {
    if (v.is_null()) return std::string("-");
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  std::vector<size_t> width;
  for (const auto& c : columns) width.push_back(c.size());
  for (const auto& r : rows)
    for (size_t i = 0; i < columns.size(); ++i) width[i] = std::max(width[i], cell(r.value(columns[i], nlohmann::json())).size());
  auto line = [&](auto get) {
    for (size_t i = 0; i < columns.size(); ++i) {
      std::string v = get(i);
      std::cout << v << std::string(width[i] - v.size() + 2, ' ');
    }
    std::cout << "\n";
  };
  line([&](size_t i) { std::string h = columns[i]; for (auto& ch : h) ch = std::toupper(ch); return h; });
  for (const auto& r : rows) line([&](size_t i) { return cell(r.value(columns[i], nlohmann::json())); });
}

int ShowOne(const trigd::Result<nlohmann::json>& r, const std::string& what, bool json) {
  if (!r.ok()) {
    std::cerr << "trigctl: " << r.status().message() << "\n";
    return ExitCodeFor(r.status());
  }
  if (r->empty()) {
    std::cerr << "trigctl: no " << what << "\n";
    return 1;
  }
  if (json) std::cout << (*r)[0].dump() << "\n";
  else std::cout << (*r)[0].dump(2) << "\n";
  return 0;
}

// trigctl events emit partition DATASET PARTITION... [--bytes N]
// trigctl events emit program PROGRAM STATUS [--run-id ID]
int EventsEmit(const trigd::Config& config, const std::vector<std::string>& w) {
  static std::mt19937_64 rng(std::random_device{}());
  char id[40];
  std::snprintf(id, sizeof id, "cli-%016llx", static_cast<unsigned long long>(rng()));
  nlohmann::json e = {{"id", id}, {"type", w[2]}, {"time", trigd::FormatTime(trigd::SystemClock::Get().Now())}};
  std::string topic, key;
  auto flag = [&](const std::string& f) -> std::optional<std::string> {
    for (size_t i = 3; i + 1 < w.size(); ++i) if (w[i] == f) return w[i + 1];
    return std::nullopt;
  };
  std::vector<std::string> pos;
  for (size_t i = 3; i < w.size(); ++i) {
    if (w[i].rfind("--", 0) == 0) { ++i; continue; }
    pos.push_back(w[i]);
  }
  if (w[2] == "partition" && pos.size() >= 2) {
    key = pos[0];
    e["payload"] = {{"dataset", pos[0]}, {"partitions", std::vector<std::string>(pos.begin() + 1, pos.end())}};
    if (auto b = flag("--bytes")) e["payload"]["bytes"] = std::stoll(*b);
    topic = config.topic_prefix + "events.data";
  } else if (w[2] == "program" && pos.size() == 2) {
    const std::set<std::string> statuses = {"started", "heartbeat", "succeeded", "failed", "killed"};
    if (!statuses.count(pos[1])) {
      std::cerr << "trigctl events emit: unknown status \"" << pos[1]
                << "\" (expected one of started, heartbeat, succeeded, failed, killed)\n";
      return 1;
    }
    key = pos[0];
    e["payload"] = {{"program", pos[0]}, {"run_id", flag("--run-id").value_or(std::string(id))},
                    {"status", pos[1]}, {"attempt", 1}};
    topic = config.topic_prefix + "events.program";
  } else {
    std::cerr << "usage: trigctl events emit partition DATASET PARTITION... [--bytes N]\n"
                 "       trigctl events emit program PROGRAM STATUS [--run-id ID]\n";
    return 1;
  }
  auto producer = trigd::Producer::Create(config.kafka);
  if (!producer.ok()) { std::cerr << "trigctl: " << producer.status().message() << "\n"; return 2; }
  auto ok = (*producer)->ProduceAndWait({{topic, key, e.dump()}}, 10000);
  if (!ok[0]) { std::cerr << "trigctl: cannot reach Kafka at " << config.kafka << "\n"; return 2; }
  std::cout << e.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  trigd::Config config = trigd::LoadConfig(args);
  bool json = false;
  std::vector<std::string> words;
  for (const auto& a : args) {
    if (a == "--json") json = true; else words.push_back(a);
  }
  if (words.size() == 2 && words[0] == "topics" && words[1] == "create") {
    return TopicsCreate(config, json);
  }
  auto option = [&](const std::string& flag) -> std::optional<std::string> {
    for (size_t i = 0; i + 1 < words.size(); ++i)
      if (words[i] == flag) return words[i + 1];
    return std::nullopt;
  };
  if (words.size() >= 2 && words[0] == "jobs" && words[1] == "list") {
    auto r = trigd::QueryJobs(config.pg, option("--state"), option("--schedule"), 100);
    if (!r.ok()) { std::cerr << "trigctl: " << r.status().message() << "\n"; return ExitCodeFor(r.status()); }
    PrintRows(*r, {"id", "schedule", "version", "state", "priority", "opened_at", "finished_at", "discard_reason"}, json);
    return 0;
  }
  if (words.size() == 3 && words[0] == "jobs" && words[1] == "show") {
    char* end = nullptr;
    long long id = std::strtoll(words[2].c_str(), &end, 10);
    if (!end || *end) { std::cerr << "trigctl: job id must be a number, got \"" << words[2] << "\"\n"; return 1; }
    return ShowOne(trigd::QueryJob(config.pg, id), "job " + words[2], json);
  }
  if (words.size() == 2 && words[0] == "runs" && words[1] == "list") {
    auto r = trigd::QueryRuns(config.pg, 100);
    if (!r.ok()) { std::cerr << "trigctl: " << r.status().message() << "\n"; return ExitCodeFor(r.status()); }
    PrintRows(*r, {"run_id", "job_id", "schedule", "program", "state", "attempt", "launched_at"}, json);
    return 0;
  }
  if (words.size() == 3 && words[0] == "runs" && words[1] == "show") {
    return ShowOne(trigd::QueryRun(config.pg, words[2]), "run " + words[2], json);
  }
  if (words.size() == 2 && words[0] == "schedules" && words[1] == "list") {
    auto r = trigd::QuerySchedules(config.pg);
    if (!r.ok()) { std::cerr << "trigctl: " << r.status().message() << "\n"; return ExitCodeFor(r.status()); }
    PrintRows(*r, {"name", "version", "state", "open_jobs", "updated_at"}, json);
    return 0;
  }
  if (words.size() == 3 && words[0] == "schedules" && words[1] == "show") {
    return ShowOne(trigd::QuerySchedule(config.pg, words[2]), "schedule " + words[2], json);
  }
  if (words.size() == 3 && words[0] == "schedules" &&
      (words[1] == "delete" || words[1] == "suspend" || words[1] == "resume")) {
    auto action = words[1] == "delete" ? trigd::ScheduleAction::kDelete
                  : words[1] == "suspend" ? trigd::ScheduleAction::kSuspend
                                          : trigd::ScheduleAction::kResume;
    trigd::Status st = trigd::ChangeSchedule(config.pg, words[2], action);
    if (!st.ok()) { std::cerr << "trigctl: " << st.message() << "\n"; return ExitCodeFor(st); }
    const char* done = action == trigd::ScheduleAction::kDelete ? "deleted "
                       : action == trigd::ScheduleAction::kSuspend ? "suspended "
                                                                   : "resumed ";
    std::cout << done << words[2] << "\n";
    return 0;
  }
  if (words.size() >= 3 && words[0] == "events" && words[1] == "emit") {
    return EventsEmit(config, words);
  }
  if (words.size() == 4 && words[0] == "schedules" && words[1] == "apply" && words[2] == "-f") {
    return SchedulesApply(config, words[3], json);
  }
  std::cerr << "usage: trigctl topics create | schedules apply -f FILE|DIR | schedules list|show|delete|suspend|resume NAME | events emit partition|program ... | jobs list [--state S] [--schedule NAME] | jobs show ID | runs list | runs show ID [--json] [--kafka HOST:PORT] [--topic-prefix P]\n"
               "  (this build has these verbs only; see README 'Status')\n";
  return 1;
}
