// The dependency graph from parsed trigger trees, its namespace filter, the graph of a lineage
// (runs, waiting jobs, nodes an upstream failure skipped) and the DOT writer.
#include "core/dependency_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/schedule_parser.h"

namespace trigd {
namespace {

using nlohmann::json;

Schedule Parse(const std::string& ns, const std::string& name, const std::string& program, json trigger) {
  ParsedSchedule p = ParseSchedule(
      json{{"namespace", ns}, {"name", name}, {"program", {{"name", program}}}, {"trigger", std::move(trigger)}});
  EXPECT_TRUE(p.ok()) << (p.errors.empty() ? "" : p.errors[0].path + ": " + p.errors[0].reason);
  return p.schedule;
}

json On(const std::string& program) { return {{"program", {{"name", program}}}}; }

std::vector<const Schedule*> Pointers(const std::vector<Schedule>& s) {
  std::vector<const Schedule*> out;
  for (const Schedule& x : s) out.push_back(&x);
  return out;
}

bool HasEdge(const DependencyGraph& g, const std::string& from, const std::string& to, GraphEdgeKind kind) {
  return std::count(g.edges.begin(), g.edges.end(), GraphEdge{from, to, kind}) == 1;
}

const GraphNode* Node(const DependencyGraph& g, const std::string& id) {
  for (const GraphNode& n : g.nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

TEST(DependencyGraphTest, EachLeafKindGivesItsEdgeFromTheParsedTree) {
  std::vector<Schedule> s = {
      Parse("etl", "load", "etl.load", {{"partition", {{"dataset", "raw.orders"}}}}),
      Parse("etl", "report", "etl.report",
            {{"all",
              {On("etl.load"),
               {{"event", {{"name", "approved"}}}},
               {{"any",
                 {{{"time", {{"cron", "0 6 * * *"}}}}, {{"silence", {{"dataset", "raw.late"}, {"for", "1h"}}}}}}}}}}),
      Parse("ext", "after", "ext.after", On("vendor.export")),
  };
  DependencyGraph g = BuildDependencyGraph(Pointers(s));
  EXPECT_TRUE(HasEdge(g, "dataset:raw.orders", "schedule:etl/load", GraphEdgeKind::kPartition));
  EXPECT_TRUE(HasEdge(g, "schedule:etl/load", "schedule:etl/report", GraphEdgeKind::kProgram));
  EXPECT_TRUE(HasEdge(g, "event:approved", "schedule:etl/report", GraphEdgeKind::kEvent));
  EXPECT_TRUE(HasEdge(g, "dataset:raw.late", "schedule:etl/report", GraphEdgeKind::kSilence));
  // A program no schedule runs is a node of its own.
  EXPECT_TRUE(HasEdge(g, "program:vendor.export", "schedule:ext/after", GraphEdgeKind::kProgram));
  EXPECT_EQ(g.edges.size(), 5u);
  ASSERT_NE(Node(g, "schedule:etl/report"), nullptr);
  EXPECT_EQ(Node(g, "schedule:etl/report")->time, "cron 0 6 * * *");
  EXPECT_EQ(Node(g, "schedule:etl/report")->namespace_, "etl");
  EXPECT_EQ(Node(g, "dataset:raw.orders")->kind, GraphNodeKind::kDataset);
  EXPECT_EQ(g.nodes.size(), 3u + 4u);  // three schedules; two datasets, an event, a program
}

TEST(DependencyGraphTest, AProgramRunByTwoSchedulesGivesAnEdgeFromEachAndRepeatsNone) {
  std::vector<Schedule> s = {
      Parse("a", "x1", "shared", {{"partition", {{"dataset", "d"}}}}),
      Parse("a", "x2", "shared", {{"partition", {{"dataset", "d"}}}}),
      Parse("a", "down", "down", {{"all", {On("shared"), {{"program", {{"name", "shared"}, {"count", 2}}}}}}}),
  };
  DependencyGraph g = BuildDependencyGraph(Pointers(s));
  EXPECT_TRUE(HasEdge(g, "schedule:a/x1", "schedule:a/down", GraphEdgeKind::kProgram));
  EXPECT_TRUE(HasEdge(g, "schedule:a/x2", "schedule:a/down", GraphEdgeKind::kProgram));
  EXPECT_EQ(g.edges.size(), 4u);
}

TEST(DependencyGraphTest, NamespaceFilterKeepsItsSchedulesAndTheirNeighboursOnly) {
  std::vector<Schedule> s = {
      Parse("up", "source", "up.source", {{"partition", {{"dataset", "d1"}}}}),
      Parse("down", "sink", "down.sink", On("up.source")),
      Parse("other", "alone", "other.alone", {{"partition", {{"dataset", "d2"}}}}),
  };
  DependencyGraph g = FilterByNamespace(BuildDependencyGraph(Pointers(s)), "down");
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_NE(Node(g, "schedule:down/sink"), nullptr);
  EXPECT_NE(Node(g, "schedule:up/source"), nullptr);  // its upstream, one edge away
  EXPECT_EQ(g.edges.size(), 1u);
  EXPECT_TRUE(FilterByNamespace(BuildDependencyGraph(Pointers(s)), "none").nodes.empty());
}

// The nine-program DAG: p1 -> p2, p3; p2 -> p4, p5; p3 -> p6; p4 -> p7; p5 + p6 -> p8; p7 -> p9.
std::vector<Schedule> NineNodes() {
  std::vector<Schedule> s = {Parse("dag", "p1", "dag.p1", {{"partition", {{"dataset", "raw"}}}})};
  const std::vector<std::pair<std::string, std::vector<std::string>>> ups = {
      {"p2", {"p1"}}, {"p3", {"p1"}}, {"p4", {"p2"}},       {"p5", {"p2"}},
      {"p6", {"p3"}}, {"p7", {"p4"}}, {"p8", {"p5", "p6"}}, {"p9", {"p7"}}};
  for (const auto& [n, u] : ups) {
    json leaves = json::array();
    for (const auto& x : u) leaves.push_back(On("dag." + x));
    s.push_back(Parse("dag", n, "dag." + n, leaves.size() == 1 ? leaves[0] : json{{"all", leaves}}));
  }
  return s;
}

LineageGraphRun RunOf(const std::string& p, RunState state, std::vector<std::string> upstream) {
  return {"r-" + p, "dag/" + p, "dag." + p, "", state, 1, std::move(upstream)};
}

const LineageGraphNode* LNode(const LineageGraph& g, const std::string& id) {
  for (const LineageGraphNode& n : g.nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

bool LEdge(const LineageGraph& g, const std::string& from, const std::string& to) {
  return std::count(g.edges.begin(), g.edges.end(), std::make_pair(from, to)) == 1;
}

TEST(LineageGraphTest, AFailedNodeSkipsEveryScheduleDownstreamWithoutARun) {
  std::vector<Schedule> s = NineNodes();
  DependencyGraph deps = BuildDependencyGraph(Pointers(s));
  std::vector<LineageGraphRun> runs = {RunOf("p1", RunState::kSucceeded, {}),
                                       RunOf("p2", RunState::kSucceeded, {"r-p1"}),
                                       RunOf("p3", RunState::kSucceeded, {"r-p1"}),
                                       RunOf("p4", RunState::kFailed, {"r-p2"}),
                                       RunOf("p5", RunState::kSucceeded, {"r-p2"}),
                                       RunOf("p6", RunState::kSucceeded, {"r-p3"}),
                                       RunOf("p8", RunState::kSucceeded, {"r-p5", "r-p6"})};
  LineageGraph g = BuildLineageGraph(runs, {}, deps);
  ASSERT_EQ(g.nodes.size(), 9u);
  EXPECT_EQ(LNode(g, "run:r-p4")->state, LineageNodeState::kFailed);
  ASSERT_NE(LNode(g, "skipped:dag/p7"), nullptr);
  ASSERT_NE(LNode(g, "skipped:dag/p9"), nullptr);
  EXPECT_EQ(LNode(g, "skipped:dag/p7")->state, LineageNodeState::kSkipped);
  EXPECT_EQ(LNode(g, "skipped:dag/p9")->detail, "upstream dag/p7 did not succeed");
  EXPECT_TRUE(LEdge(g, "run:r-p4", "skipped:dag/p7"));
  EXPECT_TRUE(LEdge(g, "skipped:dag/p7", "skipped:dag/p9"));
  EXPECT_TRUE(LEdge(g, "run:r-p5", "run:r-p8"));
  EXPECT_TRUE(LEdge(g, "run:r-p6", "run:r-p8"));
  EXPECT_EQ(g.edges.size(), 9u);
  // A job of p9 waiting (its leaf waits on upstream failures): not skipped, under skipped p7.
  LineageGraph waiting = BuildLineageGraph(runs, {{50, "dag/p9"}}, deps);
  EXPECT_EQ(LNode(waiting, "skipped:dag/p9"), nullptr);
  EXPECT_TRUE(LEdge(waiting, "skipped:dag/p7", "job:50"));
}

TEST(LineageGraphTest, AWaitingJobHangsUnderTheNewestRunOfEachUpstreamSchedule) {
  std::vector<Schedule> s = NineNodes();
  DependencyGraph deps = BuildDependencyGraph(Pointers(s));
  std::vector<LineageGraphRun> runs = {
      RunOf("p1", RunState::kSucceeded, {}), RunOf("p2", RunState::kSucceeded, {"r-p1"}),
      RunOf("p3", RunState::kSucceeded, {"r-p1"}), RunOf("p5", RunState::kRetryWait, {"r-p2"}),
      RunOf("p6", RunState::kKilled, {"r-p3"})};
  runs[3].reason = "";
  std::vector<LineageGraphJob> jobs = {{42, "dag/p8"}, {43, "dag/p4"}};
  LineageGraph g = BuildLineageGraph(runs, jobs, deps);
  EXPECT_EQ(LNode(g, "run:r-p5")->state, LineageNodeState::kRunning);
  EXPECT_EQ(LNode(g, "run:r-p5")->detail, "retry wait");
  EXPECT_EQ(LNode(g, "run:r-p6")->state, LineageNodeState::kCancelled);
  ASSERT_NE(LNode(g, "job:42"), nullptr);
  EXPECT_EQ(LNode(g, "job:42")->state, LineageNodeState::kWaiting);
  EXPECT_EQ(LNode(g, "job:42")->job_id, 42);
  EXPECT_TRUE(LEdge(g, "run:r-p5", "job:42"));
  EXPECT_TRUE(LEdge(g, "run:r-p6", "job:42"));
  EXPECT_TRUE(LEdge(g, "run:r-p2", "job:43"));
  // p8 waits (a job of it is open): the cancelled p6 does not mark it skipped.
  EXPECT_EQ(LNode(g, "skipped:dag/p8"), nullptr);
}

TEST(DotTest, NamesAndLabelsAreQuotedSoAnyTextIsSafe) {
  std::string dot = WriteDot("g", {{"schedule:a/\"x\"", "line1\nline2 \\", {{"color", "red"}}}, {"b", "b", {}}},
                             {{"schedule:a/\"x\"", "b", {{"style", "dashed"}}}});
  EXPECT_NE(dot.find("\"schedule:a/\\\"x\\\"\" [label=\"line1\\nline2 \\\\\", color=\"red\"];"), std::string::npos)
      << dot;
  EXPECT_NE(dot.find("\"schedule:a/\\\"x\\\"\" -> \"b\" [style=\"dashed\"];"), std::string::npos) << dot;
  EXPECT_EQ(dot.rfind("digraph \"g\" {", 0), 0u);
  EXPECT_EQ(dot.back(), '\n');
}

}  // namespace
}  // namespace trigd
