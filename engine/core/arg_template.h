// Templated program arguments (SPEC §11): string values anywhere in `program.args` may hold
// placeholders `{{name}}`, rendered into the launch request when the job launches; the stored
// schedule keeps the template. Pure: no I/O; thread-safe.
//
// Placeholders:
//   run_id, attempt, schedule, lineage     the run's (attempt: the first attempt's, 1; a retry
//                                          keeps the first rendering; lineage: SPEC §10, the
//                                          run id itself for a run that starts one)
//   fire_time   RFC 3339 fire time of the tick that triggered the job; empty without one
//   fire_date   that fire time's date (YYYY-MM-DD) in the time leaf's zone; empty without one
//   partitions  the triggering partitions, sorted, distinct, space-separated
//   datasets    their datasets, likewise
//   keys        the triggering custom events' keys, likewise
// `{{` followed by anything but a known name and `}}` is refused at apply, with its field path
// (program.args.cmd: unknown placeholder "{{partition}}" ...). A placeholder that cannot apply
// to the trigger (fire_time without a time leaf) is allowed and renders empty.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/schedule.h"

namespace trigd {

inline constexpr std::string_view kArgPlaceholders[] = {"run_id",    "attempt",    "schedule", "lineage", "fire_time",
                                                        "fire_date", "partitions", "datasets", "keys"};
// A rendered list placeholder (partitions, datasets, keys) keeps at most this many bytes, cut
// at a separator: a launch request must stay within Kafka's message size.
inline constexpr size_t kMaxRenderedListBytes = 64 * 1024;

struct TemplateProblem {
  std::string path;  // "program.args.cmd", "program.args.files[2]"
  std::string reason;
};

// Every placeholder problem of `args` (a JSON object), with paths below `path`.
std::vector<TemplateProblem> CheckArgTemplates(const nlohmann::json& args, const std::string& path);

// True when some string value of `args` holds a placeholder: its launch requests are rendered
// per job, not shared.
bool HasArgTemplates(const nlohmann::json& args);

// What placeholders render to, by name (kArgPlaceholders order).
struct TemplateValues {
  std::string run_id;
  int64_t attempt = 1;
  std::string schedule;
  std::string lineage;
  std::string fire_time;
  std::string fire_date;
  std::string partitions;
  std::string datasets;
  std::string keys;
  // The items the three lists above join (same order, same cut): each is one shell word.
  std::vector<std::string> partition_items;
  std::vector<std::string> dataset_items;
  std::vector<std::string> key_items;
  // The value of placeholder `name` (one of kArgPlaceholders), else empty.
  std::string Get(std::string_view name) const;
  // The shell words of placeholder `name`: a list's items, or the one value of any other.
  std::vector<std::string> Words(std::string_view name) const;
};

// The values a job's launch renders: its run id, schedule, and what its triggering events (the
// job's triggered_by array: [{id, type, payload}, ...]) carry. The time leaf of `schedule`, if
// any, gives fire_date's zone.
TemplateValues JobTemplateValues(const Schedule& schedule, std::string_view run_id, const nlohmann::json& triggered_by);

// The values as a JSON object by placeholder name (attempt a string, as it renders).
nlohmann::json TemplateValuesJson(const TemplateValues& values);

// A templated schedule's program for one launch: ProgramJson with the args rendered, and the
// values rendered (TemplateValuesJson, dumped) for the request's `placeholders`.
// `lineage`: the run's lineage (SPEC §10). `triggered_by_json`: the job's triggered_by array as
// stored.
struct RenderedProgram {
  std::string program_json;
  std::string placeholders_json;
};
RenderedProgram RenderProgram(const Schedule& schedule, std::string_view run_id, std::string_view lineage,
                              std::string_view triggered_by_json);

// `args` with every placeholder of every string value replaced. Unknown placeholders (none
// after CheckArgTemplates) are left as they are. `args.command`, which the reference worker
// runs with /bin/sh, is rendered by RenderShellCommand: an event's values never become code.
nlohmann::json RenderArgs(const nlohmann::json& args, const TemplateValues& values);

// A shell command template rendered with every placeholder quoted for where it stands:
//   outside quotes    each word single-quoted ('it'\''s'); a list gives one word per item
//                     (none for an empty list), any other placeholder one word ('' when empty);
//   inside '...'      the value with each ' written '\'' (the quotes stay one word);
//   inside "..."      the value with \ " $ ` escaped by a backslash.
// So `echo {{keys}}`, `echo '{{keys}}'` and `echo "{{keys}}"` all pass a key such as
// `$(touch x)` or `a'; touch x; echo '` to echo as literal text. A here-document's body is not
// a quoting context sh knows here: the environment variables (TRIGD_KEYS ...) are the form for it.
std::string RenderShellCommand(std::string_view text, const TemplateValues& values);

// `value` as one single-quoted shell word: 'value', each ' written '\''.
std::string ShellQuote(std::string_view value);

}  // namespace trigd
