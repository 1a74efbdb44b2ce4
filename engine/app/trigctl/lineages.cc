// trigctl lineages: list, show (SPEC §10). The queries are store/lineages.h's (JSON values the
// HTTP API serves as they are); this file only prints them.
#include <iostream>
#include <memory>
#include <string>

#include "api/graph.h"
#include "app/trigctl/context.h"
#include "store/lineages.h"

namespace trigctl {
namespace {

int LineagesList(const Context& ctx, const std::optional<std::string>& state_flag,
                 const std::optional<std::string>& limit_flag) {
  auto limit = Limit(limit_flag);
  if (!limit) return Refuse("lineages list", "--limit must be a positive integer, got \"" + *limit_flag + "\"");
  std::optional<trigd::LineageState> state;
  if (state_flag) {
    state = trigd::LineageStateFromName(*state_flag);
    if (!state) {
      return Refuse("lineages list",
                    "unknown lineage state \"" + *state_flag + "\" (one of running, succeeded, failed)");
    }
  }
  auto r = ctx.api ? ApiList(ctx, "/api/v1/lineages",
                             state_flag ? "state=" + trigd::ApiClient::Encode(*state_flag) : "", *limit)
                   : trigd::QueryLineages(ctx.config.pg, state, *limit);
  if (!r.ok()) return Fail(r.status(), "lineages list");
  PrintRows(*r, {"lineage", "state", "started_at", "runs", "active_runs", "failed_runs", "open_jobs"}, ctx.as_json);
  return 0;
}

std::string Text(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// --format dot: the lineage's graph (api/graph.h), as the console draws it.
int LineageDot(const Context& ctx, const std::string& id) {
  trigd::Result<json> g = ctx.api ? ctx.api->Call("GET", "/api/v1/lineages/" + trigd::ApiClient::Encode(id) + "/graph")
                                  : trigd::Result<json>(json());
  if (!ctx.api) {
    auto l = trigd::QueryLineage(ctx.config.pg, id);
    if (!l.ok()) return Fail(l.status(), "lineages show");
    g = trigd::QueryLineageGraph(ctx.config.pg, *l, [](const std::string&) { return true; });
  }
  if (!g.ok()) return Fail(g.status(), "lineages show");
  std::cout << trigd::LineageGraphDot(*g);
  return 0;
}

int LineagesShow(const Context& ctx, const std::string& id, const std::string& format) {
  if (id.empty()) return ctx.Usage("expects one lineage or run ID");
  if (format != "table" && format != "json" && format != "dot")
    return Refuse("lineages show", "unknown --format \"" + format + "\" (table, json or dot)");
  if (format == "dot") return LineageDot(ctx, id);
  auto r = ctx.api ? ctx.api->Call("GET", "/api/v1/lineages/" + trigd::ApiClient::Encode(id))
                   : trigd::QueryLineage(ctx.config.pg, id);
  if (!r.ok()) return Fail(r.status(), "lineages show");
  if (ctx.as_json || format == "json") {
    std::cout << r->dump() << "\n";
    return 0;
  }
  const json& l = *r;
  std::cout << "lineage     " << Text(l["lineage"]) << "\n"
            << "state       " << Text(l["state"]) << "\n"
            << "started_at  " << Text(l["started_at"]) << "\n"
            << "runs        " << Text(l["run_count"]) << " (" << Text(l["active_runs"]) << " active, "
            << Text(l["failed_runs"]) << " failed or killed), open jobs " << Text(l["open_jobs"]) << "\n\n";
  // The tree: each run indented under its upstream run.
  json rows = json::array();
  for (const json& run : l["runs"]) {
    json row = run;
    row["program"] = std::string(2 * run.value("depth", 0), ' ') + Text(run["program"]);
    rows.push_back(std::move(row));
  }
  PrintRows(rows, {"program", "run_id", "state", "attempt", "launched_at", "finished_at", "worker"}, false);
  if (!l["jobs"].empty()) {
    std::cout << "\nopen jobs\n";
    PrintRows(l["jobs"], {"id", "schedule", "state", "opened_at"}, false);
  }
  return 0;
}

}  // namespace

void AddLineages(CLI::App& root, Context& ctx) {
  CLI::App* lineages = Noun(root, "lineages", "lineages: DAG runs, the runs descending from one root run");
  struct Flags {
    std::optional<std::string> state, limit;
    std::string id;
    std::string format = "table";
  };
  auto f = std::make_shared<Flags>();
  CLI::App* list = ctx.Verb(*lineages, "list", "lineages, newest first",
                            [&ctx, f] { return LineagesList(ctx, f->state, f->limit); });
  trigd::FlagValue(list->add_option("--state", f->state, "running, succeeded or failed")->type_name("S"));
  AddLimit(*list, f->limit, "default: 100");
  CLI::App* show =
      ctx.Verb(*lineages, "show", "one lineage (by its id or any run id in it): its runs as a tree and its state",
               [&ctx, f] { return LineagesShow(ctx, f->id, f->format); });
  show->add_option("ID", f->id, "lineage id or run id");
  trigd::FlagValue(show->add_option("--format", f->format,
                                    "table (the default), json, or dot: its graph of runs, waiting jobs and "
                                    "skipped schedules as Graphviz DOT")
                       ->type_name("F"));
}

}  // namespace trigctl
