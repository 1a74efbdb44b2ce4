// trigctl graph: the dependency graph of the schedules (api/graph.h) as Graphviz DOT or JSON.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "api/graph.h"
#include "app/trigctl/context.h"
#include "core/schedule_parser.h"

namespace trigctl {
namespace {

int Graph(const Context& ctx, const std::optional<std::string>& ns, const std::string& format) {
  if (format != "dot" && format != "json") return Refuse("graph", "unknown --format \"" + format + "\" (dot or json)");
  if (ns) {
    if (trigd::Status s = trigd::CheckIdentifier("namespace", *ns); !s.ok()) return Refuse("graph", s.message());
  }
  auto r = ctx.api ? ctx.api->Call("GET", "/api/v1/graph" + (ns ? "?namespace=" + trigd::ApiClient::Encode(*ns) : ""))
                   : trigd::QueryDependencyGraph(ctx.config.pg, ns, [](const std::string&) { return true; });
  if (!r.ok()) return Fail(r.status(), "graph");
  if (format == "json" || ctx.as_json) {
    std::cout << r->dump() << "\n";
  } else {
    std::cout << trigd::DependencyGraphDot(*r);
  }
  for (const auto& p : (*r).value("problems", json::array())) {
    std::cerr << "trigctl graph: " << p.value("path", "") << " left out: " << p.value("message", "") << "\n";
  }
  return 0;
}

}  // namespace

void AddGraph(CLI::App& root, Context& ctx) {
  struct Flags {
    std::optional<std::string> ns;
    std::string format = "dot";
  };
  auto f = std::make_shared<Flags>();
  CLI::App* graph = root.add_subcommand(
      "graph", "the dependency graph: schedules, datasets, events and programs, edges by trigger leaf");
  graph->allow_extras();
  trigd::FlagValue(
      graph->add_option("--namespace", f->ns, "only this namespace's schedules and their neighbours")->type_name("NS"));
  trigd::FlagValue(graph->add_option("--format", f->format, "dot (Graphviz, the default) or json")->type_name("F"));
  ctx.commands[graph] = [&ctx, f] { return Graph(ctx, f->ns, f->format); };
}

}  // namespace trigctl
