// Start-up: loading N schedules (default 1M) from PostgreSQL into the reverse index, vs the bare SQL read of the same
// rows
//
// The schedules are written straight into the tables with generate_series (applying 1M
// documents through trigctl is not what is measured here). Then, as trigd does on start:
// PgStore::LoadScheduleChanges(0) and ScheduleIndex::Put for each schedule. The baseline in
// the same run is the bare read of the same (schedule_id, event_key) rows with libpqxx into a
// vector, which is the floor any loader pays. RSS is read from /proc/self/statm.
#include <fstream>

#include "app/huge_pages.h"
#include "bench_util.h"
#include "core/schedule_index.h"
#include "store/pg_store.h"

namespace {

double RssMb() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

}  // namespace

int main(int argc, char** argv) {
  trigd::UseHugePagesForScheduleIndex();  // as trigd runs
  bench::Flags flags(argc, argv, "trigd-bench-startup [--schedules N] [--rounds R]");
  int64_t n = flags.Int("schedules", 1000000);
  int64_t rounds = flags.Int("rounds", 3);
  flags.Check();
  bench::Run& run = bench::Run::Start("startup");
  auto start = bench::Clock::now();
  {
    pqxx::connection c(run.pg);
    pqxx::work tx(c);
    // One partition leaf per schedule, and a program leaf on a shared upstream for every third.
    tx.exec_params(
        "INSERT INTO schedules (id, name, version, doc_hash, document, state) "
        "SELECT g, 'default/s' || g, 1, 'h' || g, jsonb_build_object('name', 's' || g, 'program', "
        "jsonb_build_object('name', 'p' || g), 'trigger', jsonb_build_object('partition', "
        "jsonb_build_object('dataset', 'feed.' || g))), 'active' FROM generate_series(1, $1::bigint) g",
        n);
    tx.exec_params(
        "INSERT INTO schedule_triggers (schedule_id, leaf, event_key) "
        "SELECT g, 0, 'partition:feed.' || g FROM generate_series(1, $1::bigint) g",
        n);
    tx.exec_params(
        "INSERT INTO schedule_triggers (schedule_id, leaf, event_key) "
        "SELECT g, 1, 'program:upstream.' || (g % 1000) FROM generate_series(1, $1::bigint) g WHERE g % 3 = 0",
        n);
    tx.exec("SELECT setval('schedules_id_seq', (SELECT max(id) FROM schedules))");
    tx.commit();
    pqxx::nontransaction(c).exec("VACUUM ANALYZE schedules, schedule_triggers");
  }
  std::printf("wrote %lld schedules in %.1f s\n", static_cast<long long>(n), bench::SecondsSince(start));
  std::vector<double> engine_s, baseline_s, rss_growth;
  size_t leaves = 0, index_bytes = 0, key_bytes = 0;
  for (int64_t r = 0; r < rounds; ++r) {
    {
      double rss0 = RssMb();
      auto t0 = bench::Clock::now();
      auto store = trigd::PgStore::Connect(run.pg, run.prefix);
      if (!store.ok()) run.Fail(store.status().ToString());
      auto changes = (*store)->LoadScheduleChanges(0);
      if (!changes.ok()) run.Fail(changes.status().ToString());
      trigd::ScheduleIndex index;
      leaves = 0;
      for (const auto& s : changes->schedules) {
        index.Put(s.id, s.event_keys);
        leaves += s.event_keys.size();
      }
      changes->schedules.clear();
      changes->schedules.shrink_to_fit();
      engine_s.push_back(bench::SecondsSince(t0));
      rss_growth.push_back(RssMb() - rss0);
      index_bytes = index.MemoryBytes();
      key_bytes = index.KeyStringBytes();
      if (index.schedule_count() != static_cast<size_t>(n))
        run.Fail("index holds " + std::to_string(index.schedule_count()));
    }
    {
      auto t0 = bench::Clock::now();
      pqxx::connection c(run.pg);
      pqxx::read_transaction tx(c);
      std::vector<std::pair<int64_t, std::string>> rows;
      for (const auto& row : tx.exec("SELECT schedule_id, event_key FROM schedule_triggers")) {
        rows.emplace_back(row[0].as<int64_t>(), row[1].as<std::string>());
      }
      baseline_s.push_back(bench::SecondsSince(t0));
      if (rows.size() != leaves) run.Fail("baseline read " + std::to_string(rows.size()) + " rows");
    }
  }
  double engine = bench::Median(engine_s), baseline = bench::Median(baseline_s);
  std::printf("\n%-44s %12s\n", "start-up load (median of rounds)", "seconds");
  std::printf("%-44s %12.2f\n", "engine: LoadScheduleChanges(0) + index", engine);
  std::printf("%-44s %12.2f\n", "baseline: bare SELECT of the same rows", baseline);
  std::printf("%-44s %12zu\n", "leaf triggers", leaves);
  std::printf("%-44s %12.1f\n", "index bytes per leaf beyond key strings",
              static_cast<double>(index_bytes - key_bytes) / static_cast<double>(leaves));
  std::printf("%-44s %12.0f\n", "RSS growth of one load (MB)", bench::Median(rss_growth));
  bench::ordered_json j = {
      {"scenario", "startup"},
      {"schedules", n},
      {"leaf_triggers", leaves},
      {"load_seconds", bench::Round(engine, 2)},
      {"baseline_select_seconds", bench::Round(baseline, 2)},
      {"ratio_baseline_over_load", bench::Round(baseline / engine, 2)},
      {"index_bytes_per_leaf",
       bench::Round(static_cast<double>(index_bytes - key_bytes) / static_cast<double>(leaves), 1)},
      {"rss_growth_mb", bench::Round(bench::Median(rss_growth), 0)}};
  run.Finish();
  bench::PrintJson(j);
  return 0;
}
