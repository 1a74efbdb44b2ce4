// The dependency graph and a lineage's graph as the API serves them (GET /api/v1/graph, GET
// /api/v1/lineages/{id}/graph) and trigctl prints them: the graphs of core/dependency_graph.h
// over the stored schedules, with what each node shows (a schedule's state, open jobs and last
// run; a waiting job's one-line why), and their Graphviz DOT form. Thread-safe: each call reads
// in its own transactions.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace trigd {

// Whether the caller reaches a namespace (an API token's namespaces; trigctl reaches all).
using ReachesNamespace = std::function<bool(const std::string&)>;

// {namespace, nodes: [{id, kind, name, namespace, program, time, state, open_jobs,
// last_run_state}], edges: [{from, to, kind}]} over the schedules the caller reaches; with `ns`,
// its schedules and their neighbours (FilterByNamespace). A stored document that no longer
// parses is left out and named in `problems`.
Result<nlohmann::json> QueryDependencyGraph(const std::string& pg, const std::optional<std::string>& ns,
                                            const ReachesNamespace& reaches);

// {lineage, state, nodes: [{id, state, schedule, program, run_id, job_id, attempt, detail, why}],
// edges: [{from, to}]} of a lineage (read by QueryLineage: its runs and open jobs, `lineage` is
// its JSON, already cut to the caller's reach) and the schedules' graph; each waiting job's
// `why` is the summary of `jobs why`.
Result<nlohmann::json> QueryLineageGraph(const std::string& pg, const nlohmann::json& lineage,
                                         const ReachesNamespace& reaches);

// The graphs above as Graphviz DOT: each node labelled with its name and state in words (the
// colour repeats it), edges labelled with their leaf kind.
std::string DependencyGraphDot(const nlohmann::json& graph);
std::string LineageGraphDot(const nlohmann::json& graph);

}  // namespace trigd
