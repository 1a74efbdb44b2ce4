// Launch: ready jobs claimed, run + outbox written, published and confirmed (checker + relay) vs the bare claim SQL in
// a loop.
//
// Setup: --schedules schedules without constraints and --jobs ready jobs (PENDING_CONSTRAINT,
// due now) opened through the append path, kept as a seed and put back before every round.
// Engine path: trigd's checker loops (TRIGD_CHECKERS of them, default 2, as in trigd), each
// PgStore::CheckDueJobs(--limit) until nothing is due (each job's constraints checked, its run
// row and launch request written in the same transaction), and its relay loop on another thread (ClaimOutbox(5000),
// Producer::ProduceAndWait to the real Kafka broker, CompleteOutbox: the request deleted from the outbox), until every
// launch is confirmed. Baseline: `UPDATE jobs SET state='claimed' WHERE id IN (SELECT ... ORDER BY priority, ready_at,
// id LIMIT n FOR UPDATE SKIP LOCKED)` in a loop, one transaction each, on the same jobs. Figures are medians over
// --rounds, the engine and the baseline alternating.
//
// Usage: trigd-bench-launch [--jobs=50000] [--schedules=1000] [--limit=1000] [--rounds=5]
#include <cstdio>

#include "app/huge_pages.h"
#include "launch_util.h"

int main(int argc, char** argv) {
  trigd::UseHugePagesForScheduleIndex();  // as trigd runs
  bench::Flags flags(argc, argv, "trigd-bench-launch [--jobs=50000] [--schedules=1000] [--limit=1000] [--rounds=5]");
  const int64_t jobs = flags.Int("jobs", 50000);
  const int64_t schedules = flags.Int("schedules", 1000);
  const int64_t limit = flags.Int("limit", 1000);
  const int rounds = static_cast<int>(flags.Int("rounds", 5));
  flags.Check();
  bench::Run& run = bench::Run::Start("launch");
  const double load_before = bench::LoadAverage();
  std::printf("launch benchmark: %lld ready jobs over %lld schedules, claims of %lld, %d rounds (load %.1f)\n",
              static_cast<long long>(jobs), static_cast<long long>(schedules), static_cast<long long>(limit), rounds,
              load_before);
  auto t = bench::Clock::now();
  bench::MakeReadyJobs(run, schedules, jobs);
  std::printf("setup (schedules + ready jobs through the append path): %.1f s\n", bench::SecondsSince(t));

  int checkers = 0;
  std::vector<double> engine_rate, claim_rate, checker_cpu, relay_cpu, client_cpu, claim_cpu;
  std::printf("\n%6s %16s %14s %8s   %-38s %s\n", "round", "engine launch/s", "claim SQL/s", "ratio",
              "engine time in (s): check / relay claim",
              "CPU ms per 1000 (engine: checker db + relay db + "
              "trigd; baseline: db)");
  std::printf("%6s %16s %14s %8s   %-38s\n", "", "", "", "", "  / produce+ack / complete of total");
  const double per_1000 = 1e6 / static_cast<double>(jobs);
  for (int round = 0; round < rounds; ++round) {
    const int64_t first = bench::AddReadyJobs(run);
    bench::LaunchFigures f = bench::LaunchThroughEngine(run, jobs, static_cast<size_t>(limit), first);
    bench::AddReadyJobs(run);
    double claim_server_cpu = 0;
    double claim_s = bench::ClaimLoop(run, jobs, static_cast<size_t>(limit), &claim_server_cpu);
    checkers = f.checkers;
    engine_rate.push_back(static_cast<double>(jobs) / f.seconds);
    claim_rate.push_back(static_cast<double>(jobs) / claim_s);
    checker_cpu.push_back(f.checker_server_cpu * per_1000);
    relay_cpu.push_back(f.relay_server_cpu * per_1000);
    client_cpu.push_back(f.client_cpu * per_1000);
    claim_cpu.push_back(claim_server_cpu * per_1000);
    char times[64];
    std::snprintf(times, sizeof times, "%.2f / %.2f / %.2f / %.2f of %.2f", f.check_seconds, f.claim_seconds,
                  f.produce_seconds, f.complete_seconds, f.seconds);
    std::printf("%6d %16.0f %14.0f %8.2f   %-38s %.0f + %.0f + %.0f; %.0f\n", round + 1, engine_rate.back(),
                claim_rate.back(), engine_rate.back() / claim_rate.back(), times, checker_cpu.back(), relay_cpu.back(),
                client_cpu.back(), claim_cpu.back());
    std::fflush(stdout);
  }
  double engine = bench::Median(engine_rate), claim = bench::Median(claim_rate), ratio = engine / claim;
  std::printf("%6s %16.0f %14.0f %8.2f   %-38s %.0f + %.0f + %.0f; %.0f\n", "median", engine, claim, ratio, "",
              bench::Median(checker_cpu), bench::Median(relay_cpu), bench::Median(client_cpu),
              bench::Median(claim_cpu));
  std::printf("\ntargets: ratio >= 0.7 (%s), >= 20,000 launches/s (%s); load average %.1f -> %.1f\n",
              ratio >= 0.7 ? "met" : "NOT met", engine >= 20000 ? "met" : "NOT met", load_before, bench::LoadAverage());
  run.Finish();
  bench::ordered_json j;
  j["scenario"] = "launch";
  j["launches_per_second"] = bench::Round(engine, 0);
  j["baseline"] = "bare claim SQL (UPDATE ... FOR UPDATE SKIP LOCKED LIMIT n) in a loop";
  j["baseline_claims_per_second"] = bench::Round(claim, 0);
  j["ratio"] = bench::Round(ratio, 2);
  j["target_ratio"] = 0.7;
  j["target_launches_per_second"] = 20000;
  // CPU per 1000 launches, medians: what the work costs on this machine, however busy it was.
  j["cpu_ms_per_1000_db_checker"] = bench::Round(bench::Median(checker_cpu), 0);
  j["cpu_ms_per_1000_db_relay"] = bench::Round(bench::Median(relay_cpu), 0);
  j["cpu_ms_per_1000_trigd"] = bench::Round(bench::Median(client_cpu), 0);
  j["baseline_cpu_ms_per_1000_db"] = bench::Round(bench::Median(claim_cpu), 0);
  j["checkers"] = checkers;
  j["jobs"] = jobs;
  j["limit"] = limit;
  j["rounds"] = rounds;
  j["load_average"] = bench::Round(bench::LoadAverage(), 1);
  j["bottleneck"] =
      "a launch updates its job once, appending to its history, copies in a run row (5 indexes) "
      "and its launch request (deleted again by the relay once Kafka confirmed), locks and updates "
      "its schedule's run counters and share-locks the schedule; the claim SQL updates the job once";
  bench::PrintJson(j);
  return 0;
}
