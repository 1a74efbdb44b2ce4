// The dependency graph of schedules and the graph of one lineage, as the console draws them and
// `trigctl graph` and `trigctl lineages show --format dot` print them. Pure: no I/O.
//
// Dependency graph: nodes are schedules, datasets, custom event names and programs that no
// schedule runs; edges follow the leaves of each schedule's parsed trigger tree:
//   partition leaf  dataset:D        -> schedule:S
//   program leaf    schedule:U       -> schedule:S  (U's program is the leaf's program; when no
//                   program:P        -> schedule:S   schedule runs P, the program is a node)
//   event leaf      event:E          -> schedule:S
//   silence leaf    dataset:D or event:E -> schedule:S
// Time leaves have no edge (the schedule node carries its time trigger).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/run.h"
#include "model/schedule.h"

namespace trigd {

enum class GraphNodeKind { kSchedule, kDataset, kEvent, kProgram };
enum class GraphEdgeKind { kPartition, kProgram, kEvent, kSilence };
const char* GraphNodeKindName(GraphNodeKind k);
const char* GraphEdgeKindName(GraphEdgeKind k);

// A node's id: "<kind>:<name>" ("schedule:dag/p1", "dataset:raw.orders").
std::string GraphNodeId(GraphNodeKind kind, std::string_view name);

struct GraphNode {
  std::string id;
  GraphNodeKind kind = GraphNodeKind::kSchedule;
  std::string name;        // namespace/name of a schedule, else the dataset, event or program
  std::string namespace_;  // a schedule's namespace, empty for other nodes
  std::string program;     // a schedule's program
  std::string time;        // a schedule's time trigger ("cron 0 * * * *", "every 15m"), if any
};

struct GraphEdge {
  std::string from, to;  // node ids
  GraphEdgeKind kind = GraphEdgeKind::kPartition;
  bool operator==(const GraphEdge&) const = default;
};

struct DependencyGraph {
  std::vector<GraphNode> nodes;  // schedules in the order given, then the other nodes by id
  std::vector<GraphEdge> edges;  // each (from, to, kind) once, sorted
};

// The graph of `schedules`. A program leaf's edge comes from every schedule given that runs the
// leaf's program.
DependencyGraph BuildDependencyGraph(const std::vector<const Schedule*>& schedules);

// The schedules of namespace `ns` and every node one edge away from them (an upstream schedule
// of another namespace included), with the edges that touch a schedule of `ns`.
DependencyGraph FilterByNamespace(const DependencyGraph& graph, std::string_view ns);

// A lineage drawn node by node (a DAG run): its runs, its open jobs, and the schedules that an
// upstream failure skipped.
enum class LineageNodeState { kWaiting, kLaunched, kRunning, kSucceeded, kFailed, kCancelled, kSkipped };
const char* LineageNodeStateName(LineageNodeState s);

// A run of the lineage: `upstream` the run ids of the program events that triggered it.
struct LineageGraphRun {
  std::string run_id, schedule, program, reason;
  RunState state = RunState::kLaunched;
  int64_t attempt = 1;
  std::vector<std::string> upstream;
};
// An open or waiting job of the lineage.
struct LineageGraphJob {
  int64_t id = 0;
  std::string schedule;
};

struct LineageGraphNode {
  std::string id;  // "run:<run_id>", "job:<id>" or "skipped:<schedule>"
  LineageNodeState state = LineageNodeState::kWaiting;
  std::string schedule, program;
  std::string run_id;   // a run's
  int64_t job_id = 0;   // a waiting job's
  int64_t attempt = 0;  // a run's
  std::string detail;   // a run's reason, "retry wait", or the failed node a skipped one follows
};
struct LineageGraph {
  std::vector<LineageGraphNode> nodes;                     // runs in the order given, then jobs, then skipped
  std::vector<std::pair<std::string, std::string>> edges;  // (from, to) node ids, each once
};

// The lineage's nodes and edges. A run's edges come from its upstream runs in the lineage; a
// job's from the newest run in the lineage of each schedule upstream of it in `deps`. A schedule
// downstream (in `deps`, through program edges) of a failed, cancelled or skipped node, with
// neither run nor job in the lineage, is a skipped node: an upstream failure left it out.
LineageGraph BuildLineageGraph(const std::vector<LineageGraphRun>& runs, const std::vector<LineageGraphJob>& jobs,
                               const DependencyGraph& deps);

// A node's state: its run's (retry_wait is running, killed is cancelled).
LineageNodeState LineageNodeStateOfRun(RunState run_state);

// Graphviz DOT: a digraph of nodes (id, label, attributes) and edges. Every id, label and value
// is quoted and escaped, so any name is safe in it.
struct DotNode {
  std::string id, label;
  std::vector<std::pair<std::string, std::string>> attributes;
};
struct DotEdge {
  std::string from, to;
  std::vector<std::pair<std::string, std::string>> attributes;
};
std::string WriteDot(std::string_view name, const std::vector<DotNode>& nodes, const std::vector<DotEdge>& edges);

}  // namespace trigd
