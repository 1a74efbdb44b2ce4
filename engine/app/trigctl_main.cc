// trigctl: the inspection and administration CLI (SPEC §6). Human tables by default, --json
// for scripts. Exit codes: 0 ok, 1 refused input, 2 cannot reach Kafka or PostgreSQL.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/config.h"
#include "app/why.h"
#include "common/log.h"
#include "common/time.h"
#include "core/envelope.h"
#include "core/envelope_time.h"
#include "core/schedule_parser.h"
#include "log/kafka.h"
#include "log/topics.h"
#include "store/admin.h"
#include "store/retention.h"

namespace {

using nlohmann::json;

constexpr const char* kUsage =
    "usage: trigctl [--json] [--kafka H:P] [--pg CONNSTR] [--topic-prefix P] [--group G] COMMAND\n"
    "  topics create\n"
    "  schedules apply -f FILE|DIR|- [-f ...]   (- reads standard input)\n"
    "  schedules list [--limit N] | show NAME | delete NAME | suspend NAME | resume NAME\n"
    "  jobs list [--state S] [--schedule NAME] [--limit N] | show ID | why ID\n"
    "  runs list [--schedule NAME] [--limit N] | show RUN_ID\n"
    "  events emit partition DATASET PARTITION... [--bytes N]\n"
    "  events emit program PROGRAM STATUS [--run-id ID] [--attempt N]\n"
    "  events emit tick SCHEDULE [--fire-time T]   (a run now, or of fire time T: a backfill)\n"
    "  lag\n"
    "  history prune --older-than DURATION [--dry-run]   (finished jobs and runs; at least 1d)\n"
    "exit codes: 0 ok, 1 refused input, 2 cannot reach Kafka or PostgreSQL\n";

int ExitCodeFor(const trigd::Status& s) { return s.code() == trigd::StatusCode::kUnavailable ? 2 : 1; }

// Errors of a command name it, noun and verb ("trigctl schedules show: ..."), whatever the step
// that failed; Usage is for a command line that names no command trigctl knows.
int Fail(const trigd::Status& s, const std::string& command) {
  std::cerr << "trigctl " << command << ": " << s.message() << "\n";
  return ExitCodeFor(s);
}

// Input the command refuses (a bad value, an unknown name): exit 1.
int Refuse(const std::string& command, const std::string& problem) {
  return Fail(trigd::Invalid(problem), command);
}

// A list's --schedule names no schedule that exists or existed: refused as `schedules show`
// refuses it (an empty table read as "no jobs yet" and hid the typo), with the form of a name
// when it lacks its namespace.
int FailList(const trigd::Status& s, const std::string& command, const std::optional<std::string>& schedule) {
  if (s.code() != trigd::StatusCode::kNotFound || !schedule || schedule->find('/') != std::string::npos) {
    return Fail(s, command);
  }
  return Refuse(command, s.message() + " (names are namespace/name, e.g. default/" + *schedule + ")");
}

// A command line trigctl cannot take: the problem and where the commands are listed (the whole
// usage, 13 lines, buried the one line that mattered); the usage itself when no command is given.
int Usage(const std::string& problem) {
  if (problem.empty()) {
    std::cerr << kUsage;
  } else {
    std::cerr << "trigctl: " << problem << "\n(trigctl --help lists the commands)\n";
  }
  return 1;
}

// Positional words and --flag values of a command line.
struct Args {
  std::vector<std::string> words;
  std::vector<std::pair<std::string, std::string>> flags;
  std::optional<std::string> Flag(const std::string& name) const {
    for (const auto& [k, v] : flags) if (k == name) return v;
    return std::nullopt;
  }
  // Every value of a flag that may be given more than once (-f).
  std::vector<std::string> Flags(const std::string& name) const {
    std::vector<std::string> out;
    for (const auto& [k, v] : flags) if (k == name) out.push_back(v);
    return out;
  }
};

// Timestamps as trigd writes them (UTC, milliseconds, "Z"), wherever PostgreSQL rendered one in
// a row or a history entry ("2026-11-25T14:28:09.13483+00:00": microseconds, trailing zeros
// dropped, so columns changed width, and `jobs why` and `runs show` disagreed with the lists).
// Only the row's own columns and its history entries' fields: a schedule document, its args and
// the events' payloads are the users' and are shown as they wrote them.
void NormalizeTime(json& v) {
  static const std::regex kPgTime(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}:\d{2})");
  if (!v.is_string() || !std::regex_match(v.get_ref<const std::string&>(), kPgTime)) return;
  if (auto t = trigd::ParseEnvelopeTime(v.get_ref<const std::string&>())) v = trigd::FormatTime(*t);
}

void NormalizeRowTimes(json& row) {
  if (!row.is_object()) return;
  for (auto& [key, value] : row.items()) {
    NormalizeTime(value);
    if (key == "history" && value.is_array()) {
      for (auto& entry : value) {
        if (entry.is_object()) for (auto& field : entry) NormalizeTime(field);
      }
    }
  }
}

std::string Cell(const json& v) {
  if (v.is_null()) return "-";
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// Prints rows as an aligned table with the given columns, or as JSON.
void PrintRows(json rows, const std::vector<std::string>& columns, bool as_json) {
  for (auto& row : rows) NormalizeRowTimes(row);
  if (as_json) {
    std::cout << rows.dump() << "\n";
    return;
  }
  std::vector<size_t> width;
  for (const auto& c : columns) width.push_back(c.size());
  for (const auto& r : rows)
    for (size_t i = 0; i < columns.size(); ++i) width[i] = std::max(width[i], Cell(r.value(columns[i], json())).size());
  auto line = [&](auto get) {
    std::string out;
    for (size_t i = 0; i < columns.size(); ++i) {
      std::string v = get(i);
      out += v + (i + 1 < columns.size() ? std::string(width[i] - v.size() + 2, ' ') : "");
    }
    std::cout << out << "\n";
  };
  line([&](size_t i) { std::string h = columns[i]; for (auto& ch : h) ch = static_cast<char>(std::toupper(ch)); return h; });
  for (const auto& r : rows) line([&](size_t i) { return Cell(r.value(columns[i], json())); });
}

int ShowOne(const trigd::Result<json>& r, const std::string& command, const std::string& what, bool as_json) {
  if (!r.ok()) return Fail(r.status(), command);
  if (r->empty()) return Refuse(command, "no " + what);
  json row = (*r)[0];
  NormalizeRowTimes(row);
  if (as_json) {
    std::cout << row.dump() << "\n";
    return 0;
  }
  // For people: one field a line; a document or a list too long for one line follows its name,
  // indented.
  size_t width = 0;
  for (const auto& [key, value] : row.items()) width = std::max(width, key.size());
  for (const auto& [key, value] : row.items()) {
    std::string text = Cell(value);
    std::cout << key << ":";
    if (!(value.is_structured() && text.size() > 80)) std::cout << std::string(width - key.size() + 1, ' ');
    if (value.is_structured() && text.size() > 80) {
      std::string block = value.dump(2);
      std::string indented = "\n  ";
      for (char c : block) indented += c == '\n' ? std::string("\n  ") : std::string(1, c);
      std::cout << indented << "\n";
    } else {
      std::cout << text << "\n";
    }
  }
  return 0;
}

int TopicsCreate(const trigd::Config& config, bool as_json) {
  auto specs = trigd::LoadTopicSpecs(trigd::DefaultTopicsDir(), config.topic_prefix);
  if (!specs.ok()) return Fail(specs.status(), "topics create");
  auto created = trigd::CreateTopics(config.kafka, *specs);
  if (!created.ok()) return Fail(created.status(), "topics create");
  if (as_json) {
    json out = json::array();
    for (const auto& c : *created) out.push_back({{"topic", c.name}, {"created", c.created}});
    std::cout << out.dump() << "\n";
  } else {
    for (const auto& c : *created) std::cout << (c.created ? "created  " : "exists   ") << c.name << "\n";
  }
  return 0;
}

// `schedules apply` lists the unchanged schedules up to this many.
constexpr size_t kUnchangedListed = 20;

// Every document of the files and folders (-f, once or more, as kubectl apply; "-" is standard
// input) is validated first; any problem refuses them all, and they are applied in one
// transaction. A file named twice (directly or through a folder) is read once.
int SchedulesApply(const trigd::Config& config, const std::vector<std::string>& paths, bool as_json) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& path : paths) {
    if (path == "-") {
      files.push_back(path);
    } else if (std::filesystem::is_directory(path, ec)) {
      std::vector<std::filesystem::path> in_folder;
      for (const auto& e : std::filesystem::recursive_directory_iterator(path, ec))
        if (e.is_regular_file() && e.path().extension() == ".json") in_folder.push_back(e.path());
      std::sort(in_folder.begin(), in_folder.end());
      if (in_folder.empty()) return Refuse("schedules apply", "no .json schedule documents in " + path);
      files.insert(files.end(), in_folder.begin(), in_folder.end());
    } else if (std::filesystem::exists(path, ec)) {
      files.push_back(path);
    } else {
      return Refuse("schedules apply", path + ": no such file or folder");
    }
  }
  {
    // `-f a.json -f a.json` reported its schedules as defined twice, in a.json and in a.json.
    std::set<std::filesystem::path> read;
    std::erase_if(files, [&](const std::filesystem::path& f) {
      return !read.insert(f == "-" ? f : std::filesystem::weakly_canonical(f, ec)).second;
    });
  }
  std::vector<trigd::Schedule> schedules;
  std::vector<std::string> errors;
  std::map<std::string, std::string> seen;  // schedule name -> the file that defines it first
  for (const auto& f : files) {
    std::stringstream text;
    if (f == "-") {
      text << std::cin.rdbuf();
    } else {
      std::ifstream in(f);
      text << in.rdbuf();
      if (!in) {
        errors.push_back(f.string() + ": cannot read");
        continue;
      }
    }
    auto parsed_file = trigd::ParseScheduleFile(text.str());
    // An empty array applied nothing and said nothing, where an empty folder is refused.
    if (parsed_file.empty()) errors.push_back(f.string() + ": no schedule documents (an empty array)");
    for (auto& parsed : parsed_file) {
      for (const auto& e : parsed.errors) errors.push_back(f.string() + ": " + e.ToString());
      if (!parsed.ok()) continue;
      std::string name = parsed.schedule.id().value();
      if (auto [first, fresh] = seen.emplace(name, f.string()); !fresh) {
        errors.push_back(f.string() + ": name: schedule " + name + " is also defined in " + first->second);
        continue;
      }
      schedules.push_back(std::move(parsed.schedule));
    }
  }
  if (!errors.empty()) {
    for (const auto& e : errors) std::cerr << e << "\n";
    std::cerr << "trigctl schedules apply: " << errors.size() << " problem(s); nothing applied\n";
    return 1;
  }
  auto r = trigd::ApplySchedules(config.pg, schedules);
  if (!r.ok()) return Fail(r.status(), "schedules apply");
  if (as_json) {
    // Every schedule, changed or not: for scripts.
    json out = json::array();
    for (const auto& o : *r) out.push_back({{"schedule", o.name}, {"version", o.version}, {"changed", o.changed}});
    std::cout << out.dump() << "\n";
    return 0;
  }
  // For people: every change, the unchanged ones only when they are few (a folder of 20,000
  // printed 20,000 lines of "unchanged" around the one change), then a count. The summary says
  // "changed", not "applied": `grep -c applied` counts the applied schedules.
  const size_t changed = std::count_if(r->begin(), r->end(), [](const trigd::ApplyOutcome& o) { return o.changed; });
  const size_t unchanged = r->size() - changed;
  const bool list_unchanged = unchanged <= kUnchangedListed;
  for (const auto& o : *r) {
    if (o.changed || list_unchanged) std::cout << (o.changed ? "applied    " : "unchanged  ") << o.name << " v" << o.version << "\n";
  }
  if (r->size() > 1) {
    std::cout << r->size() << " schedules: " << changed << " changed, " << unchanged << " unchanged"
              << (list_unchanged ? "" : " (not listed; --json lists every schedule)") << "\n";
  }
  return 0;
}

// A decimal integer; nothing for anything else, one past long long's range included (strtoll
// would give its limit).
std::optional<long long> ParseId(const std::string& s) {
  char* end = nullptr;
  errno = 0;
  long long id = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || !end || *end || errno == ERANGE) return std::nullopt;
  return id;
}

// --limit N (default `otherwise`: 100, or no limit for schedules list); nothing if N is not a
// positive integer (refused, not replaced).
std::optional<size_t> Limit(const Args& a, size_t otherwise = 100) {
  auto l = a.Flag("--limit");
  if (!l) return otherwise;
  auto n = ParseId(*l);
  if (!n || *n <= 0) return std::nullopt;
  return static_cast<size_t>(*n);
}

constexpr const char* kJobStates[] = {"pending_trigger", "pending_constraint", "launched", "discarded"};

int EventsEmit(const trigd::Config& config, const Args& a, bool as_json) {
  static std::mt19937_64 rng(std::random_device{}());
  char id[40];
  std::snprintf(id, sizeof id, "cli-%016llx", static_cast<unsigned long long>(rng()));
  const std::vector<std::string>& w = a.words;
  json e = {{"id", id}, {"type", w[2]}, {"time", trigd::FormatTime(trigd::SystemClock::Get().Now())}};
  std::string topic, key;
  if (w[2] == "partition" && w.size() >= 5) {
    key = w[3];
    e["payload"] = {{"dataset", w[3]}, {"partitions", std::vector<std::string>(w.begin() + 4, w.end())}};
    if (auto b = a.Flag("--bytes")) {
      auto n = ParseId(*b);
      if (!n || *n < 0) return Refuse("events emit", "--bytes must be a non-negative integer, got \"" + *b + "\"");
      e["payload"]["bytes"] = *n;
    }
    topic = config.topic_prefix + "events.data";
  } else if (w[2] == "program" && w.size() == 5) {
    key = w[3];
    auto attempt = ParseId(a.Flag("--attempt").value_or("1"));
    if (!attempt || *attempt < 1) return Refuse("events emit", "--attempt must be a positive integer");
    e["payload"] = {{"program", w[3]}, {"run_id", a.Flag("--run-id").value_or(std::string(id))},
                    {"status", w[4]}, {"attempt", *attempt}};
    topic = config.topic_prefix + "events.program";
  } else if (w[2] == "tick" && w.size() == 4) {
    // A run of the schedule now, or of a given fire time (a backfill). A fire time has one
    // identity (SPEC §5): one trigd already produced, or a second tick for one, changes nothing.
    key = w[3];
    std::string fire_time = a.Flag("--fire-time").value_or(e["time"].get<std::string>());
    // As trigd reads an envelope's times: any RFC 3339 fraction (Python writes microseconds).
    auto parsed = trigd::ParseEnvelopeTime(fire_time);
    if (!parsed) {
      return Refuse("events emit", "--fire-time: invalid time \"" + fire_time +
                                       "\": expected RFC 3339, e.g. 2026-11-22T10:00:00Z");
    }
    // trigd would count a tick that reaches no time trigger `no_match` and do nothing: say so
    // here instead of "emitted" (Airflow's `dags trigger` refuses an unknown DAG too).
    auto found = trigd::QuerySchedule(config.pg, w[3]);
    if (!found.ok()) return Fail(found.status(), "events emit");
    std::string refused;
    if (found->empty()) {
      refused = "no schedule " + w[3];
    } else if ((*found)[0].value("state", "") != "active") {
      refused = "schedule " + w[3] + " is " + (*found)[0].value("state", "") + ": trigd ignores its events (resume it first)";
    } else {
      trigd::ParsedSchedule s = trigd::ParseSchedule((*found)[0]["document"]);
      auto leaves = s.ok() ? trigd::TriggerLeaves(s.schedule.trigger) : std::vector<const trigd::Trigger*>{};
      if (std::none_of(leaves.begin(), leaves.end(), [](const trigd::Trigger* t) { return t->kind == trigd::TriggerKind::kTime; })) {
        refused = "schedule " + w[3] + " has no time trigger: a tick reaches nothing";
      }
    }
    if (!refused.empty()) return Refuse("events emit", refused);
    e["payload"] = {{"schedule", w[3]}, {"fire_time", trigd::FormatTime(*parsed)}};
    topic = config.topic_prefix + "events.time";
  } else {
    return Usage(w[2] == "partition" ? "events emit partition needs DATASET PARTITION... (one partition at least)"
                 : w[2] == "program" ? "events emit program needs PROGRAM STATUS (started, heartbeat, succeeded, failed or killed)"
                 : w[2] == "tick"    ? "events emit tick needs SCHEDULE (namespace/name)"
                                     : "events emit: unknown event type \"" + w[2] + "\" (partition, program or tick)");
  }
  // The same validation trigd applies: refuse here what trigd would dead-letter (the reason's
  // dead-letter code, "bad_field: ", is for the dead-letter topic, not for a person).
  trigd::DeadLetterReason reason{};
  if (auto parsed = trigd::ParseEnvelope(e.dump(), trigd::kMaxEventBytes, &reason); !parsed.ok()) {
    std::string why = parsed.status().message();
    const std::string code = std::string(trigd::DeadLetterReasonName(reason)) + ": ";
    if (why.rfind(code, 0) == 0) why.erase(0, code.size());
    return Refuse("events emit", why);
  }
  // The topic is looked up first: produced to a topic that does not exist (a wrong
  // --topic-prefix, or topics not created), a message waited 10 s for a delivery report that
  // never came and read as Kafka unreachable.
  auto missing = trigd::MissingTopics(config.kafka, {topic});
  if (!missing.ok()) return Fail(missing.status(), "events emit");
  if (!missing->empty()) return Refuse("events emit", trigd::NoSuchTopics(*missing, config.kafka));
  auto producer = trigd::Producer::Create(config.kafka);
  if (!producer.ok()) return Fail(producer.status(), "events emit");
  auto ok = (*producer)->ProduceAndWait({{topic, key, e.dump()}}, 10000);
  if (!ok[0]) {
    // The delivery report's reason (a topic deleted since the check above reads as unknown).
    std::cerr << "trigctl events emit: not delivered to " << topic << " at " << config.kafka << ": "
              << (*producer)->LastError() << "\n";
    return 2;
  }
  std::cout << (as_json ? e.dump() : "emitted " + std::string(id) + " on " + topic + ": " + e.dump()) << "\n";
  return 0;
}

// Per event-topic partition: the position trigd committed in PostgreSQL, the end of the
// partition in Kafka, and the difference.
int Lag(const trigd::Config& config, bool as_json) {
  std::vector<std::string> topics;
  for (const char* t : {"events.data", "events.program", "events.time"}) topics.push_back(config.topic_prefix + t);
  // A missing topic has no partitions: without this, a wrong --topic-prefix printed an empty
  // table and "total lag: 0".
  auto missing = trigd::MissingTopics(config.kafka, topics);
  if (!missing.ok()) return Fail(missing.status(), "lag");
  if (missing->size() == topics.size()) return Refuse("lag", trigd::NoSuchTopics(*missing, config.kafka));
  if (!missing->empty()) std::cerr << "trigctl lag: " << trigd::NoSuchTopics(*missing, config.kafka) << "\n";
  auto ends = trigd::QueryEndOffsets(config.kafka, topics);
  if (!ends.ok()) return Fail(ends.status(), "lag");
  auto stored = trigd::QueryOffsets(config.pg);
  if (!stored.ok()) return Fail(stored.status(), "lag");
  json rows = json::array();
  int64_t total = 0;
  for (const auto& e : *ends) {
    int64_t committed = 0;
    for (const auto& s : *stored) {
      if (s.value("group", "") == config.group && s.value("topic", "") == e.topic && s.value("partition", -1) == e.partition)
        committed = s.value("next_offset", int64_t{0});
    }
    int64_t lag = std::max<int64_t>(0, e.end_offset - committed);
    total += lag;
    rows.push_back({{"group", config.group}, {"topic", e.topic}, {"partition", e.partition},
                    {"committed", committed}, {"end", e.end_offset}, {"lag", lag}});
  }
  PrintRows(rows, {"group", "topic", "partition", "committed", "end", "lag"}, as_json);
  if (!as_json) std::cout << "total lag: " << total << "\n";
  // A mistyped --group read as a backlog of every message ever produced (the audit of
  // 2026-11-25): said, with the groups that have positions.
  bool known = false;
  std::set<std::string> groups;
  for (const auto& s : *stored) {
    known = known || s.value("group", "") == config.group;
    groups.insert(s.value("group", ""));
  }
  if (!known) {
    std::string others;
    for (const auto& g : groups) others += (others.empty() ? "" : ", ") + g;
    std::cerr << "trigctl lag: group " << config.group << " has no positions in PostgreSQL (no trigd has consumed in it yet"
              << (others.empty() ? "" : "; check --group: groups with positions: " + others) << ")\n";
  }
  return 0;
}

// Deletes finished jobs and runs older than --older-than (store/retention.h), as trigd does
// every hour with TRIGD_RETENTION; --dry-run counts them.
int HistoryPrune(const trigd::Config& config, const Args& a, bool as_json) {
  auto older = a.Flag("--older-than");
  if (!older) return Refuse("history prune", "needs --older-than DURATION (e.g. 90d)");
  // 0 (keep everything, as TRIGD_RETENTION=0) is refused as too short, not as a bad unit.
  auto keep = *older == "0" ? trigd::Result<trigd::Millis>(trigd::Millis{0}) : trigd::ParseDuration(*older);
  if (!keep.ok()) return Refuse("history prune", "--older-than: " + keep.status().message());
  const bool dry_run = a.Flag("--dry-run").has_value();
  trigd::TimePoint cutoff{}, runs_cutoff{};
  auto r = trigd::PruneHistory(config.pg, *keep, dry_run, &cutoff, &runs_cutoff);
  if (!r.ok()) return Fail(r.status(), "history prune");
  if (as_json) {
    std::cout << json{{"dry_run", dry_run}, {"jobs", r->jobs}, {"runs", r->runs}, {"finished_before", trigd::FormatTime(cutoff)},
                      {"runs_launched_before", trigd::FormatTime(runs_cutoff)}}.dump()
              << "\n";
    return 0;
  }
  std::cout << (dry_run ? "would delete " : "deleted ") << r->jobs << " jobs and " << r->runs
            << " runs that finished before " << trigd::FormatTime(cutoff) << "\n";
  if (runs_cutoff < cutoff) {
    std::cout << "kept: runs launched after " << trigd::FormatTime(runs_cutoff)
              << " (a schedule's max_runs_per period counts them)\n";
  }
  return 0;
}

int Run(const trigd::Config& config, const Args& a, bool as_json) {
  const auto& w = a.words;
  auto is = [&](std::initializer_list<const char*> prefix) {
    if (w.size() < prefix.size()) return false;
    size_t i = 0;
    for (const char* p : prefix) if (w[i++] != p) return false;
    return true;
  };
  // A flag the command does not take is refused, not ignored.
  auto takes = [&](std::initializer_list<const char*> allowed) -> std::optional<int> {
    for (const auto& [name, value] : a.flags) {
      if (std::none_of(allowed.begin(), allowed.end(), [&](const char* f) { return name == f; })) {
        std::string command;
        for (const auto& x : w) command += (command.empty() ? "" : " ") + x;
        return Usage(command + " does not take " + name);
      }
    }
    return std::nullopt;
  };
  if (w.empty()) return Usage("");
  if (is({"topics", "create"}) && w.size() == 2) {
    if (auto bad = takes({})) return *bad;
    return TopicsCreate(config, as_json);
  }
  if (is({"schedules", "apply"})) {
    if (auto bad = takes({"-f"})) return *bad;
    auto paths = a.Flags("-f");
    if (paths.empty()) return Usage("schedules apply needs -f FILE|DIR");
    // `-f a.json b.json` applied a.json alone and said nothing of b.json.
    if (w.size() > 2) return Usage("schedules apply: unexpected " + w[2] + " (each file or folder takes its own -f: -f a.json -f b.json)");
    return SchedulesApply(config, paths, as_json);
  }
  if (is({"schedules", "list"}) && w.size() == 2) {
    if (auto bad = takes({"--limit"})) return *bad;
    auto limit = Limit(a, SIZE_MAX);
    if (!limit) return Refuse(w[0] + " list", "--limit must be a positive integer, got \"" + *a.Flag("--limit") + "\"");
    auto r = trigd::QuerySchedules(config.pg, *limit == SIZE_MAX ? std::nullopt : std::optional<size_t>(*limit));
    if (!r.ok()) return Fail(r.status(), "schedules list");
    PrintRows(*r, {"name", "version", "state", "open_jobs", "active_runs", "next_fire_at", "updated_at"}, as_json);
    return 0;
  }
  if (is({"schedules", "show"}) && w.size() == 3) {
    if (auto bad = takes({})) return *bad;
    return ShowOne(trigd::QuerySchedule(config.pg, w[2]), "schedules show", "schedule " + w[2], as_json);
  }
  if ((is({"schedules", "delete"}) || is({"schedules", "suspend"}) || is({"schedules", "resume"})) && w.size() == 3) {
    auto action = w[1] == "delete" ? trigd::ScheduleAction::kDelete
                  : w[1] == "suspend" ? trigd::ScheduleAction::kSuspend : trigd::ScheduleAction::kResume;
    if (auto bad = takes({})) return *bad;
    bool changed = false;
    trigd::Status st = trigd::ChangeSchedule(config.pg, config.topic_prefix, w[2], action, &changed);
    if (!st.ok()) return Fail(st, "schedules " + w[1]);
    std::string done = !changed                       ? (w[1] == "suspend" ? "already suspended" : "already active")
                       : w[1] == "delete"             ? "deleted"
                       : w[1] == "suspend"            ? "suspended"
                                                      : "resumed";
    std::cout << (as_json ? json{{"schedule", w[2]}, {"done", done}}.dump() : done + " " + w[2]) << "\n";
    return 0;
  }
  if (is({"jobs", "list"}) && w.size() == 2) {
    if (auto bad = takes({"--state", "--schedule", "--limit"})) return *bad;
    auto limit = Limit(a);
    if (!limit) return Refuse(w[0] + " list", "--limit must be a positive integer, got \"" + *a.Flag("--limit") + "\"");
    auto state = a.Flag("--state");
    if (state && std::none_of(std::begin(kJobStates), std::end(kJobStates), [&](const char* s) { return *state == s; })) {
      return Refuse("jobs list", "unknown job state \"" + *state + "\" (one of pending_trigger, pending_constraint, launched, discarded)");
    }
    auto r = trigd::QueryJobs(config.pg, state, a.Flag("--schedule"), *limit);
    if (!r.ok()) return FailList(r.status(), "jobs list", a.Flag("--schedule"));
    PrintRows(*r, {"id", "schedule", "version", "state", "priority", "opened_at", "next_check_at", "run_id", "discard_reason"}, as_json);
    return 0;
  }
  if ((is({"jobs", "show"}) || is({"jobs", "why"})) && w.size() == 3) {
    if (auto bad = takes({})) return *bad;
    auto id = ParseId(w[2]);
    if (!id) return Refuse("jobs " + w[1], "job id must be a number, got \"" + w[2] + "\"");
    if (w[1] == "show") return ShowOne(trigd::QueryJob(config.pg, *id), "jobs show", "job " + w[2], as_json);
    auto in = trigd::InspectJob(config.pg, *id);
    if (!in.ok()) return Fail(in.status(), "jobs why");
    json e = trigd::ExplainJob(*in);
    std::cout << (as_json ? e.dump() + "\n" : trigd::FormatExplanation(e));
    return 0;
  }
  if (is({"runs", "list"}) && w.size() == 2) {
    if (auto bad = takes({"--schedule", "--limit"})) return *bad;
    auto limit = Limit(a);
    if (!limit) return Refuse(w[0] + " list", "--limit must be a positive integer, got \"" + *a.Flag("--limit") + "\"");
    auto r = trigd::QueryRuns(config.pg, a.Flag("--schedule"), *limit);
    if (!r.ok()) return FailList(r.status(), "runs list", a.Flag("--schedule"));
    PrintRows(*r, {"run_id", "job_id", "schedule", "program", "state", "attempt", "launched_at", "finished_at"}, as_json);
    return 0;
  }
  if (is({"runs", "show"}) && w.size() == 3) {
    if (auto bad = takes({})) return *bad;
    return ShowOne(trigd::QueryRun(config.pg, w[2]), "runs show", "run " + w[2], as_json);
  }
  if (is({"events", "emit"}) && w.size() >= 3) {
    // Each kind its own flags: a tick's typo (--bytes) used to be ignored and force a run.
    std::optional<int> bad = w[2] == "partition" ? takes({"--bytes"})
                             : w[2] == "program" ? takes({"--run-id", "--attempt"})
                             : w[2] == "tick"    ? takes({"--fire-time"})
                                                 : takes({});
    if (bad) return *bad;
    return EventsEmit(config, a, as_json);
  }
  if (is({"history", "prune"}) && w.size() == 2) {
    if (auto bad = takes({"--older-than", "--dry-run"})) return *bad;
    return HistoryPrune(config, a, as_json);
  }
  if (is({"lag"}) && w.size() == 1) {
    if (auto bad = takes({})) return *bad;
    return Lag(config, as_json);
  }
  // A known command with the wrong number of words says what it expects ("unknown command:
  // jobs why" misled).
  static const std::map<std::string, std::string> kExpects = {
      {"jobs show", "one job ID"},         {"jobs why", "one job ID"},           {"runs show", "one run ID"},
      {"schedules show", "one NAME"},      {"schedules delete", "one NAME"},     {"schedules suspend", "one NAME"},
      {"schedules resume", "one NAME"},    {"schedules apply", "-f FILE|DIR"},   {"jobs list", "no argument"},
      {"runs list", "no argument"},        {"schedules list", "no argument"},    {"topics create", "no argument"},
      {"history prune", "--older-than DURATION"},
      {"events emit", "partition DATASET PARTITION..., program PROGRAM STATUS or tick SCHEDULE"}};
  if (w.size() >= 2) {
    if (auto it = kExpects.find(w[0] + " " + w[1]); it != kExpects.end()) {
      return Usage(it->first + " expects " + it->second);
    }
  }
  // A noun alone says its verbs ("unknown command: schedules" did not).
  static const std::map<std::string, std::string> kVerbs = {
      {"schedules", "apply, list, show, delete, suspend or resume"}, {"jobs", "list, show or why"},
      {"runs", "list or show"}, {"events", "emit"}, {"topics", "create"}, {"history", "prune"}};
  if (w.size() == 1) {
    if (auto it = kVerbs.find(w[0]); it != kVerbs.end()) return Usage(w[0] + " needs a verb: " + it->second);
  }
  return Usage("unknown command: " + [&] { std::string s; for (const auto& x : w) s += (s.empty() ? "" : " ") + x; return s; }());
}

}  // namespace

int main(int argc, char** argv) {
  trigd::SetLogLines(false);  // trigctl's output is its tables and its errors
  std::vector<std::string> raw(argv + 1, argv + argc);
  // The engine's own flags, which LoadConfig reads for every binary, mean nothing here: refused,
  // not ignored.
  for (const std::string f : {"--metrics", "--instance-id"}) {
    for (const auto& r : raw) {
      if (r == f || r.rfind(f + "=", 0) == 0) return Usage(f + " is a flag of trigd, not of trigctl");
    }
  }
  std::string refused;
  trigd::Config config = trigd::LoadConfig(raw, &refused);
  bool as_json = false;
  Args a;
  std::string unknown;  // the first flag trigctl does not know
  static const std::set<std::string> kValueFlags = {"-f", "--state", "--schedule", "--limit", "--bytes", "--run-id", "--attempt", "--fire-time", "--older-than"};
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == "--help" || raw[i] == "-h" || (a.words.empty() && raw[i] == "help")) {
      std::cout << kUsage;  // asked for: on stdout, exit 0
      return 0;
    }
    const size_t eq = raw[i].find('=');
    if (raw[i].rfind("--", 0) == 0 && eq != std::string::npos && kValueFlags.count(raw[i].substr(0, eq))) {
      a.flags.emplace_back(raw[i].substr(0, eq), raw[i].substr(eq + 1));  // --flag=value, as the config flags
    } else if (raw[i] == "--json") {
      as_json = true;
    } else if (raw[i] == "--dry-run") {
      a.flags.emplace_back(raw[i], "");  // a switch: only the command that takes it accepts it
    } else if (kValueFlags.count(raw[i])) {
      if (i + 1 >= raw.size() || !trigd::IsFlagValue(raw[i + 1])) return Usage(raw[i] + " needs a value");
      a.flags.emplace_back(raw[i], raw[i + 1]);
      ++i;
    } else if (raw[i].rfind("--", 0) == 0 && raw[i].size() > 2) {
      if (unknown.empty()) unknown = raw[i];
    } else {
      a.words.push_back(raw[i]);
    }
  }
  // After the loop: --help wins, and an unknown flag is named with the command it was given to.
  if (!refused.empty()) return Usage(refused);
  if (!unknown.empty()) {
    std::string command;
    for (const auto& x : a.words) command += (command.empty() ? "" : " ") + x;
    return Usage((command.empty() ? "" : command + ": ") + "unknown flag " + unknown);
  }
  // A flag given twice used to take the first value and drop the second in silence (-f may be
  // given once per file or folder).
  for (size_t i = 0; i < a.flags.size(); ++i) {
    for (size_t j = i + 1; j < a.flags.size(); ++j) {
      if (a.flags[i].first == a.flags[j].first && a.flags[i].first != "-f") {
        return Usage(a.flags[i].first + " given more than once");
      }
    }
  }
  return Run(config, a, as_json);
}
