// trigctl runs: list, show, start, cancel, rerun.
#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>

#include "app/trigctl/context.h"
#include "common/json_reader.h"
#include "store/admin.h"
#include "store/operate.h"

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

// How long `runs start` and `runs rerun` wait for the checker to launch the job before they print
// it as waiting (its constraints may hold it for hours).
constexpr auto kWaitForLaunch = std::chrono::seconds(5);

// A job started by hand as the API replies it (StartedJob::ToJson()).
trigd::StartedJob StartedFromJson(const json& j) {
  trigd::StartedJob job;
  job.job_id = j.value("job_id", int64_t{0});
  job.schedule = j.value("schedule", "");
  job.state = j.value("state", "");
  if (j.contains("run_id") && j["run_id"].is_string()) job.run_id = j["run_id"].get<std::string>();
  if (j.contains("rerun_of") && j["rerun_of"].is_string()) job.rerun_of = j["rerun_of"].get<std::string>();
  return job;
}

// The job's state and run now: from PostgreSQL, or through the API (GET /api/v1/jobs/{id}).
trigd::Result<trigd::StartedJob> ReadStarted(const Context& ctx, const trigd::StartedJob& job) {
  if (!ctx.api) return trigd::QueryStartedJob(ctx.config.pg, job.job_id);
  auto row = ctx.api->Call("GET", "/api/v1/jobs/" + std::to_string(job.job_id));
  if (!row.ok()) return row.status();
  trigd::StartedJob out = job;
  out.state = row->value("state", job.state);
  if (row->contains("run_id") && (*row)["run_id"].is_string()) out.run_id = (*row)["run_id"].get<std::string>();
  return out;
}

// Prints a job started by hand: its run once launched, else why it waits.
int PrintStarted(const Context& ctx, trigd::StartedJob job, const std::string& command) {
  const auto deadline = std::chrono::steady_clock::now() + kWaitForLaunch;
  while (!job.run_id && job.state == "pending_constraint" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto again = ReadStarted(ctx, job);
    if (!again.ok()) return Fail(again.status(), command);
    job = *again;
  }
  if (ctx.as_json) {
    std::cout << job.ToJson().dump() << "\n";
    return 0;
  }
  std::cout << "job " << job.job_id << " of " << job.schedule;
  if (job.run_id) {
    std::cout << ": launched as run " << *job.run_id << "\n";
  } else {
    std::cout << ": " << job.state << " (trigctl jobs why " << job.job_id << " says why)\n";
  }
  return 0;
}

// Runs start, cancel and rerun: through the API (POST PATH with `body`) or the store call.
template <class T>
trigd::Result<T> Operate(const Context& ctx, const std::string& path, const json& body,
                         const std::function<trigd::Result<T>()>& direct, const std::function<T(const json&)>& parse) {
  if (!ctx.api) return direct();
  auto r = ctx.api->Call("POST", path, body);
  if (!r.ok()) return r.status();
  return parse(*r);
}

std::string RunPath(const std::string& run_id, const std::string& verb) {
  return "/api/v1/runs/" + trigd::ApiClient::Encode(run_id) + "/" + verb;
}

trigd::CancelledRun CancelledFromJson(const json& j) {
  trigd::CancelledRun c;
  c.run_id = j.value("run_id", "");
  c.schedule = j.value("schedule", "");
  c.previous_state = j.value("previous_state", "");
  c.attempt = j.value("attempt", int64_t{0});
  c.reason = j.value("why", "");
  return c;
}

}  // namespace

void AddRuns(CLI::App& root, Context& ctx) {
  CLI::App* runs = Noun(root, "runs", "runs of launched jobs");
  struct Flags {
    std::optional<std::string> schedule, limit, args, reason;
    std::string run_id, name;
    bool force = false;
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

  CLI::App* start = ctx.Verb(
      *runs, "start", "run a schedule now: a job whose trigger counts as complete (constraints apply unless --force)",
      [&ctx, f] {
        if (f->name.empty()) return ctx.Usage("expects one NAME (namespace/name)");
        json args = json::object();
        if (f->args) {
          trigd::Result<json> read = trigd::ReadJson(*f->args);
          if (!read.ok()) return Refuse("runs start", "--args: " + read.status().message());
          args = std::move(read).value();
          if (!args.is_object()) {
            return Refuse("runs start", "--args must be a JSON object, e.g. '{\"mode\": \"delta\"}', got " + *f->args);
          }
        }
        auto r = Operate<trigd::StartedJob>(
            ctx, SchedulePath(f->name) + "/start", json{{"args", args}, {"force", f->force}},
            [&] { return trigd::StartRun(ctx.config.pg, f->name, args, f->force, OsActor()); }, StartedFromJson);
        if (!r.ok()) return Fail(r.status(), "runs start");
        return PrintStarted(ctx, *r, "runs start");
      });
  start->add_option("NAME", f->name, "namespace/name");
  trigd::FlagValue(
      start->add_option("--args", f->args, "a JSON object merged key by key over program.args, for this run only")
          ->type_name("JSON"));
  start->add_flag("--force", f->force, "launch regardless of the schedule's constraints");

  CLI::App* cancel = ctx.Verb(
      *runs, "cancel", "stop a run: it ends killed (reason cancelled) and its worker stops the command", [&ctx, f] {
        if (f->run_id.empty()) return ctx.Usage("expects one RUN_ID");
        json body = json::object();
        if (f->reason) body["reason"] = *f->reason;
        auto r = Operate<trigd::CancelledRun>(
            ctx, RunPath(f->run_id, "cancel"), body,
            [&] {
              return trigd::CancelRun(ctx.config.pg, ctx.config.topic_prefix, f->run_id, f->reason.value_or(""),
                                      OsActor());
            },
            CancelledFromJson);
        if (!r.ok()) return Fail(r.status(), "runs cancel");
        std::cout << (ctx.as_json ? r->ToJson().dump()
                                  : "cancelled run " + r->run_id + " of " + r->schedule + " (was " + r->previous_state +
                                        ", attempt " + std::to_string(r->attempt) + ")")
                  << "\n";
        return 0;
      });
  cancel->add_option("RUN_ID", f->run_id, "run id");
  trigd::FlagValue(cancel->add_option("--reason", f->reason, "why, for the run's history")->type_name("TEXT"));

  CLI::App* rerun = ctx.Verb(
      *runs, "rerun", "a new run of the same job: same triggered_by, the schedule's current version", [&ctx, f] {
        if (f->run_id.empty()) return ctx.Usage("expects one RUN_ID");
        auto r = Operate<trigd::StartedJob>(
            ctx, RunPath(f->run_id, "rerun"), json{{"force", f->force}},
            [&] { return trigd::RerunRun(ctx.config.pg, f->run_id, f->force, OsActor()); }, StartedFromJson);
        if (!r.ok()) return Fail(r.status(), "runs rerun");
        return PrintStarted(ctx, *r, "runs rerun");
      });
  rerun->add_option("RUN_ID", f->run_id, "run id");
  rerun->add_flag("--force", f->force, "launch regardless of the schedule's constraints");
}

}  // namespace trigctl
