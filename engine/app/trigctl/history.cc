// trigctl history prune: deletes finished jobs and runs, as trigd's TRIGD_RETENTION does.
#include <iostream>
#include <memory>

#include "app/trigctl/context.h"
#include "common/time.h"
#include "store/retention.h"

namespace trigctl {
namespace {

// Deletes finished jobs and runs older than --older-than (store/retention.h), as trigd does
// every hour with TRIGD_RETENTION; --dry-run counts them.
int HistoryPrune(const Context& ctx, const std::optional<std::string>& older, bool dry_run) {
  const trigd::Config& config = ctx.config;
  const bool as_json = ctx.as_json;
  if (!older) return Refuse("history prune", "needs --older-than DURATION (e.g. 90d)");
  // 0 (keep everything, as TRIGD_RETENTION=0) is refused as too short, not as a bad unit.
  auto keep = *older == "0" ? trigd::Result<trigd::Millis>(trigd::Millis{0}) : trigd::ParseDuration(*older);
  if (!keep.ok()) return Refuse("history prune", "--older-than: " + keep.status().message());
  trigd::TimePoint cutoff{}, runs_cutoff{};
  auto r = trigd::PruneHistory(config.pg, *keep, dry_run, &cutoff, &runs_cutoff);
  if (!r.ok()) return Fail(r.status(), "history prune");
  if (as_json) {
    std::cout << json{{"dry_run", dry_run},
                      {"jobs", r->jobs},
                      {"runs", r->runs},
                      {"audit", r->audit},
                      {"finished_before", trigd::FormatTime(cutoff)},
                      {"runs_launched_before", trigd::FormatTime(runs_cutoff)}}
                     .dump()
              << "\n";
    return 0;
  }
  std::cout << (dry_run ? "would delete " : "deleted ") << r->jobs << " jobs and " << r->runs
            << " runs that finished before " << trigd::FormatTime(cutoff) << ", and " << r->audit
            << " audit rows of changes before it\n";
  if (runs_cutoff < cutoff) {
    std::cout << "kept: runs launched after " << trigd::FormatTime(runs_cutoff)
              << " (a schedule's max_runs_per period counts them)\n";
  }
  return 0;
}

}  // namespace

void AddHistory(CLI::App& root, Context& ctx) {
  CLI::App* history = Noun(root, "history", "finished jobs and runs");
  struct Flags {
    std::optional<std::string> older_than;
    bool dry_run = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* prune = ctx.Verb(*history, "prune", "delete finished jobs and runs older than --older-than (at least 1d)",
                             [&ctx, f] { return HistoryPrune(ctx, f->older_than, f->dry_run); });
  trigd::FlagValue(prune->add_option("--older-than", f->older_than, "a duration, e.g. 90d")->type_name("DURATION"));
  prune->add_flag("--dry-run", f->dry_run, "count what would be deleted, delete nothing");
}

}  // namespace trigctl
