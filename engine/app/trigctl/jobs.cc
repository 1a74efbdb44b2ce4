// trigctl jobs: list, show, why.
#include <algorithm>
#include <iostream>
#include <iterator>
#include <memory>

#include "api/why.h"
#include "app/trigctl/context.h"
#include "store/admin.h"

namespace trigctl {
namespace {

constexpr const char* kJobStates[] = {"pending_trigger", "pending_constraint", "launched", "discarded"};

int JobsList(const Context& ctx, const std::optional<std::string>& state, const std::optional<std::string>& schedule,
             const std::optional<std::string>& limit_flag) {
  auto limit = Limit(limit_flag);
  if (!limit) return Refuse("jobs list", "--limit must be a positive integer, got \"" + *limit_flag + "\"");
  if (state && std::none_of(std::begin(kJobStates), std::end(kJobStates), [&](const char* s) { return *state == s; })) {
    return Refuse("jobs list", "unknown job state \"" + *state +
                                   "\" (one of pending_trigger, pending_constraint, launched, discarded)");
  }
  std::string query = (state ? "state=" + trigd::ApiClient::Encode(*state) : "");
  if (schedule) query += (query.empty() ? "" : "&") + ("schedule=" + trigd::ApiClient::Encode(*schedule));
  auto r =
      ctx.api ? ApiList(ctx, "/api/v1/jobs", query, *limit) : trigd::QueryJobs(ctx.config.pg, state, schedule, *limit);
  if (!r.ok()) return FailList(r.status(), "jobs list", schedule);
  PrintRows(
      *r, {"id", "schedule", "version", "state", "priority", "opened_at", "next_check_at", "run_id", "discard_reason"},
      ctx.as_json);
  return 0;
}

int JobsShowOrWhy(const Context& ctx, const std::string& verb, const std::string& id_text) {
  if (id_text.empty()) return ctx.Usage("expects one job ID");
  auto id = ParseId(id_text);
  if (!id) return Refuse("jobs " + verb, "job id must be a number, got \"" + id_text + "\"");
  const std::string path = "/api/v1/jobs/" + std::to_string(*id);
  if (verb == "show") {
    return ShowOne(ctx.api ? ApiOne(ctx, path) : trigd::QueryJob(ctx.config.pg, *id), "jobs show", "job " + id_text,
                   ctx.as_json);
  }
  json e;
  if (ctx.api) {
    auto r = ctx.api->Call("GET", path + "/why");
    if (!r.ok()) return Fail(r.status(), "jobs why");
    e = *r;
  } else {
    auto in = trigd::InspectJob(ctx.config.pg, *id);
    if (!in.ok()) return Fail(in.status(), "jobs why");
    e = trigd::ExplainJob(*in);
  }
  std::cout << (ctx.as_json ? e.dump() + "\n" : trigd::FormatExplanation(e));
  return 0;
}

}  // namespace

void AddJobs(CLI::App& root, Context& ctx) {
  CLI::App* jobs = Noun(root, "jobs", "jobs: one per schedule waiting for its trigger or constraints, or launched");
  struct Flags {
    std::optional<std::string> state, schedule, limit;
    std::string id;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* list = ctx.Verb(*jobs, "list", "jobs, newest first",
                            [&ctx, f] { return JobsList(ctx, f->state, f->schedule, f->limit); });
  trigd::FlagValue(list->add_option("--state", f->state, "pending_trigger, pending_constraint, launched or discarded")
                       ->type_name("S"));
  trigd::FlagValue(list->add_option("--schedule", f->schedule, "only the jobs of this schedule")->type_name("NAME"));
  AddLimit(*list, f->limit, "default: 100");
  ctx.Verb(*jobs, "show", "one job, with its history", [&ctx, f] { return JobsShowOrWhy(ctx, "show", f->id); })
      ->add_option("ID", f->id, "job id");
  ctx.Verb(*jobs, "why", "why a job waits: unmet trigger branches, failing constraints, next check",
           [&ctx, f] { return JobsShowOrWhy(ctx, "why", f->id); })
      ->add_option("ID", f->id, "job id");
}

}  // namespace trigctl
