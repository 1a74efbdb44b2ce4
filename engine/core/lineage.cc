#include "core/lineage.h"

#include <algorithm>
#include <functional>
#include <map>

namespace trigd {

namespace {

// The lineage a triggering program event counts in: its payload's `lineage`, else its run id.
std::string EventLineageOf(const nlohmann::json& payload) {
  for (const char* field : {"lineage", "run_id"}) {
    auto v = payload.find(field);
    if (v != payload.end() && v->is_string() && !v->get_ref<const std::string&>().empty()) return v->get<std::string>();
  }
  return {};
}

bool IsProgramEvent(const nlohmann::json& e) {
  return e.is_object() && e.value("type", "") == "program" && e.contains("payload") && e["payload"].is_object();
}

}  // namespace

RunLineage DecideRunLineage(std::string_view job_lineage, const nlohmann::json& triggered_by, std::string_view run_id) {
  RunLineage out;
  if (triggered_by.is_array()) {
    for (const nlohmann::json& e : triggered_by) {
      if (!IsProgramEvent(e)) continue;
      std::string l = EventLineageOf(e["payload"]);
      if (!l.empty()) out.all.push_back(std::move(l));
    }
  }
  std::sort(out.all.begin(), out.all.end());
  out.all.erase(std::unique(out.all.begin(), out.all.end()), out.all.end());
  if (!job_lineage.empty()) {
    out.lineage = std::string(job_lineage);
  } else if (!out.all.empty()) {
    out.lineage = out.all.front();
  } else {
    out.lineage = std::string(run_id);
  }
  return out;
}

const char* LineageStateName(LineageState s) {
  switch (s) {
    case LineageState::kRunning: return "running";
    case LineageState::kSucceeded: return "succeeded";
    case LineageState::kFailed: return "failed";
  }
  return "?";
}

std::optional<LineageState> LineageStateFromName(std::string_view name) {
  for (LineageState s : kAllLineageStates) {
    if (name == LineageStateName(s)) return s;
  }
  return std::nullopt;
}

LineageState DecideLineageState(int64_t active, int64_t failed) {
  if (active > 0) return LineageState::kRunning;
  return failed > 0 ? LineageState::kFailed : LineageState::kSucceeded;
}

std::vector<std::string> UpstreamRunIds(const nlohmann::json& triggered_by) {
  std::vector<std::string> out;
  if (!triggered_by.is_array()) return out;
  for (const nlohmann::json& e : triggered_by) {
    if (!IsProgramEvent(e)) continue;
    auto v = e["payload"].find("run_id");
    if (v != e["payload"].end() && v->is_string()) out.push_back(v->get<std::string>());
  }
  return out;
}

std::vector<LineageTreeRow> LineageTree(const std::vector<LineageRun>& runs) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < runs.size(); ++i) index.emplace(runs[i].run_id, i);
  // parent: the first upstream run in the lineage that is not the run itself.
  std::vector<std::vector<size_t>> children(runs.size());
  std::vector<size_t> roots;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::optional<size_t> parent;
    for (const std::string& up : runs[i].upstream) {
      auto p = index.find(up);
      if (p != index.end() && p->second != i && p->second < i) {
        parent = p->second;
        break;
      }
    }
    if (parent) {
      children[*parent].push_back(i);
    } else {
      roots.push_back(i);
    }
  }
  std::vector<LineageTreeRow> out;
  std::function<void(size_t, int)> walk = [&](size_t i, int depth) {
    out.push_back({i, depth});
    for (size_t c : children[i]) walk(c, depth + 1);
  };
  for (size_t r : roots) walk(r, 0);
  return out;
}

}  // namespace trigd
