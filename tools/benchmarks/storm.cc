// Storm: 100,000 cron schedules due in the same second, time until all are launched, vs producing and consuming as many
// bare messages.
//
// Setup: --schedules cron schedules ("M H * * *" in UTC, daily at the minute the run started,
// so no fire time falls inside the run by itself; each its own program), applied through
// trigctl's path (ApplySchedules, 10,000 per transaction).
// build/bin/trigd runs as a child process and is warmed up (one partition event launched).
// A storm: one UPDATE makes every time trigger due at once (next_fire_at = that minute, last
// fire time cleared); the clock starts just before it commits. trigd's checker loops (two by
// default) then tick 5,000 schedules per transaction: each tick opens its schedule's job
// (complete at once) and the same transaction checks and launches it (run + launch request; the
// tick itself also goes to <prefix>events.time, where ingestion skips it as trigd's own), and
// the relay publishes the requests; the storm ends when the database counts --schedules jobs
// launched and the relay has deleted every confirmed request from the outbox (polled once every
// request is on the launch topic, where the benchmark counts them as they arrive). Between
// rounds the jobs and runs of the previous storm are deleted (so the same fire time
// opens jobs again); round 1 is the cold one (trigd's schedule caches empty).
// Baseline: produce --schedules bare messages (about the size of a launch request) to a topic
// and consume them all, from the first send to the last receipt.
//
// Usage: trigd-bench-storm [--schedules=100000] [--rounds=3]
#include <cstdio>
#include <ctime>

#include "bench_util.h"
#include "log/kafka.h"

namespace {

using bench::Clock;

int64_t Count(pqxx::connection& c, const std::string& sql) {
  pqxx::nontransaction tx(c);
  return tx.exec1(sql)[0].as<int64_t>();
}

}  // namespace

int main(int argc, char** argv) {
  bench::Flags flags(argc, argv, "trigd-bench-storm [--schedules=100000] [--rounds=3]");
  const int64_t schedules = flags.Int("schedules", 100000);
  const int rounds = static_cast<int>(flags.Int("rounds", 3));
  flags.Check();
  bench::Run& run = bench::Run::Start("storm");
  const double load_before = bench::LoadAverage();
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  const std::string cron = bench::Cat(std::to_string(utc.tm_min), " ", std::to_string(utc.tm_hour), " * * *");
  std::printf("storm benchmark: %lld cron schedules (\"%s\" UTC) due at once, %d rounds (load %.1f)\n",
              static_cast<long long>(schedules), cron.c_str(), rounds, load_before);

  auto t = Clock::now();
  std::vector<nlohmann::json> docs;
  for (int64_t k = 0; k < schedules; ++k) {
    docs.push_back({{"namespace", "bench"},
                    {"name", bench::Cat("c", k)},
                    {"program", {{"name", bench::Cat("storm.p", k)}}},
                    {"trigger", {{"time", {{"cron", cron}, {"timezone", "UTC"}}}}}});
  }
  docs.push_back({{"namespace", "bench"},
                  {"name", "warm"},
                  {"program", {{"name", "warm.p"}}},
                  {"trigger", {{"partition", {{"dataset", "warm"}}}}}});
  bench::ApplyScheduleDocs(run, docs, 10000);
  pqxx::connection watch(run.pg);
  {
    pqxx::nontransaction tx(watch);
    tx.exec("VACUUM ANALYZE schedules");
    tx.exec("VACUUM ANALYZE schedule_triggers");
    tx.exec("VACUUM ANALYZE time_triggers");
  }
  if (Count(watch, "SELECT count(*) FROM time_triggers") != schedules) run.Fail("time triggers missing after setup");
  std::printf("setup: %lld schedules applied (ApplySchedules, 10,000 per transaction) in %.1f s\n",
              static_cast<long long>(schedules), bench::SecondsSince(t));

  bench::Child& trigd = run.StartTrigd();
  {
    bench::BulkProducer producer(run.kafka);
    producer.Produce(trigd::TopicNames(run.prefix).events_data, "warm", bench::PartitionEvent("warm-1", "warm", "p1"));
    producer.Flush();
    auto deadline = Clock::now() + std::chrono::seconds(90);
    while (Count(watch, "SELECT count(*) FROM jobs WHERE state = 'launched'") < 1) {
      if (Clock::now() > deadline || !trigd.Alive()) run.Fail("trigd did not launch the warm-up job within 90 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  std::printf("trigd running and warmed up\n");
  std::fflush(stdout);

  const std::string fire = [&] {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:00+00", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                  utc.tm_hour, utc.tm_min);
    return std::string(buf);
  }();
  const std::string launch_topic = trigd::TopicNames(run.prefix).Launch("default");
  std::vector<double> storm_s, published_at, trigd_cpu;
  std::printf("\n%6s %14s %20s %16s %16s\n", "round", "storm (s)", "all on topic (s)", "launches/s", "trigd CPU (s)");
  for (int round = 0; round < rounds; ++round) {
    {
      pqxx::connection c(run.pg);
      pqxx::work tx(c);
      tx.exec("DELETE FROM runs WHERE schedule_name LIKE 'bench/c%'");
      tx.exec("DELETE FROM jobs WHERE schedule_name LIKE 'bench/c%'");
      // The run counters back to none active, as trigd keeps them from apply on (not deleted:
      // a schedule's counter row exists from its creation, docs/adr/0174).
      tx.exec("UPDATE schedule_runtime SET active_runs = 0, last_launch_at = NULL");
      tx.commit();
      pqxx::nontransaction v(c);
      v.exec("VACUUM ANALYZE schedule_runtime");
      v.exec("VACUUM ANALYZE jobs");
      v.exec("VACUUM ANALYZE runs");
      v.exec("VACUUM ANALYZE time_triggers");
    }
    const int64_t base = Count(watch, "SELECT count(*) FROM jobs WHERE state = 'launched'");
    // Launch requests are counted on the launch topic from its current end (counting them in
    // PostgreSQL every 100 ms would itself take a good part of a core from the storm); once all
    // are there, the database is polled until it shows every job launched (marked when decided)
    // and no launch request left in the outbox (deleted once Kafka confirmed it).
    auto ends = trigd::QueryEndOffsets(run.kafka, {launch_topic});
    if (!ends.ok()) run.Fail(ends.status().ToString());
    std::vector<int64_t> start_at;
    for (const auto& e : *ends) start_at.push_back(e.end_offset);
    bench::BatchConsumer requests(run.kafka, bench::Cat(run.group, "-storm-reader"), launch_topic,
                                  static_cast<int>(start_at.size()), "10", start_at);
    const double cpu_before = bench::ProcessCpuSeconds(trigd.pid());
    auto start = Clock::now();
    {
      pqxx::connection c(run.pg);
      pqxx::work tx(c);
      tx.exec_params(
          "UPDATE time_triggers SET anchor = $1::timestamptz - interval '1 minute', last_fire_time = NULL, "
          "next_fire_at = $1::timestamptz",
          fire);
      start = Clock::now();
      tx.commit();
    }
    auto deadline = start + std::chrono::seconds(240);
    int64_t published = 0;
    while (published < schedules) {
      if (Clock::now() > deadline || !trigd.Alive()) {
        run.Fail(bench::Cat("storm: ", published, " of ", schedules, " launch requests after 240 s"));
      }
      requests.ConsumeBatch(100, [&](const char* p, size_t len) {
        if (std::string_view(p, len).find("\"schedule\":\"bench/c") != std::string_view::npos) ++published;
      });
    }
    const double published_s = bench::SecondsSince(start);
    int64_t launched = 0;
    while ((launched = Count(watch, "SELECT count(*) FROM jobs WHERE state = 'launched'") - base) < schedules ||
           Count(watch, "SELECT count(*) FROM outbox WHERE job_id IS NOT NULL") > 0) {
      if (Clock::now() > deadline || !trigd.Alive()) {
        run.Fail(bench::Cat("storm: ", launched, " of ", schedules, " jobs launched after 240 s"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    storm_s.push_back(bench::SecondsSince(start));
    published_at.push_back(published_s);
    trigd_cpu.push_back(bench::ProcessCpuSeconds(trigd.pid()) - cpu_before);
    if (launched != schedules) run.Fail(bench::Cat("storm launched ", launched, " jobs for ", schedules, " schedules"));
    std::printf("%6d %14.2f %20.2f %16.0f %16.2f%s\n", round + 1, storm_s.back(), published_at.back(),
                static_cast<double>(schedules) / storm_s.back(), trigd_cpu.back(),
                round == 0 ? "   (cold: trigd's schedule caches empty)" : "");
    std::fflush(stdout);
  }
  trigd.Stop();

  // Baseline: the same number of bare messages through Kafka (a fresh topic per round; the
  // consumer is connected and fetching, shown by a first message, before the clock starts).
  std::vector<double> bare_s;
  const std::string payload(450, 'x');  // about a launch request's size
  for (int round = 0; round < rounds; ++round) {
    const std::string topic = bench::Cat(run.prefix, "bench.storm-", round);
    run.CreateTopic(topic, 4);
    bench::BatchConsumer consumer(run.kafka, bench::Cat(run.group, "-bare"), topic, 4);
    bench::BulkProducer producer(run.kafka, "1");
    producer.Produce(topic, "ping", payload);
    producer.Flush();
    auto deadline = Clock::now() + std::chrono::seconds(30);
    while (consumer.ConsumeBatch(100, [](const char*, size_t) {}) == 0) {
      if (Clock::now() > deadline) run.Fail("bare consumer not ready within 30 s");
    }
    auto start = Clock::now();
    int64_t seen = 0;
    for (int64_t i = 0; i < schedules; ++i) {
      producer.Produce(topic, bench::Cat("storm.p", i), payload);
      if (i % 1000 == 999) seen += static_cast<int64_t>(consumer.ConsumeBatch(0, [](const char*, size_t) {}));
    }
    producer.Flush();
    deadline = Clock::now() + std::chrono::seconds(60);
    while (seen < schedules) {
      if (Clock::now() > deadline) run.Fail("bare consumer did not see every message within 60 s");
      seen += static_cast<int64_t>(consumer.ConsumeBatch(100, [](const char*, size_t) {}));
    }
    bare_s.push_back(bench::SecondsSince(start));
  }
  double storm = bench::Median(storm_s), bare = bench::Median(bare_s);
  std::printf("%6s %14.2f %16.0f\n", "median", storm, static_cast<double>(schedules) / storm);
  std::printf("bare produce + consume of %lld messages: %.2f s (median)\n", static_cast<long long>(schedules), bare);
  std::printf("\ntarget: all launched within 3 s (%s); load average %.1f -> %.1f\n", storm <= 3 ? "met" : "NOT met",
              load_before, bench::LoadAverage());
  run.Finish();
  bench::ordered_json j;
  j["scenario"] = "storm";
  j["schedules"] = schedules;
  j["seconds"] = bench::Round(storm, 2);
  j["cold_seconds"] = bench::Round(storm_s.front(), 2);
  j["launches_per_second"] = bench::Round(static_cast<double>(schedules) / storm, 0);
  j["target_seconds"] = 3;
  j["baseline"] = "produce and consume as many bare messages through Kafka";
  j["baseline_seconds"] = bench::Round(bare, 2);
  j["ratio_seconds_over_baseline"] = bench::Round(storm / bare, 2);
  j["rounds"] = rounds;
  j["load_average"] = bench::Round(bench::LoadAverage(), 1);
  j["trigd_cpu_ms_per_launch"] = bench::Round(bench::Median(trigd_cpu) * 1000.0 / static_cast<double>(schedules), 3);
  j["bottleneck"] =
      "PostgreSQL's write path: per launch a tick state update, a job inserted already "
      "launched, a run insert, a launch request written and deleted, about 0.1 ms of server time "
      "in all, and trigd's own CPU (trigd_cpu_ms_per_launch), on two cores shared with Kafka";
  bench::PrintJson(j);
  return 0;
}
