// Parsing and validation of schedule documents (SPEC §4). A document is refused whole:
// every problem is reported with its JSON path and a reason a person understands, e.g.
// `trigger.all[1].program.status: unknown status "done"`. Unknown fields are errors.
// Pure: no I/O. Thread-safe (no shared state).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "model/schedule.h"

namespace trigd {

struct ScheduleError {
  std::string path;    // "trigger.all[1].program.status"; "" for the document itself
  std::string reason;  // "unknown status \"done\""
  std::string ToString() const { return path.empty() ? reason : path + ": " + reason; }
  bool operator==(const ScheduleError&) const = default;
};

struct ParsedSchedule {
  Schedule schedule;  // valid only when errors is empty
  std::vector<ScheduleError> errors;
  bool ok() const { return errors.empty(); }
};

// Parses one schedule document (a JSON object).
ParsedSchedule ParseSchedule(const nlohmann::json& document);

// Parses a file's text: one schedule object or an array of them. Errors of the i-th document
// of an array have paths prefixed with "[i]."; a JSON syntax error is one error with path "".
std::vector<ParsedSchedule> ParseScheduleFile(std::string_view text);

// The canonical document of a valid schedule: every field explicit, durations in their
// shortest form. ParseSchedule(ScheduleToJson(s)).schedule == s.
nlohmann::json ScheduleToJson(const Schedule& schedule);

// Whether `target` is one a schedule document may name (program.target: it names the topic
// trigd.launch.<target>); an error naming the rule when not. For trigd-worker's --target, which
// waited forever on a topic no schedule can reach.
Status CheckTarget(std::string_view target);

// Whether `value` is a namespace or schedule name a document may hold; an error as the parser
// words it ("invalid name \"a/b\": use 1 to ...") when not. For names that arrive outside a
// document (the HTTP API's paths).
Status CheckIdentifier(std::string_view what, std::string_view value);

}  // namespace trigd
