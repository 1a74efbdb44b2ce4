// Launch: ready jobs claimed, run + outbox written, published and confirmed (checker + relay) vs the same writes in raw
// SQL (the limit), the bare claim SQL, and River working the same number of jobs.
//
// Setup: --schedules schedules without constraints and --jobs ready jobs (PENDING_CONSTRAINT,
// due now) opened through the append path, kept as a seed and put back before every measurement.
// Engine path: trigd's checker loops (TRIGD_CHECKERS of them, default 2, as in trigd), each
// PgStore::CheckDueJobs(--limit) until nothing is due (each job's constraints checked, its run
// row and launch request written in the same transaction), and its relay loop on another thread
// (ClaimOutbox(5000), Producer::ProduceAndWait to the real Kafka broker, CompleteOutbox: the
// request deleted from the outbox), until every launch is confirmed.
// Limit baseline (limit_ratio): the same threads, shards, batches and producer, with the durable
// writes of a launch in raw SQL, one statement per checker transaction: the jobs claimed and set
// launched (with their history entry), the run row (with only the indexes a query needs) and the
// launch request; the relay's claim, publication and delete as trigd's (launch_util.h LaunchLimit).
// Bare baseline (ratio, kept for continuity): `UPDATE jobs SET state='claimed' WHERE id IN (SELECT
// ... ORDER BY priority, ready_at, id LIMIT n FOR UPDATE SKIP LOCKED)` in a loop.
// Peer (peer_ratio): River (tools/benchmarks/river, built by tools/bench; tools/setup --river
// installs its Go modules) in its own database on the same PostgreSQL server: --jobs jobs inserted
// with InsertMany (not timed), then worked by a no-op worker until River recorded every one
// completed. Without the river-bench program the peer fields are null.
// Each round runs all four in turn; figures are medians over --rounds.
//
// Usage: trigd-bench-launch [--jobs=50000] [--schedules=1000] [--limit=1000] [--rounds=3]
#include <cstdio>
#include <optional>

#include "app/huge_pages.h"
#include "launch_util.h"

namespace {

// One River round (tools/benchmarks/river): jobs worked per second, or nullopt when the program
// is not built (tools/setup --river, then tools/bench builds it next to this one).
std::optional<double> RiverRound(bench::Run& run, const std::string& db, int64_t jobs) {
  const std::string program = bench::BinDir() + "/river-bench";
  if (access(program.c_str(), X_OK) != 0) return std::nullopt;
  const std::string command =
      program + " --database-url '" + db + "' --jobs " + std::to_string(jobs) + " --rounds 1 2>&1";
  FILE* p = popen(command.c_str(), "r");
  if (!p) run.Fail("cannot run " + program);
  std::string out, last;
  char line[4096];
  while (std::fgets(line, sizeof line, p)) {
    out += line;
    if (line[0] != '\n') last = line;
  }
  if (pclose(p) != 0) run.Fail("river-bench failed:\n" + out);
  auto j = nlohmann::json::parse(last, nullptr, false);
  if (j.is_discarded() || !j.contains("jobs_per_second")) run.Fail("river-bench printed no figures:\n" + out);
  return j["jobs_per_second"].get<double>();
}

}  // namespace

int main(int argc, char** argv) {
  trigd::UseHugePagesForScheduleIndex();  // as trigd runs
  bench::Flags flags(argc, argv, "trigd-bench-launch [--jobs=50000] [--schedules=1000] [--limit=1000] [--rounds=3]");
  const int64_t jobs = flags.Int("jobs", 50000);
  const int64_t schedules = flags.Int("schedules", 1000);
  const int64_t limit = flags.Int("limit", 1000);
  const int rounds = static_cast<int>(flags.Int("rounds", 3));
  flags.Check();
  bench::Run& run = bench::Run::Start("launch");
  const double load_before = bench::LoadAverage();
  std::printf("launch benchmark: %lld ready jobs over %lld schedules, claims of %lld, %d rounds (load %.1f)\n",
              static_cast<long long>(jobs), static_cast<long long>(schedules), static_cast<long long>(limit), rounds,
              load_before);
  auto t = bench::Clock::now();
  bench::MakeReadyJobs(run, schedules, jobs);
  bench::CreateLimitTables(run);
  const std::string river_db = run.AddDatabase("river", false);
  std::printf("setup (schedules + ready jobs through the append path): %.1f s\n", bench::SecondsSince(t));

  int checkers = 0;
  std::vector<double> engine_rate, limit_rate, claim_rate, river_rate, checker_cpu, relay_cpu, client_cpu, limit_db_cpu,
      limit_client_cpu, claim_cpu, loads;
  std::printf("\n%6s %10s %10s %10s %10s %7s %7s %7s %5s   %s\n", "round", "trigd/s", "limit/s", "claim/s", "River/s",
              "limit", "claim", "River", "load", "CPU ms per 1000: trigd db + trigd; limit db + client; claim db");
  const double per_1000 = 1e6 / static_cast<double>(jobs);
  for (int round = 0; round < rounds; ++round) {
    loads.push_back(bench::LoadAverage());
    int64_t first = bench::AddReadyJobs(run);
    bench::LaunchFigures f = bench::LaunchThroughEngine(run, jobs, static_cast<size_t>(limit), first);
    checkers = f.checkers;
    first = bench::AddReadyJobs(run);
    bench::LaunchFigures l = bench::LaunchLimit(run, jobs, static_cast<size_t>(limit), checkers, first);
    bench::AddReadyJobs(run);
    double claim_server_cpu = 0;
    double claim_s = bench::ClaimLoop(run, jobs, static_cast<size_t>(limit), &claim_server_cpu);
    std::optional<double> river = RiverRound(run, river_db, jobs);
    engine_rate.push_back(static_cast<double>(jobs) / f.seconds);
    limit_rate.push_back(static_cast<double>(jobs) / l.seconds);
    claim_rate.push_back(static_cast<double>(jobs) / claim_s);
    if (river) river_rate.push_back(*river);
    checker_cpu.push_back((f.checker_server_cpu + f.relay_server_cpu) * per_1000);
    client_cpu.push_back(f.client_cpu * per_1000);
    limit_db_cpu.push_back((l.checker_server_cpu + l.relay_server_cpu) * per_1000);
    limit_client_cpu.push_back(l.client_cpu * per_1000);
    claim_cpu.push_back(claim_server_cpu * per_1000);
    std::printf("%6d %10.0f %10.0f %10.0f %10.0f %7.2f %7.2f %7.2f %5.1f   %.0f + %.0f; %.0f + %.0f; %.0f\n", round + 1,
                engine_rate.back(), limit_rate.back(), claim_rate.back(), river ? *river : 0.0,
                engine_rate.back() / limit_rate.back(), engine_rate.back() / claim_rate.back(),
                river ? engine_rate.back() / *river : 0.0, loads.back(), checker_cpu.back(), client_cpu.back(),
                limit_db_cpu.back(), limit_client_cpu.back(), claim_cpu.back());
    std::fflush(stdout);
  }
  const double engine = bench::Median(engine_rate), limit_per_s = bench::Median(limit_rate),
               claim = bench::Median(claim_rate);
  const std::optional<double> peer =
      river_rate.empty() ? std::nullopt : std::optional<double>(bench::Median(river_rate));
  const double ratio = engine / claim, limit_ratio = engine / limit_per_s;
  const std::optional<double> peer_ratio = peer ? std::optional<double>(engine / *peer) : std::nullopt;
  std::printf("%6s %10.0f %10.0f %10.0f %10.0f %7.2f %7.2f %7.2f\n", "median", engine, limit_per_s, claim,
              peer.value_or(0), limit_ratio, ratio, peer_ratio.value_or(0));
  if (!peer) std::printf("River: not built (tools/setup --river installs Go and River's modules)\n");
  std::printf("\ntargets: limit_ratio >= 0.8 (%s), peer_ratio >= 1.5 (%s); load average %.1f -> %.1f\n",
              limit_ratio >= 0.8 ? "met" : "NOT met",
              !peer_ratio          ? "not measured"
              : *peer_ratio >= 1.5 ? "met"
                                   : "NOT met",
              load_before, bench::LoadAverage());
  run.Finish();
  auto nullable = [](std::optional<double> v, int decimals) {
    return v ? bench::ordered_json(bench::Round(*v, decimals)) : bench::ordered_json(nullptr);
  };
  bench::ordered_json j;
  j["scenario"] = "launch";
  j["per_s"] = bench::Round(engine, 0);
  j["ratio"] = bench::Round(ratio, 2);
  j["limit_ratio"] = bench::Round(limit_ratio, 2);
  j["peer_ratio"] = nullable(peer_ratio, 2);
  j["peer_per_s"] = nullable(peer, 0);
  j["baseline"] = "limit: the same durable writes in raw SQL, published alike; bare claim SQL in a loop";
  j["baseline_limit_per_s"] = bench::Round(limit_per_s, 0);
  j["baseline_claim_per_s"] = bench::Round(claim, 0);
  j["peer"] = "River " + std::string(peer ? "(no-op worker, InsertMany'd jobs, same PostgreSQL)" : "not built");
  j["target_limit_ratio"] = 0.8;
  j["target_peer_ratio"] = 1.5;
  // CPU per 1000 launches, medians: what the work costs on this machine, however busy it was.
  j["cpu_ms_per_1000_db"] = bench::Round(bench::Median(checker_cpu), 0);
  j["cpu_ms_per_1000_trigd"] = bench::Round(bench::Median(client_cpu), 0);
  j["baseline_limit_cpu_ms_per_1000_db"] = bench::Round(bench::Median(limit_db_cpu), 0);
  j["baseline_claim_cpu_ms_per_1000_db"] = bench::Round(bench::Median(claim_cpu), 0);
  j["checkers"] = checkers;
  j["jobs"] = jobs;
  j["limit"] = limit;
  j["rounds"] = rounds;
  j["limit_run_indexes"] = bench::kLimitRunIndexes;
  j["load_average"] = bench::Round(bench::Median(loads), 1);
  j["bottleneck"] =
      "beyond the limit's writes, a launch reads its schedule (cached), locks and updates its schedule's "
      "run counters, and writes a lineages row when its run starts a lineage and the run's "
      "runs_by_lineage entry; the checker takes about 11 round trips per transaction, the limit one";
  bench::PrintJson(j);
  return 0;
}
