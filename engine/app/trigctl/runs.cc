// trigctl runs: list, show.
#include <memory>

#include "app/trigctl/context.h"
#include "store/admin.h"

namespace trigctl {
namespace {

int RunsList(const Context& ctx, const std::optional<std::string>& schedule,
             const std::optional<std::string>& limit_flag) {
  auto limit = Limit(limit_flag);
  if (!limit) return Refuse("runs list", "--limit must be a positive integer, got \"" + *limit_flag + "\"");
  auto r = ctx.api
               ? ApiList(ctx, "/api/v1/runs", schedule ? "schedule=" + trigd::ApiClient::Encode(*schedule) : "", *limit)
               : trigd::QueryRuns(ctx.config.pg, schedule, *limit);
  if (!r.ok()) return FailList(r.status(), "runs list", schedule);
  PrintRows(*r, {"run_id", "job_id", "schedule", "program", "state", "attempt", "launched_at", "finished_at"},
            ctx.as_json);
  return 0;
}

}  // namespace

void AddRuns(CLI::App& root, Context& ctx) {
  CLI::App* runs = Noun(root, "runs", "runs of launched jobs");
  struct Flags {
    std::optional<std::string> schedule, limit;
    std::string run_id;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* list =
      ctx.Verb(*runs, "list", "runs, newest first", [&ctx, f] { return RunsList(ctx, f->schedule, f->limit); });
  trigd::FlagValue(list->add_option("--schedule", f->schedule, "only the runs of this schedule")->type_name("NAME"));
  AddLimit(*list, f->limit, "default: 100");
  ctx.Verb(*runs, "show", "one run, with its attempts and history",
           [&ctx, f] {
             if (f->run_id.empty()) return ctx.Usage("expects one RUN_ID");
             return ShowOne(ctx.api ? ApiOne(ctx, "/api/v1/runs/" + trigd::ApiClient::Encode(f->run_id))
                                    : trigd::QueryRun(ctx.config.pg, f->run_id),
                            "runs show", "run " + f->run_id, ctx.as_json);
           })
      ->add_option("RUN_ID", f->run_id, "run id");
}

}  // namespace trigctl
