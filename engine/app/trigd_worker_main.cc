// trigd-worker: the reference worker (SPEC §8). Consumes <prefix>launch.<target> in the
// consumer group <group>-worker-<target> ("trigd-worker-default" by default; --group-id
// overrides it), so several workers share a target. For each launch request it runs
// program.args.command with /bin/sh (TRIGD_RUN_ID, TRIGD_ATTEMPT and TRIGD_SCHEDULE set, and
// TRIGD_LINEAGE, TRIGD_FIRE_TIME, TRIGD_FIRE_DATE, TRIGD_PARTITIONS, TRIGD_DATASETS, TRIGD_KEYS:
// the values of the args placeholders, SPEC §11),
// reports started, heartbeats every heartbeat_timeout/3 (at least 500 ms) while the command
// runs, then succeeded (exit 0), failed (other exit) or killed (signal) on
// <prefix>events.program. Without a command a run succeeds at once.
//
// Up to --concurrency N (default 1) commands run at once as child processes, each in its own
// process group; the loop reaps them, heartbeats and consumes the next request only while a
// slot is free, so a request never waits inside a busy worker (another worker of the group,
// or this one when a slot frees, takes it). A request's offset is committed once its run has
// started (or the request was skipped): trigd, not the worker, owns retries of runs whose
// worker died (heartbeat timeout). Commits go once a second (kCommitEveryMs), before a
// partition is revoked and on exit. A request delivered twice (same run id and attempt)
// while it runs, or shortly after, is ignored. SIGTERM or SIGINT: the children's process
// groups get SIGTERM (SIGKILL after a grace period), each run still going is reported
// `killed`, and the worker exits.
//
// A request is not started, and nothing is reported for it, when it is past its start deadline
// (`start_by`: trigd counts the attempt lost by then) or when trigd ended its attempt or a later
// one of its run (lost, failed as lost, killed by a schedule delete): the worker reads the
// control topic <prefix>control whole, outside any group, to its end before it takes its first
// request and then as it goes (worker_control.h, docs/adr/0060). One line says why; the
// request is committed past. A control message that cancels an attempt this worker is running
// (trigctl runs cancel, an overlap policy, a run_timeout) stops it: SIGTERM to the command's
// process group, SIGKILL 10 s later if it is still there (worker_control.h).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.h"
#include "app/config.h"
#include "app/worker_control.h"
#include "common/json_reader.h"
#include "common/log.h"
#include "common/time.h"
#include "common/topic_names.h"
#include "core/arg_template.h"
#include "core/schedule_parser.h"
#include "log/kafka.h"

extern char** environ;

namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

constexpr auto kMinHeartbeat = std::chrono::milliseconds(500);
constexpr auto kDefaultHeartbeatTimeout = std::chrono::minutes(5);
constexpr auto kKillGrace = std::chrono::seconds(5);
constexpr int kReportTimeoutMs = 10000;
constexpr size_t kRememberFinished = 1000;
// Requests taken are committed to the group once a second, by librdkafka
// (ConsumerOptions::commit_stored_every_ms): while the group is stable, a revoked partition's
// just before it goes, all of them on exit. A commit per request (about 1,000 a second under
// a backlog) would queue on the group coordinator's connection, which the broker serves one
// request at a time, ahead of the heartbeats: under a large backlog the worker would lose its
// partitions a session timeout after every assignment and then hold none for a minute or so,
// while the broker sees a stable group (trigd's ingest commits to Kafka once a second for the
// same reason). librdkafka, not a timer of the worker's: a commit sent while the group
// rebalances is refused (ILLEGAL_GENERATION) and librdkafka then drops the whole assignment as
// lost, uncommitted, so a second worker joining mid-backlog would make the first re-run
// thousands of requests. The cost: a worker killed with -9 leaves up to a second of the
// requests it took to the next owner, which runs them again (at least once, in a wider
// window) (docs/adr/0032-worker-commits-through-librdkafka.md).
constexpr int kCommitEveryMs = 1000;

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

void Log(const std::string& what) { trigd::LogLine(what); }

std::string EventId() {
  static std::mt19937_64 rng(std::random_device{}());
  char buf[40];
  std::snprintf(buf, sizeof buf, "w-%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

// One launch request taken from the topic, valid enough to run.
struct Request {
  std::string run_id;
  std::string program;
  std::string schedule;
  int64_t attempt = 1;
  std::string lineage;                 // echoed in reports (SPEC §10); empty when the request has none
  std::optional<std::string> command;  // nullopt: no command, succeeds at once
  // Why the request cannot be run although it names its run (reported failed at once); empty:
  // it can.
  std::string unrunnable;
  std::chrono::milliseconds heartbeat_every{};
  std::optional<trigd::TimePoint> start_by;  // nullopt: the request has no start deadline
  // TRIGD_<NAME>=value for each args placeholder (core/arg_template.h) but run_id, attempt and
  // schedule, which have their own variables.
  std::vector<std::string> placeholder_env;
  std::string Key() const { return run_id + "#" + std::to_string(attempt); }
  std::string Name() const { return "run " + run_id + " attempt " + std::to_string(attempt) + " (" + program + ")"; }
};

// The request's start deadline (`start_by`), if it has one; a value that is not a time makes it
// unrunnable.
void ParseStartBy(const json& req, Request& r) {
  auto it = req.find("start_by");
  if (it == req.end()) return;
  trigd::Result<trigd::TimePoint> t = it->is_string() ? trigd::ParseTime(it->get<std::string>())
                                                      : trigd::Result<trigd::TimePoint>(trigd::Invalid("not a string"));
  if (t.ok()) {
    r.start_by = *t;
  } else if (r.unrunnable.empty()) {
    r.unrunnable = "start_by: " + t.status().message();
  }
}

// The values args placeholders rendered to, as TRIGD_* variables: the request's `placeholders`
// when trigd rendered some (a templated schedule), else derived from its triggered_by
// (fire_date then in UTC, the time leaf's zone being unknown here).
void PlaceholderEnv(const json& req, Request& r) {
  json values = json::object();
  if (auto it = req.find("placeholders"); it != req.end() && it->is_object()) {
    values = *it;
  } else {
    trigd::Schedule schedule;
    const size_t slash = r.schedule.find('/');
    schedule.namespace_name = slash == std::string::npos ? "" : r.schedule.substr(0, slash);
    schedule.name = slash == std::string::npos ? r.schedule : r.schedule.substr(slash + 1);
    const trigd::TemplateValues v =
        trigd::JobTemplateValues(schedule, r.run_id, req.value("triggered_by", json::array()));
    for (std::string_view name : trigd::kArgPlaceholders) values[std::string(name)] = v.Get(name);
  }
  for (std::string_view name : trigd::kArgPlaceholders) {
    if (name == "run_id" || name == "attempt" || name == "schedule") continue;
    std::string var = "TRIGD_";
    for (char c : name) var += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    auto it = values.find(std::string(name));
    r.placeholder_env.push_back(var + "=" + (it != values.end() && it->is_string() ? it->get<std::string>() : ""));
  }
}

// Validates a launch request; an error message when it names no run to report on (anything else
// that keeps it from running is Request::unrunnable).
std::variant<Request, std::string> ParseRequest(const std::string& value) {
  // Launch requests fit Kafka's message limit (1 MiB): anything larger or deeper is no request.
  trigd::Result<json> read = trigd::ReadJson(value);
  if (!read.ok()) return read.status().message();
  json req = std::move(read).value();
  if (!req.is_object()) return std::string("not a JSON object");
  if (!req.contains("run_id") || !req["run_id"].is_string() || req["run_id"].get<std::string>().empty()) {
    return std::string("no run_id");
  }
  if (!req.contains("program") || !req["program"].is_object() || !req["program"].contains("name") ||
      !req["program"]["name"].is_string()) {
    return std::string("no program.name");
  }
  Request r;
  r.run_id = req["run_id"].get<std::string>();
  r.program = req["program"]["name"].get<std::string>();
  if (req.contains("schedule") && req["schedule"].is_string()) r.schedule = req["schedule"].get<std::string>();
  if (req.contains("attempt") && req["attempt"].is_number_integer()) r.attempt = req["attempt"].get<int64_t>();
  if (req.contains("lineage") && req["lineage"].is_string()) r.lineage = req["lineage"].get<std::string>();
  const json& args = req["program"].value("args", json::object());
  if (args.is_object() && args.contains("command")) {
    if (!args["command"].is_string()) {
      r.unrunnable = "program.args.command is not a string";
    } else if (!args["command"].get<std::string>().empty()) {
      r.command = args["command"].get<std::string>();
    }
  }
  std::chrono::milliseconds timeout = kDefaultHeartbeatTimeout;
  if (req.contains("heartbeat_timeout") && req["heartbeat_timeout"].is_string()) {
    if (auto t = trigd::ParseDuration(req["heartbeat_timeout"].get<std::string>()); t.ok()) timeout = *t;
  }
  // Three heartbeats per timeout, so one lost message does not make the run look lost.
  r.heartbeat_every = std::max<std::chrono::milliseconds>(kMinHeartbeat, timeout / 3);
  ParseStartBy(req, r);
  PlaceholderEnv(req, r);
  return r;
}

// This worker's id in reports (SPEC §10 `worker`): host name and process id.
const std::string& WorkerId() {
  static const std::string id = [] {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
    return std::string(host) + ":" + std::to_string(getpid());
  }();
  return id;
}

trigd::OutMessage Report(const std::string& topic, const Request& r, const std::string& status) {
  json payload = {
      {"program", r.program}, {"run_id", r.run_id}, {"status", status}, {"attempt", r.attempt}, {"worker", WorkerId()}};
  if (!r.lineage.empty()) payload["lineage"] = r.lineage;
  json e = {{"id", EventId()},
            {"type", "program"},
            {"time", trigd::FormatTime(trigd::SystemClock::Get().Now())},
            {"payload", std::move(payload)}};
  return {topic, r.program, e.dump()};
}

// Starts `command` under /bin/sh in its own process group. The environment is built before
// fork: the child of a multi-threaded process (librdkafka's threads) may only exec.
pid_t Spawn(const Request& r) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string_view v(*e);
    if (v.starts_with("TRIGD_RUN_ID=") || v.starts_with("TRIGD_ATTEMPT=") || v.starts_with("TRIGD_SCHEDULE=") ||
        v.starts_with("TRIGD_LINEAGE="))
      continue;
    const std::string_view name = v.substr(0, v.find('=') + 1);
    if (std::any_of(r.placeholder_env.begin(), r.placeholder_env.end(),
                    [&](const std::string& p) { return p.starts_with(name); })) {
      continue;
    }
    env_strings.emplace_back(v);
  }
  // TRIGD_LINEAGE is the request's own lineage field, set below.
  for (const std::string& p : r.placeholder_env) {
    if (!p.starts_with("TRIGD_LINEAGE=")) env_strings.push_back(p);
  }
  env_strings.push_back("TRIGD_RUN_ID=" + r.run_id);
  env_strings.push_back("TRIGD_ATTEMPT=" + std::to_string(r.attempt));
  env_strings.push_back("TRIGD_SCHEDULE=" + r.schedule);
  env_strings.push_back("TRIGD_LINEAGE=" + r.lineage);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  const char* argv[] = {"sh", "-c", r.command->c_str(), nullptr};
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    execve("/bin/sh", const_cast<char* const*>(argv), envp.data());
    _exit(127);
  }
  if (pid > 0) setpgid(pid, pid);  // also here: no race with an early kill of the group
  return pid;
}

struct Running {
  Request request;
  SteadyClock::time_point next_heartbeat;
  // Set once trigd cancelled the attempt: when its process group gets SIGKILL.
  std::optional<SteadyClock::time_point> kill_at;
};

class Worker {
 public:
  Worker(trigd::Producer& producer, std::string events_topic, size_t concurrency)
      : producer_(producer), events_topic_(std::move(events_topic)), concurrency_(concurrency) {}

  bool HasFreeSlot() const { return running_.size() < concurrency_; }
  bool Idle() const { return running_.empty(); }

  void Take(const trigd::Message& m) {
    auto parsed = ParseRequest(m.value);
    if (auto* error = std::get_if<std::string>(&parsed)) {
      Log("skipping launch request at " + m.topic + "/" + std::to_string(m.partition) + "@" + std::to_string(m.offset) +
          ": " + *error);
      return;
    }
    Request& r = std::get<Request>(parsed);
    if (active_.count(r.Key()) || finished_set_.count(r.Key())) {
      Log("run " + r.run_id + " attempt " + std::to_string(r.attempt) + " delivered again: ignored");
      return;
    }
    if (std::optional<std::string> why = WhyNotStart(r)) {
      Log(r.Name() + ": not started: " + *why);
      return;
    }
    if (!r.unrunnable.empty()) {
      // Reported failed at once, so its retry policy and downstream schedules see it now
      // (skipped, the run would wait 10 minutes to fail as lost).
      Log("run " + r.run_id + " attempt " + std::to_string(r.attempt) + " (" + r.program +
          "): cannot run: " + r.unrunnable + "; reported failed");
      Send({Report(events_topic_, r, "failed")});
      Remember(r.Key());
      return;
    }
    Send({Report(events_topic_, r, "started")});
    if (!r.command) {
      Log("run " + r.run_id + " attempt " + std::to_string(r.attempt) + " (" + r.program + "): no command, succeeded");
      Send({Report(events_topic_, r, "succeeded")});
      Remember(r.Key());
      return;
    }
    pid_t pid = Spawn(r);
    if (pid < 0) {
      Log("run " + r.run_id + ": fork failed: " + std::strerror(errno));
      Send({Report(events_topic_, r, "failed")});
      Remember(r.Key());
      return;
    }
    Log("run " + r.run_id + " attempt " + std::to_string(r.attempt) + " (" + r.program + ") started: pid " +
        std::to_string(pid));
    active_.insert(r.Key());
    auto next = SteadyClock::now() + r.heartbeat_every;
    running_.emplace(pid, Running{std::move(r), next});
  }

  // A message of the control topic: the attempt it names, and earlier ones of its run, are
  // not started from now on.
  void Control(const trigd::Message& m) {
    auto parsed = trigd::ParseControlMessage(m.value);
    if (auto* error = std::get_if<std::string>(&parsed)) {
      Log("skipping control message at " + m.topic + "/" + std::to_string(m.partition) + "@" +
          std::to_string(m.offset) + ": " + *error);
      return;
    }
    const auto& message = std::get<trigd::ControlMessage>(parsed);
    ended_.Add(message, trigd::SystemClock::Get().Now());
    if (!trigd::StopsRunningAttempt(message)) return;
    for (auto& [pid, run] : running_) {
      if (run.request.run_id != message.run_id || run.request.attempt > message.attempt || run.kill_at) continue;
      Log(run.request.Name() + ": " + message.status + " by trigd (" + message.reason + "): SIGTERM to process group " +
          std::to_string(pid));
      kill(-pid, SIGTERM);
      run.kill_at = SteadyClock::now() + trigd::kCancelGrace;
    }
  }

  // Forgets the ended attempts whose requests their own deadlines refuse by now.
  void ForgetEnded() { ended_.Forget(trigd::SystemClock::Get().Now()); }

  // Reports the children that ended and the heartbeats that are due.
  void Tend() {
    for (auto it = running_.begin(); it != running_.end();) {
      int wstatus = 0;
      pid_t done = waitpid(it->first, &wstatus, WNOHANG);
      if (done == 0) {
        ++it;
        continue;
      }
      std::string status = "failed";
      if (done > 0 && WIFSIGNALED(wstatus))
        status = "killed";
      else if (done > 0 && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
        status = "succeeded";
      Finish(it->second.request, status,
             done > 0 && WIFEXITED(wstatus) ? "exit " + std::to_string(WEXITSTATUS(wstatus))
             : done > 0                     ? "signal " + std::to_string(WTERMSIG(wstatus))
                                            : "lost child");
      it = running_.erase(it);
    }
    std::vector<trigd::OutMessage> beats;
    auto now = SteadyClock::now();
    for (auto& [pid, run] : running_) {
      if (run.kill_at && now >= *run.kill_at) {
        Log(run.request.Name() + ": still there " + std::to_string(trigd::kCancelGrace.count() / 1000) +
            " s after SIGTERM: SIGKILL to process group " + std::to_string(pid));
        kill(-pid, SIGKILL);
        run.kill_at = now + trigd::kCancelGrace;  // again later, should the group outlive it
      }
      if (run.kill_at) continue;  // no heartbeats for an attempt trigd ended
      if (now < run.next_heartbeat) continue;
      beats.push_back(Report(events_topic_, run.request, "heartbeat"));
      run.next_heartbeat = now + run.request.heartbeat_every;
    }
    if (!beats.empty()) Send(beats);
  }

  // SIGTERM: ends every child (SIGKILL after the grace period) and reports each run killed.
  void KillAll() {
    for (const auto& [pid, run] : running_) kill(-pid, SIGTERM);
    auto deadline = SteadyClock::now() + kKillGrace;
    while (SteadyClock::now() < deadline) {
      bool any = false;
      for (const auto& [pid, run] : running_) {
        if (kill(pid, 0) == 0) {
          int wstatus;
          if (waitpid(pid, &wstatus, WNOHANG) == 0) any = true;
        }
      }
      if (!any) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (const auto& [pid, run] : running_) {
      kill(-pid, SIGKILL);
      waitpid(pid, nullptr, WNOHANG);
      Finish(run.request, "killed", "worker stopping");
    }
    running_.clear();
  }

 private:
  void Finish(const Request& r, const std::string& status, const std::string& how) {
    Send({Report(events_topic_, r, status)});
    Log("run " + r.run_id + " attempt " + std::to_string(r.attempt) + " (" + r.program + ") " + status + " (" + how +
        ")");
    active_.erase(r.Key());
    Remember(r.Key());
  }

  // Why `r` must not start (nothing is reported for it), or nullopt when it may.
  std::optional<std::string> WhyNotStart(const Request& r) const {
    if (auto why = ended_.WhyEnded(r.run_id, r.attempt)) return why;
    return trigd::PastStartDeadline(r.start_by, trigd::SystemClock::Get().Now());
  }

  void Remember(const std::string& key) {
    if (finished_set_.insert(key).second) finished_.push_back(key);
    while (finished_.size() > kRememberFinished) {
      finished_set_.erase(finished_.front());
      finished_.pop_front();
    }
  }

  void Send(const std::vector<trigd::OutMessage>& messages) {
    std::vector<bool> ok = producer_.ProduceAndWait(messages, kReportTimeoutMs);
    size_t failed = static_cast<size_t>(std::count(ok.begin(), ok.end(), false));
    if (failed > 0) Log(std::to_string(failed) + " report(s) not confirmed by Kafka");
  }

  trigd::Producer& producer_;
  const std::string events_topic_;
  const size_t concurrency_;
  std::map<pid_t, Running> running_;
  std::set<std::string> active_;      // run id + attempt of the running children
  std::deque<std::string> finished_;  // recently finished, oldest first
  std::set<std::string> finished_set_;
  trigd::EndedAttempts ended_;  // attempts trigd ended (the control topic)
};

// Takes what the control topic holds now; true when it gave anything.
bool DrainControl(trigd::TopicReader& control, Worker& worker, int wait_ms) {
  bool any = false;
  for (;;) {
    std::vector<trigd::Message> batch = control.Poll(1000, any ? 0 : wait_ms);
    if (batch.empty()) return any;
    for (const trigd::Message& m : batch) worker.Control(m);
    any = true;
  }
}

// The control topic, read to its end once: before it takes its first request, a worker knows
// every attempt trigd ended. nullptr when the topic does not exist (said why) or on SIGTERM;
// an unreachable broker is waited for, saying so.
std::unique_ptr<trigd::TopicReader> OpenControl(const trigd::Config& config, Worker& worker) {
  const std::string topic = trigd::TopicNames(config.topic_prefix).control;
  auto said = SteadyClock::time_point{};
  std::unique_ptr<trigd::TopicReader> reader;
  while (!g_stop && !reader) {
    auto r = trigd::TopicReader::Create(config.kafka, topic);
    if (r.ok()) {
      reader = std::move(*r);
    } else if (r.status().code() != trigd::StatusCode::kUnavailable) {
      Log(r.status().message());
      return nullptr;
    } else {
      if (SteadyClock::now() - said >= std::chrono::seconds(30)) {
        Log(r.status().message() + " (opening " + topic + "); retrying");
        said = SteadyClock::now();
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
  while (!g_stop && reader && !reader->CaughtUp()) DrainControl(*reader, worker, 200);
  if (g_stop) return nullptr;
  Log("read " + topic + " to its end");
  return reader;
}

}  // namespace

int main(int argc, char** argv) {
  trigd::Config config;
  CLI::App app(
      "trigd-worker: the reference worker. Runs each launch request's program.args.command "
      "with /bin/sh and reports it on the program topic.");
  trigd::SetUpApp(app, "trigd-worker");
  std::string target = "default";
  std::optional<std::string> group_id;
  std::string concurrency_text = "1";
  trigd::FlagValue(
      app.add_option("--target", target, "the program target whose launch topic it consumes")->capture_default_str());
  trigd::FlagValue(
      app.add_option("--concurrency", concurrency_text, "commands run at once, 1 to 10000")->capture_default_str());
  trigd::FlagValue(app.add_option("--group-id", group_id, "consumer group (default: GROUP-worker-TARGET)"));
  // The engine's set, as the worker has always taken it: --metrics and --instance-id are accepted
  // and unused (the worker serves no metrics and consumes with dynamic membership).
  trigd::AddConfigFlags(app, config, trigd::ConfigFlags::kEngine);
  if (auto rc = trigd::ParseCommandLine(app, argc, argv)) return *rc;
  if (auto extra = app.remaining(true); !extra.empty())
    return trigd::RefuseCommandLine(app, "unknown argument " + extra.front());
  trigd::ReadEnvironmentSettings(config);
  if (trigd::Status s = trigd::FinishConfig(config); !s.ok()) return trigd::RefuseSetting(app, s.message());
  const std::string group = group_id.value_or(config.group + "-worker-" + target);
  size_t concurrency = 1;
  {
    char* end = nullptr;
    long n = std::strtol(concurrency_text.c_str(), &end, 10);
    if (concurrency_text.empty() || *end != '\0' || n < 1 || n > 10000) {
      return trigd::RefuseCommandLine(app, "--concurrency: expected 1..10000, got " + concurrency_text);
    }
    concurrency = static_cast<size_t>(n);
  }
  if (target.empty()) return trigd::RefuseCommandLine(app, "--target must not be empty");
  if (trigd::Status t = trigd::CheckTarget(target); !t.ok())
    return trigd::RefuseCommandLine(app, "--target: " + t.message());

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  auto producer = trigd::Producer::Create(config.kafka);
  if (!producer.ok()) {
    Log(producer.status().ToString());
    return 2;
  }
  const trigd::TopicNames topics(config.topic_prefix);
  Worker worker(**producer, topics.events_program, concurrency);
  std::unique_ptr<trigd::TopicReader> control = OpenControl(config, worker);
  if (!control) return g_stop ? 0 : 2;
  const std::string launch_topic = topics.Launch(target);
  trigd::ConsumerOptions options;
  options.commit_stored_every_ms = kCommitEveryMs;
  auto consumer = trigd::Consumer::Create(
      config.kafka, group, {launch_topic},
      [](const std::vector<std::pair<std::string, int>>& parts) {
        // Workers keep their positions in Kafka: a restarted worker resumes after the last
        // request a worker of its group took (up to a second before it after a kill -9).
        return std::vector<std::optional<int64_t>>(parts.size(), trigd::kCommittedOffset);
      },
      options);
  if (!consumer.ok()) {
    Log(consumer.status().ToString());
    return 2;
  }
  Log("consuming " + launch_topic + " in group " + group + ", up to " + std::to_string(concurrency) +
      " run(s) at once");

  auto next_forget = SteadyClock::now();
  while (!g_stop) {
    worker.Tend();
    DrainControl(*control, worker, 0);
    if (SteadyClock::now() >= next_forget) {
      worker.ForgetEnded();
      next_forget = SteadyClock::now() + std::chrono::minutes(1);
    }
    if (!worker.HasFreeSlot()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    // A short wait keeps reaping and heartbeats timely while runs go on.
    for (const trigd::Message& m : (*consumer)->Poll(1, worker.Idle() ? 200 : 50, 0)) {
      DrainControl(*control, worker, 0);  // what trigd ended while the poll waited
      worker.Take(m);
      (*consumer)->StoreOffset(m);  // taken on (started, skipped or a duplicate): committed soon
    }
  }
  worker.KillAll();  // the consumer's close, after, commits what was taken
  Log("stopped");
  return 0;
}
