// What-if replay (SPEC §12, issue 36): events evaluated per second by core/replay.h for 1,000 documents.
//
// 1,000 schedule documents of every trigger kind (partition count 4, program, all of both, an
// hourly cron) and constraint kind (max_concurrent_runs, delay, time_window, max_runs_per), over
// a day of envelopes in event time: --events of them (default 2,000,000), --match_percent of
// which (default 20) reach a schedule (the others are partitions of datasets nobody listens to,
// most of real traffic). Timed: the event-time ordering (Replay::Order: each envelope's scan and
// lookup, the sort), every Feed and Finish, as `trigctl schedules replay` runs them once the
// range is read; the envelopes are made beforehand.
// The timeline is kept (as the CLI keeps it; its entries are decoded for printing, not timed).
// Target: >= 500,000 events/s, read in CPU time (events_per_cpu_s: this process's user + system
// time), as the machine is shared: events_per_s, the wall clock, also counts other processes'
// turns on its two cores.
//
// Usage: trigd-bench-replay [--events=N] [--documents=N] [--match_percent=P] [--rounds=3]
// The last line of output is one JSON object (tools/bench builds RESULTS.md from it).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/time.h"
#include "core/replay.h"
#include "core/schedule_parser.h"

namespace {

using nlohmann::json;
using trigd::Millis;
using trigd::TimePoint;

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

long Flag(int argc, char** argv, const std::string& name, long fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.starts_with(prefix)) return std::strtol(a.substr(prefix.size()).data(), nullptr, 10);
  }
  return fallback;
}

trigd::Schedule Document(int i) {
  const std::string ds = "ds" + std::to_string(i % 200);
  json trigger;
  switch (i % 4) {
    case 0: trigger = {{"partition", {{"dataset", ds}, {"count", 4}}}}; break;
    case 1: trigger = {{"program", {{"name", "up" + std::to_string(i % 50)}}}}; break;
    case 2:
      trigger = {{"all",
                  {{{"partition", {{"dataset", ds}, {"count", 2}}}},
                   {{"program", {{"name", "up" + std::to_string(i % 50)}}}}}}};
      break;
    default: trigger = {{"time", {{"cron", std::to_string(i % 60) + " * * * *"}}}}; break;
  }
  json constraints;
  switch (i % 5) {
    case 0: constraints = {{"max_concurrent_runs", 1}}; break;
    case 1: constraints = {{"delay", "5m"}}; break;
    case 2:
      constraints = {{"time_window", {{"start", "06:00"}, {"end", "22:00"}, {"timezone", "Europe/Berlin"}}}};
      break;
    case 3: constraints = {{"max_runs_per", {{"count", 6}, {"period", "1d"}}}}; break;
    default: constraints = json::object(); break;
  }
  json doc = {
      {"name", "s" + std::to_string(i)}, {"program", {{"name", "p" + std::to_string(i)}}}, {"trigger", trigger}};
  if (!constraints.empty()) doc["constraints"] = constraints;
  trigd::ParsedSchedule p = trigd::ParseSchedule(doc);
  if (!p.ok()) {
    std::fprintf(stderr, "bench: document %d refused: %s\n", i, p.errors[0].ToString().c_str());
    std::exit(1);
  }
  return p.schedule;
}

}  // namespace

int main(int argc, char** argv) {
  const long events = Flag(argc, argv, "events", 2000000);
  const long documents = Flag(argc, argv, "documents", 1000);
  const long match_percent = Flag(argc, argv, "match_percent", 20);
  const long rounds = std::max(1L, Flag(argc, argv, "rounds", 3));
  const TimePoint from = TimePoint(Millis(1795305600000));  // 2026-11-22T00:00:00Z
  const TimePoint to = from + std::chrono::hours(24);

  std::vector<trigd::Schedule> schedules;
  for (long i = 0; i < documents; ++i) schedules.push_back(Document(static_cast<int>(i)));

  std::mt19937_64 rng(42);
  std::vector<std::string> stream;
  stream.reserve(static_cast<size_t>(events));
  const Millis step = Millis(std::chrono::hours(24)) / std::max(1L, events);
  long matching = 0;
  for (long i = 0; i < events; ++i) {
    const TimePoint t = from + step * i;
    const std::string id = "e" + std::to_string(i);
    const bool match = static_cast<long>(rng() % 100) < match_percent;
    if (match && rng() % 4 == 0) {
      ++matching;
      stream.push_back(json{{"id", id},
                            {"type", "program"},
                            {"time", trigd::FormatTime(t)},
                            {"payload",
                             {{"program", "up" + std::to_string(rng() % 50)},
                              {"run_id", "r" + std::to_string(i)},
                              {"status", "succeeded"},
                              {"attempt", 1}}}}
                           .dump());
      continue;
    }
    if (match) ++matching;
    const std::string ds = match ? "ds" + std::to_string(rng() % 200) : "other" + std::to_string(rng() % 10000);
    stream.push_back(json{{"id", id},
                          {"type", "partition"},
                          {"time", trigd::FormatTime(t)},
                          {"payload", {{"dataset", ds}, {"partitions", {"h=" + std::to_string(i)}}, {"bytes", 1024}}}}
                         .dump());
  }
  std::vector<std::string_view> views(stream.begin(), stream.end());

  std::vector<double> rates, cpu_rates;
  trigd::ReplayResult last;
  double best_seconds = 0;
  for (long round = 0; round < rounds; ++round) {
    trigd::ReplayOptions options;
    options.from = from;
    options.to = to;
    options.run_duration = std::chrono::minutes(10);
    last = trigd::ReplayResult();  // the previous round's result is freed before the clock starts
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = CpuSeconds();
    trigd::Replay replay(schedules, options);
    for (const trigd::ReplayMessage& m : replay.Order(views)) replay.Feed(views[m.index], m);
    last = replay.Finish();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(static_cast<double>(events) / seconds);
    cpu_rates.push_back(static_cast<double>(events) / std::max(CpuSeconds() - cpu_start, 1e-6));
    if (round == 0 || seconds < best_seconds) best_seconds = seconds;
  }
  std::sort(rates.begin(), rates.end());
  const double median = rates[rates.size() / 2];
  std::sort(cpu_rates.begin(), cpu_rates.end());
  const double cpu_median = cpu_rates[cpu_rates.size() / 2];
  size_t launches = 0, steps = 0;
  for (const auto& s : last.schedules) {
    launches += s.launches.size();
    steps += s.entries.size();
  }
  std::printf("documents            %ld\n", documents);
  std::printf("events               %ld (%ld reach a schedule)\n", events, matching);
  std::printf("fire times           %lld\n", static_cast<long long>(last.fire_times));
  std::printf("simulated launches   %zu\n", launches);
  std::printf("timeline steps       %zu\n", steps);
  std::printf("events/s (median)    %.0f over %ld rounds (best %.3f s)\n", median, rounds, best_seconds);
  std::printf(
      "events/CPU-s         %.0f (this process's CPU time: on a shared machine the wall clock\n"
      "                     counts other processes' turns too; the target, 500,000, reads this one)\n",
      cpu_median);
  std::printf("%s\n", json{{"documents", documents},
                           {"events", events},
                           {"match_percent", match_percent},
                           {"matched", last.matched},
                           {"launches", launches},
                           {"events_per_s", static_cast<int64_t>(median)},
                           {"events_per_cpu_s", static_cast<int64_t>(cpu_median)},
                           {"target_events_per_s", 500000}}
                          .dump()
                          .c_str());
  return 0;
}
