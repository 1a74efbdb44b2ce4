// What every trigctl command shares: the configuration and flags of the command line, the
// commands by subcommand, and the output and refusal helpers. One file per noun adds its verbs
// (schedules.cc, jobs.cc, runs.cc, events.cc, topics.cc, lag.cc, history.cc).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/client.h"
#include "app/cli.h"
#include "app/config.h"
#include "common/status.h"
#include "model/schedule.h"
#include "store/audit.h"

namespace trigctl {

using nlohmann::json;

struct Context {
  CLI::App* root = nullptr;
  trigd::Config config;
  bool as_json = false;  // --json: JSON for scripts instead of tables
  // --api URL (TRIGD_API_URL), with TRIGD_TOKEN: the verbs the API serves go through it
  // instead of PostgreSQL, and print the same.
  std::string api_url;
  std::unique_ptr<trigd::ApiClient> api;
  // What each verb runs once the command line is parsed and accepted (exit code).
  std::map<const CLI::App*, std::function<int()>> commands;

  // A verb of `noun` that runs `run`; unknown arguments are kept for main to name.
  CLI::App* Verb(CLI::App& noun, const std::string& name, const std::string& description, std::function<int()> run);

  // A command line the command cannot take (exit 1): "trigctl NOUN VERB: PROBLEM".
  int Usage(const std::string& problem) const { return trigd::RefuseCommandLine(*root, problem); }
};

// A noun: a subcommand whose verbs are its own subcommands.
CLI::App* Noun(CLI::App& root, const std::string& name, const std::string& description);

// Adds each noun and its verbs.
void AddTopics(CLI::App& root, Context& ctx);
void AddSchedules(CLI::App& root, Context& ctx);
void AddJobs(CLI::App& root, Context& ctx);
void AddRuns(CLI::App& root, Context& ctx);
void AddEvents(CLI::App& root, Context& ctx);
void AddLag(CLI::App& root, Context& ctx);
void AddGraph(CLI::App& root, Context& ctx);
void AddPositions(CLI::App& root, Context& ctx);
void AddHistory(CLI::App& root, Context& ctx);
// `schedules replay` (replay.cc), a verb of the schedules noun.
void AddScheduleReplay(CLI::App& schedules, Context& ctx);
// `schedules from-crontab` (crontab.cc), a verb of the schedules noun.
void AddScheduleFromCrontab(CLI::App& schedules, Context& ctx);

// The schedule documents of files and folders (-f, as `schedules apply` reads them): every one
// valid and named once, else each problem on standard error and exit code 1 (0 when read).
int ReadScheduleDocuments(const std::vector<std::string>& paths, const std::string& command,
                          std::vector<trigd::Schedule>& schedules);
void AddLineages(CLI::App& root, Context& ctx);
void AddAudit(CLI::App& root, Context& ctx);

// Exit codes: 0 ok, 1 refused input, 2 cannot reach Kafka or PostgreSQL.
int ExitCodeFor(const trigd::Status& s);

// Errors of a command name it, noun and verb ("trigctl schedules show: ..."), whatever the step
// that failed.
int Fail(const trigd::Status& s, const std::string& command);

// Who runs a verb straight on PostgreSQL, for the audit and the histories: "os:USER@HOST", the
// effective user (its name, else $USER, else "uidN") and the host name. Through the API the
// token names the actor instead.
trigd::Actor OsActor();

// Input the command refuses (a bad value, an unknown name): exit 1.
int Refuse(const std::string& command, const std::string& problem);

// A list's --schedule names no schedule that exists or existed: refused as `schedules show`
// refuses it (an empty table read as "no jobs yet" and hid the typo), with the form of a name
// when it lacks its namespace.
int FailList(const trigd::Status& s, const std::string& command, const std::optional<std::string>& schedule);

// Prints rows as an aligned table with the given columns, or as JSON.
void PrintRows(json rows, const std::vector<std::string>& columns, bool as_json);

// One row, one field a line (or JSON); "no WHAT" refused when there is none.
int ShowOne(const trigd::Result<json>& r, const std::string& command, const std::string& what, bool as_json);

// Through the API (ctx.api): a list's rows, paged (at most 1000 a request) until `limit` rows
// or the end; `query` as key=value pairs, already encoded.
trigd::Result<json> ApiList(const Context& ctx, const std::string& path, const std::string& query, size_t limit);
// Through the API: one resource as a one-row array (ShowOne's form); none for a 404 whose
// error is "no WHAT".
trigd::Result<json> ApiOne(const Context& ctx, const std::string& path);

// /api/v1/schedules/NS/NAME of a schedule name; a name without its namespace as NAME alone (the
// API answers that there is no such schedule, as the database does).
std::string SchedulePath(const std::string& name);

// A decimal integer; nothing for anything else, one past long long's range included.
std::optional<long long> ParseId(const std::string& s);

// --limit N (`otherwise` when absent); nothing if N is not a positive integer (refused, not
// replaced).
std::optional<size_t> Limit(const std::optional<std::string>& flag, size_t otherwise = 100);

// The --limit flag of a list: a positive integer, refused as such otherwise (see Limit).
CLI::Option* AddLimit(CLI::App& verb, std::optional<std::string>& limit, const std::string& default_text);

}  // namespace trigctl
