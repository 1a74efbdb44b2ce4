#include "core/dependency_graph.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/time.h"

namespace trigd {

const char* GraphNodeKindName(GraphNodeKind k) {
  switch (k) {
    case GraphNodeKind::kSchedule: return "schedule";
    case GraphNodeKind::kDataset: return "dataset";
    case GraphNodeKind::kEvent: return "event";
    case GraphNodeKind::kProgram: return "program";
  }
  return "schedule";
}

const char* GraphEdgeKindName(GraphEdgeKind k) {
  switch (k) {
    case GraphEdgeKind::kPartition: return "partition";
    case GraphEdgeKind::kProgram: return "program";
    case GraphEdgeKind::kEvent: return "event";
    case GraphEdgeKind::kSilence: return "silence";
  }
  return "partition";
}

std::string GraphNodeId(GraphNodeKind kind, std::string_view name) {
  return std::string(GraphNodeKindName(kind)) + ":" + std::string(name);
}

namespace {

std::string TimeText(const TimeTrigger& t) {
  if (t.cron) return "cron " + *t.cron + (t.timezone == "UTC" ? "" : " " + t.timezone);
  if (t.every) return "every " + FormatDuration(*t.every);
  return "";
}

bool EdgeLess(const GraphEdge& a, const GraphEdge& b) {
  return std::tie(a.from, a.to, a.kind) < std::tie(b.from, b.to, b.kind);
}

}  // namespace

DependencyGraph BuildDependencyGraph(const std::vector<const Schedule*>& schedules) {
  DependencyGraph g;
  std::map<std::string, std::vector<std::string>> runners;  // program -> schedule node ids
  for (const Schedule* s : schedules)
    runners[s->program.name].push_back(GraphNodeId(GraphNodeKind::kSchedule, s->id().value()));
  std::map<std::string, GraphNode> others;  // by id: sorted
  auto other = [&](GraphNodeKind kind, const std::string& name) {
    std::string id = GraphNodeId(kind, name);
    others.try_emplace(id, GraphNode{id, kind, name, "", "", ""});
    return id;
  };
  std::set<GraphEdge, decltype(&EdgeLess)> edges(&EdgeLess);
  for (const Schedule* s : schedules) {
    GraphNode& node = g.nodes.emplace_back();
    node.kind = GraphNodeKind::kSchedule;
    node.name = s->id().value();
    node.id = GraphNodeId(GraphNodeKind::kSchedule, node.name);
    node.namespace_ = s->namespace_name;
    node.program = s->program.name;
    for (const Trigger* leaf : TriggerLeaves(s->trigger)) {
      switch (leaf->kind) {
        case TriggerKind::kTime: node.time = TimeText(leaf->time); break;
        case TriggerKind::kPartition:
          edges.insert({other(GraphNodeKind::kDataset, leaf->partition.dataset), node.id, GraphEdgeKind::kPartition});
          break;
        case TriggerKind::kEvent:
          edges.insert({other(GraphNodeKind::kEvent, leaf->event.name), node.id, GraphEdgeKind::kEvent});
          break;
        case TriggerKind::kSilence:
          edges.insert({leaf->silence.dataset ? other(GraphNodeKind::kDataset, *leaf->silence.dataset)
                                              : other(GraphNodeKind::kEvent, leaf->silence.event.value_or("")),
                        node.id, GraphEdgeKind::kSilence});
          break;
        case TriggerKind::kProgram: {
          auto it = runners.find(leaf->program.program);
          if (it == runners.end()) {
            edges.insert({other(GraphNodeKind::kProgram, leaf->program.program), node.id, GraphEdgeKind::kProgram});
          } else {
            for (const std::string& up : it->second) edges.insert({up, node.id, GraphEdgeKind::kProgram});
          }
          break;
        }
        case TriggerKind::kAll:
        case TriggerKind::kAny: break;  // not leaves
      }
    }
  }
  for (auto& [id, n] : others) g.nodes.push_back(std::move(n));
  g.edges.assign(edges.begin(), edges.end());
  return g;
}

DependencyGraph FilterByNamespace(const DependencyGraph& graph, std::string_view ns) {
  std::set<std::string> own, kept;
  for (const GraphNode& n : graph.nodes) {
    if (n.kind == GraphNodeKind::kSchedule && n.namespace_ == ns) own.insert(n.id);
  }
  DependencyGraph out;
  for (const GraphEdge& e : graph.edges) {
    if (!own.count(e.from) && !own.count(e.to)) continue;
    out.edges.push_back(e);
    kept.insert(e.from);
    kept.insert(e.to);
  }
  for (const GraphNode& n : graph.nodes) {
    if (own.count(n.id) || kept.count(n.id)) out.nodes.push_back(n);
  }
  return out;
}

const char* LineageNodeStateName(LineageNodeState s) {
  switch (s) {
    case LineageNodeState::kWaiting: return "waiting";
    case LineageNodeState::kLaunched: return "launched";
    case LineageNodeState::kRunning: return "running";
    case LineageNodeState::kSucceeded: return "succeeded";
    case LineageNodeState::kFailed: return "failed";
    case LineageNodeState::kCancelled: return "cancelled";
    case LineageNodeState::kSkipped: return "skipped";
  }
  return "waiting";
}

LineageNodeState LineageNodeStateOfRun(RunState run_state) {
  switch (run_state) {
    case RunState::kLaunched: return LineageNodeState::kLaunched;
    case RunState::kRunning:
    case RunState::kRetryWait: return LineageNodeState::kRunning;
    case RunState::kSucceeded: return LineageNodeState::kSucceeded;
    case RunState::kFailed: return LineageNodeState::kFailed;
    case RunState::kKilled: return LineageNodeState::kCancelled;
  }
  return LineageNodeState::kRunning;
}

LineageGraph BuildLineageGraph(const std::vector<LineageGraphRun>& runs, const std::vector<LineageGraphJob>& jobs,
                               const DependencyGraph& deps) {
  LineageGraph g;
  std::set<std::pair<std::string, std::string>> edges;
  std::map<std::string, std::string> run_node;   // run id -> node id
  std::map<std::string, std::string> newest_of;  // schedule -> its newest node in the lineage
  std::set<std::string> present;                 // schedules with a run or job in the lineage
  std::map<std::string, std::string> job_of;     // schedule -> its waiting job's node id
  for (const LineageGraphRun& r : runs) run_node[r.run_id] = "run:" + r.run_id;
  for (const LineageGraphRun& r : runs) {
    LineageGraphNode& n = g.nodes.emplace_back();
    n.id = run_node[r.run_id];
    n.state = LineageNodeStateOfRun(r.state);
    n.schedule = r.schedule;
    n.program = r.program;
    n.run_id = r.run_id;
    n.attempt = r.attempt;
    n.detail = r.state == RunState::kRetryWait ? "retry wait" : r.reason;
    for (const std::string& up : r.upstream) {
      if (auto it = run_node.find(up); it != run_node.end()) edges.insert({it->second, n.id});
    }
    newest_of[r.schedule] = n.id;  // runs are given in launch order
    present.insert(r.schedule);
  }
  // Upstream schedules of each schedule through program edges, and downstream ones.
  std::map<std::string, std::vector<std::string>> ups, downs;  // schedule name -> names
  std::map<std::string, std::string> program_of;
  const std::string prefix = GraphNodeId(GraphNodeKind::kSchedule, "");
  auto name_of = [&](const std::string& id) { return id.substr(prefix.size()); };
  for (const GraphNode& n : deps.nodes) {
    if (n.kind == GraphNodeKind::kSchedule) program_of[n.name] = n.program;
  }
  for (const GraphEdge& e : deps.edges) {
    if (e.kind != GraphEdgeKind::kProgram || !e.from.starts_with(prefix)) continue;
    ups[name_of(e.to)].push_back(name_of(e.from));
    downs[name_of(e.from)].push_back(name_of(e.to));
  }
  for (const LineageGraphJob& j : jobs) {
    LineageGraphNode& n = g.nodes.emplace_back();
    n.id = "job:" + std::to_string(j.id);
    n.state = LineageNodeState::kWaiting;
    n.schedule = j.schedule;
    n.program = program_of.count(j.schedule) ? program_of[j.schedule] : "";
    n.job_id = j.id;
    for (const std::string& up : ups[j.schedule]) {
      if (auto it = newest_of.find(up); it != newest_of.end()) edges.insert({it->second, n.id});
    }
    present.insert(j.schedule);
    job_of[j.schedule] = n.id;
  }
  // Skipped: downstream of a failed, cancelled or skipped node, in the order found.
  std::vector<std::string> todo;
  for (const LineageGraphNode& n : g.nodes) {
    const bool bad = n.state == LineageNodeState::kFailed || n.state == LineageNodeState::kCancelled;
    if (bad && newest_of[n.schedule] == n.id) todo.push_back(n.schedule);
  }
  std::map<std::string, std::string> skipped;  // schedule -> node id
  for (size_t i = 0; i < todo.size(); ++i) {
    const std::string from = todo[i];
    const std::string from_id = newest_of.count(from) ? newest_of[from] : skipped[from];
    for (const std::string& down : downs[from]) {
      if (present.count(down)) {
        // A job waiting downstream of a skipped node hangs under it too.
        if (auto job = job_of.find(down); job != job_of.end() && skipped.count(from))
          edges.insert({from_id, job->second});
        continue;
      }
      auto [it, added] = skipped.try_emplace(down, "skipped:" + down);
      edges.insert({from_id, it->second});
      if (!added) continue;
      LineageGraphNode n;
      n.id = it->second;
      n.state = LineageNodeState::kSkipped;
      n.schedule = down;
      n.program = program_of[down];
      n.detail = "upstream " + from + " did not succeed";
      g.nodes.push_back(std::move(n));
      todo.push_back(down);
    }
  }
  g.edges.assign(edges.begin(), edges.end());
  return g;
}

namespace {

// A DOT double-quoted string: `"` and `\` escaped, newlines as \n (a centred line break).
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c != '\r') {
      out += c;
    }
  }
  return out + "\"";
}

std::string Attributes(const std::vector<std::pair<std::string, std::string>>& attributes, const std::string* label) {
  std::string out;
  if (label) out += "label=" + Quote(*label);
  for (const auto& [k, v] : attributes) out += (out.empty() ? "" : ", ") + k + "=" + Quote(v);
  return out.empty() ? "" : " [" + out + "]";
}

}  // namespace

std::string WriteDot(std::string_view name, const std::vector<DotNode>& nodes, const std::vector<DotEdge>& edges) {
  std::string out =
      "digraph " + Quote(name) +
      " {\n  rankdir=LR;\n  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\"];\n";
  for (const DotNode& n : nodes) out += "  " + Quote(n.id) + Attributes(n.attributes, &n.label) + ";\n";
  for (const DotEdge& e : edges)
    out += "  " + Quote(e.from) + " -> " + Quote(e.to) + Attributes(e.attributes, nullptr) + ";\n";
  return out + "}\n";
}

}  // namespace trigd
