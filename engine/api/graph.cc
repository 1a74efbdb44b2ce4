#include "api/graph.h"

#include <map>
#include <vector>

#include "api/why.h"
#include "core/dependency_graph.h"
#include "core/schedule_parser.h"
#include "store/admin.h"

namespace trigd {

using nlohmann::json;

namespace {

std::string NamespaceOf(const std::string& schedule) { return schedule.substr(0, schedule.find('/')); }

// The reachable schedules' graph, and each one's stored row by name.
struct StoredGraph {
  std::vector<Schedule> schedules;
  std::map<std::string, json> rows;
  DependencyGraph graph;
  json problems = json::array();
};

Result<StoredGraph> ReadGraph(const std::string& pg, const ReachesNamespace& reaches) {
  auto rows = QueryScheduleGraphRows(pg);
  if (!rows.ok()) return rows.status();
  StoredGraph g;
  g.schedules.reserve(rows->size());
  for (json& row : *rows) {
    const std::string name = row.value("name", "");
    if (!reaches(NamespaceOf(name))) continue;
    ParsedSchedule parsed = ParseSchedule(row["document"]);
    if (!parsed.ok()) {
      g.problems.push_back({{"path", name}, {"message", parsed.errors[0].path + ": " + parsed.errors[0].reason}});
      continue;
    }
    row.erase("document");
    g.schedules.push_back(std::move(parsed.schedule));
    g.rows[name] = std::move(row);
  }
  std::vector<const Schedule*> pointers;
  for (const Schedule& s : g.schedules) pointers.push_back(&s);
  g.graph = BuildDependencyGraph(pointers);
  return g;
}

// `jobs why` in one line: the first unmet leaf that holds the job up, else the first constraint
// that fails, else the summary.
std::string OneLineWhy(const json& e) {
  for (const json& t : e.value("trigger", json::array())) {
    if (!t.value("satisfied", true) && t.value("needed", true)) {
      return "waits on " + t.value("path", std::string("trigger")) + ": " + t.value("detail", "");
    }
  }
  for (const json& c : e.value("constraints", json::array())) {
    if (c.value("result", "") != "satisfied") return c.value("constraint", "") + ": " + c.value("reason", "");
  }
  return e.value("summary", "");
}

}  // namespace

Result<json> QueryDependencyGraph(const std::string& pg, const std::optional<std::string>& ns,
                                  const ReachesNamespace& reaches) {
  auto stored = ReadGraph(pg, reaches);
  if (!stored.ok()) return stored.status();
  const DependencyGraph graph = ns ? FilterByNamespace(stored->graph, *ns) : stored->graph;
  json nodes = json::array(), edges = json::array();
  for (const GraphNode& n : graph.nodes) {
    json node = {{"id", n.id}, {"kind", GraphNodeKindName(n.kind)}, {"name", n.name}};
    if (n.kind == GraphNodeKind::kSchedule) {
      const json& row = stored->rows[n.name];
      node["namespace"] = n.namespace_;
      node["program"] = n.program;
      node["time"] = n.time.empty() ? json() : json(n.time);
      node["state"] = row.value("state", "");
      node["open_jobs"] = row.value("open_jobs", 0);
      node["last_run_state"] = row.contains("last_run_state") ? row["last_run_state"] : json();
    }
    nodes.push_back(std::move(node));
  }
  for (const GraphEdge& e : graph.edges) {
    edges.push_back({{"from", e.from}, {"to", e.to}, {"kind", GraphEdgeKindName(e.kind)}});
  }
  return json{{"namespace", ns ? json(*ns) : json()},
              {"nodes", std::move(nodes)},
              {"edges", std::move(edges)},
              {"problems", stored->problems}};
}

Result<json> QueryLineageGraph(const std::string& pg, const json& lineage, const ReachesNamespace& reaches) {
  auto stored = ReadGraph(pg, reaches);
  if (!stored.ok()) return stored.status();
  std::vector<LineageGraphRun> runs;
  for (const json& r : lineage.value("runs", json::array())) {
    LineageGraphRun& run = runs.emplace_back();
    run.run_id = r.value("run_id", "");
    run.schedule = r.value("schedule", "");
    run.program = r.value("program", "");
    run.state = RunStateFromName(r.value("state", "")).value_or(RunState::kRunning);
    run.reason = r["reason"].is_string() ? r["reason"].get<std::string>() : "";
    run.attempt = r.value("attempt", 1);
    run.upstream = r.value("upstream", std::vector<std::string>{});
  }
  std::vector<LineageGraphJob> jobs;
  for (const json& j : lineage.value("jobs", json::array()))
    jobs.push_back({j.value("id", int64_t{0}), j.value("schedule", "")});
  const LineageGraph g = BuildLineageGraph(runs, jobs, stored->graph);
  json nodes = json::array(), edges = json::array();
  for (const LineageGraphNode& n : g.nodes) {
    json node = {{"id", n.id},
                 {"state", LineageNodeStateName(n.state)},
                 {"schedule", n.schedule},
                 {"program", n.program},
                 {"run_id", n.run_id.empty() ? json() : json(n.run_id)},
                 {"job_id", n.job_id ? json(n.job_id) : json()},
                 {"attempt", n.attempt ? json(n.attempt) : json()},
                 {"detail", n.detail.empty() ? json() : json(n.detail)},
                 {"why", json()}};
    if (n.state == LineageNodeState::kWaiting && n.job_id) {
      auto in = InspectJob(pg, n.job_id);
      if (in.ok()) node["why"] = OneLineWhy(ExplainJob(*in));
    }
    nodes.push_back(std::move(node));
  }
  for (const auto& [from, to] : g.edges) edges.push_back({{"from", from}, {"to", to}});
  return json{{"lineage", lineage.value("lineage", "")},
              {"state", lineage.value("state", "")},
              {"nodes", std::move(nodes)},
              {"edges", std::move(edges)}};
}

namespace {

// Fill colours by state; the label says the state in words as well.
std::string FillOf(const std::string& state) {
  static const std::map<std::string, std::string> fills = {
      {"succeeded", "#e3f5ea"}, {"failed", "#fbe7e5"},    {"cancelled", "#f3e3f5"},
      {"skipped", "#eceff3"},   {"running", "#fdf3e1"},   {"launched", "#e6eefc"},
      {"waiting", "#fffbe6"},   {"suspended", "#eceff3"}, {"active", "#ffffff"}};
  auto it = fills.find(state);
  return it == fills.end() ? "#ffffff" : it->second;
}

std::string Text(const json& v) { return v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump(); }

}  // namespace

std::string DependencyGraphDot(const json& graph) {
  std::vector<DotNode> nodes;
  std::vector<DotEdge> edges;
  for (const json& n : graph.value("nodes", json::array())) {
    const std::string kind = n.value("kind", "");
    DotNode d{n.value("id", ""), n.value("name", ""), {}};
    if (kind == "schedule") {
      d.label += "\n" + n.value("state", "") + ", " + std::to_string(n.value("open_jobs", 0)) + " open job(s)";
      if (!n["last_run_state"].is_null()) d.label += "\nlast run " + Text(n["last_run_state"]);
      d.attributes = {{"fillcolor", FillOf(Text(n["last_run_state"]))}};
      if (n.value("state", "") == "suspended") d.attributes.push_back({"style", "rounded,filled,dashed"});
    } else {
      d.label = kind + "\n" + d.label;
      d.attributes = {{"shape", kind == "dataset" ? "cylinder" : kind == "event" ? "hexagon" : "ellipse"}};
    }
    nodes.push_back(std::move(d));
  }
  for (const json& e : graph.value("edges", json::array())) {
    edges.push_back({e.value("from", ""), e.value("to", ""), {{"label", e.value("kind", "")}}});
  }
  return WriteDot("dependencies", nodes, edges);
}

std::string LineageGraphDot(const json& graph) {
  std::vector<DotNode> nodes;
  std::vector<DotEdge> edges;
  for (const json& n : graph.value("nodes", json::array())) {
    const std::string state = n.value("state", "");
    std::string label = n.value("schedule", "") + "\n" + (state == "skipped" ? "skipped (upstream failed)" : state);
    if (!n["why"].is_null() && !Text(n["why"]).empty()) label += "\n" + Text(n["why"]);
    if (!n["run_id"].is_null()) label += "\n" + Text(n["run_id"]);
    if (!n["job_id"].is_null()) label += "\njob " + Text(n["job_id"]);
    nodes.push_back({n.value("id", ""), label, {{"fillcolor", FillOf(state)}}});
  }
  for (const json& e : graph.value("edges", json::array()))
    edges.push_back({e.value("from", ""), e.value("to", ""), {}});
  return WriteDot("lineage " + graph.value("lineage", ""), nodes, edges);
}

}  // namespace trigd
