// trigd-worker: the reference worker (SPEC §8). Consumes trigd.launch.<target>, runs
// program.args.command with /bin/sh, heartbeats while it runs, and reports started, then
// succeeded (exit 0), failed (other exit) or killed (signal) on trigd.events.program.
// The request's offset is committed when the run starts: trigd, not the worker, owns retries
// of runs whose worker died (heartbeat timeout).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/config.h"
#include "common/time.h"
#include "log/kafka.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

std::string EventId() {
  static std::mt19937_64 rng(std::random_device{}());
  char buf[40];
  std::snprintf(buf, sizeof buf, "w-%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

std::string ProgramEvent(const nlohmann::json& req, const std::string& status) {
  nlohmann::json e = {
      {"id", EventId()}, {"type", "program"},
      {"time", trigd::FormatTime(trigd::SystemClock::Get().Now())},
      {"payload", {{"program", req["program"]["name"]}, {"run_id", req["run_id"]},
                   {"status", status}, {"attempt", req.value("attempt", 1)}}}};
  return e.dump();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  trigd::Config config = trigd::LoadConfig(args);
  std::string target = "default";
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--target") target = args[i + 1];
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);

  auto producer = trigd::Producer::Create(config.kafka);
  if (!producer.ok()) { std::cerr << "trigd-worker: " << producer.status().ToString() << "\n"; return 2; }
  auto consumer = trigd::Consumer::Create(
      config.kafka, config.group + "-worker-" + target, {config.topic_prefix + "launch." + target},
      [](const std::vector<std::pair<std::string, int>>& parts) {
        // Workers keep their positions in Kafka: nullopt asks for the group's committed offset
        // or the beginning.
        return std::vector<std::optional<int64_t>>(parts.size());
      });
  if (!consumer.ok()) { std::cerr << "trigd-worker: " << consumer.status().ToString() << "\n"; return 2; }
  const std::string events_topic = config.topic_prefix + "events.program";
  std::cerr << "trigd-worker: consuming " << config.topic_prefix << "launch." << target << "\n";

  while (!g_stop) {
    for (const auto& m : (*consumer)->Poll(1, 200, 0)) {
      (*consumer)->CommitKafka({m});
      nlohmann::json req = nlohmann::json::parse(m.value, nullptr, false);
      if (req.is_discarded() || !req.contains("run_id") || !req.contains("program")) {
        std::cerr << "trigd-worker: skipping malformed launch request at offset " << m.offset << "\n";
        continue;
      }
      const std::string program = req["program"]["name"];
      (*producer)->ProduceAndWait({{events_topic, program, ProgramEvent(req, "started")}}, 10000);
      std::string command = req["program"]["args"].value("command", "");
      std::string status = "succeeded";
      if (!command.empty()) {
        pid_t pid = fork();
        if (pid == 0) {
          setenv("TRIGD_RUN_ID", req["run_id"].get<std::string>().c_str(), 1);
          execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
          _exit(127);
        }
        // Three heartbeats per timeout, so one lost message does not make the run look lost.
        auto timeout = trigd::ParseDuration(req.value("heartbeat_timeout", "5m"));
        auto hb_every = std::max<trigd::Millis>(std::chrono::milliseconds(500),
                                                (timeout.ok() ? *timeout : std::chrono::minutes(5)) / 3);
        auto next_hb = std::chrono::steady_clock::now() + hb_every;
        int wstatus = 0;
        while (waitpid(pid, &wstatus, WNOHANG) == 0) {
          if (g_stop) kill(pid, SIGTERM);
          if (std::chrono::steady_clock::now() >= next_hb) {
            (*producer)->ProduceAndWait({{events_topic, program, ProgramEvent(req, "heartbeat")}}, 10000);
            next_hb += hb_every;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        if (WIFSIGNALED(wstatus)) status = "killed";
        else if (WEXITSTATUS(wstatus) != 0) status = "failed";
      }
      (*producer)->ProduceAndWait({{events_topic, program, ProgramEvent(req, status)}}, 10000);
      std::cerr << "trigd-worker: run " << req["run_id"].get<std::string>() << " " << status << "\n";
    }
  }
  return 0;
}
