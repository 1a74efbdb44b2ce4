#include "api/routes.h"

#include <algorithm>
#include <map>
#include <variant>

#include "api/backfill.h"
#include "api/graph.h"
#include "api/lag.h"
#include "api/why.h"
#include "common/log.h"
#include "core/envelope_time.h"
#include "core/schedule_parser.h"
#include "store/admin.h"
#include "store/audit.h"
#include "store/lineages.h"
#include "store/operate.h"

namespace trigd::api_routes {

Reply Error(int status, const std::string& error, json problems) {
  return {status, json{{"error", error}, {"problems", std::move(problems)}}};
}

json Problem(const std::string& path, const std::string& message) { return json{{"path", path}, {"message", message}}; }

namespace {

int HttpStatusOf(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalid: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kAborted:             // a conflicting change won a race
    case StatusCode::kFailedPrecondition:  // the state refuses it (a finished run cancelled)
      return 409;
    case StatusCode::kUnavailable: return 503;
    default: return 500;
  }
}

}  // namespace

Reply Fail(const Status& s) {
  const int status = HttpStatusOf(s);
  if (status != 500) return Error(status, s.message());
  // An internal failure's text (a library's, a query's) is for the log, not the client.
  LogLine("api: internal error: " + s.message());
  return Error(500, "internal error");
}

Reply Forbidden(const Principal& who, const std::string& ns) {
  (void)who;
  return Error(403, "this token does not reach namespace " + ns);
}

std::optional<Reply> CheckName(const std::string& ns, const std::string& name) {
  json problems = json::array();
  if (Status s = CheckIdentifier("namespace", ns); !s.ok()) problems.push_back(Problem("namespace", s.message()));
  if (Status s = CheckIdentifier("name", name); !s.ok()) problems.push_back(Problem("name", s.message()));
  if (problems.empty()) return std::nullopt;
  return Error(400, "invalid schedule name in the path", problems);
}

namespace {

// A schedule's namespace: what comes before the first '/' of its name.
std::string NamespaceOf(const std::string& schedule) { return schedule.substr(0, schedule.find('/')); }

// The schedule name of a row: lists say "schedule", single rows "schedule_name", schedules "name".
std::string ScheduleOf(const json& row) {
  if (!row.is_object()) return "";
  for (const char* key : {"schedule", "schedule_name", "name"}) {
    auto it = row.find(key);
    if (it != row.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

// limit (1..kApiMaxLimit, default 100) and offset (0..kApiMaxWindow), the limit cut so that
// offset + limit <= kApiMaxWindow.
struct Page {
  size_t limit = 100, offset = 0;
};
std::variant<Page, Reply> ReadPage(const Call& c) {
  Page p;
  json problems = json::array();
  auto number = [&](const char* key, size_t& out, size_t min, size_t max) {
    auto v = c.Query(key);
    if (!v) return;
    bool digits = !v->empty() && v->size() <= 9 && std::all_of(v->begin(), v->end(), ::isdigit);
    size_t n = digits ? std::stoul(*v) : 0;
    if (!digits || n < min || n > max) {
      problems.push_back(Problem(key, "must be an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                                          ", got \"" + *v + "\""));
      return;
    }
    out = n;
  };
  number("limit", p.limit, 1, kApiMaxLimit);
  number("offset", p.offset, 0, kApiMaxWindow);
  if (!problems.empty()) return Error(400, "invalid paging", problems);
  // A list shows its newest kApiMaxWindow rows at most: a page that would reach past them ends
  // there (empty from offset kApiMaxWindow on), and says no page follows.
  p.limit = std::min(p.limit, kApiMaxWindow - p.offset);
  return p;
}

// One page of `rows` (newest first, read with limit offset + limit + 1): the rows the caller's
// namespaces reach, from `offset`, at most `limit`; next_offset when more follow.
json PageOf(const json& rows, const Page& p, const Principal& who) {
  json items = json::array();
  size_t seen = 0;
  bool more = false;
  for (const auto& r : rows) {
    if (!who.Reaches(NamespaceOf(ScheduleOf(r)))) continue;
    if (seen++ < p.offset) continue;
    if (items.size() == p.limit) {
      more = p.offset + p.limit < kApiMaxWindow;
      break;
    }
    items.push_back(r);
  }
  return json{{"items", items}, {"next_offset", more ? json(p.offset + p.limit) : json(nullptr)}};
}

// How many rows to read for a page: enough for the page and one more when the token reaches
// every namespace; the whole window otherwise (the rows it cannot see are dropped after).
size_t ReadLimit(const Page& p, const Principal& who) {
  return who.ReachesAll() ? p.offset + p.limit + 1 : kApiMaxWindow + 1;
}

// The first row of a query, or 404 "no WHAT"; 403 when the caller does not reach its schedule.
Reply One(const Result<json>& r, const std::string& what, const Principal& who) {
  if (!r.ok()) return Fail(r.status());
  if (r->empty()) return Error(404, "no " + what);
  const json& row = (*r)[0];
  const std::string name = ScheduleOf(row);
  if (!who.Reaches(NamespaceOf(name))) return Forbidden(who, NamespaceOf(name));
  return {200, row};
}

// Who acts, for the audit and the histories of the jobs and runs an operator changes.
Actor ActorOf(const Principal& who) { return Actor{ActorName(who)}; }

constexpr const char* kJobStates[] = {"pending_trigger", "pending_constraint", "launched", "discarded"};

// ?dry_run=true|false (false when absent).
std::variant<bool, Reply> ReadDryRun(const Call& c) {
  auto v = c.Query("dry_run");
  if (!v || *v == "false") return false;
  if (*v == "true") return true;
  return Error(400, "invalid dry_run", json::array({Problem("dry_run", "must be true or false, got \"" + *v + "\"")}));
}

// Applies `schedules` in one transaction, or (dry run) says what applying would do: each
// outcome as `trigctl schedules apply [--dry-run] --json` prints it; `one`: the first alone.
Reply Apply(const ApiOptions& api, const Call& c, const std::vector<Schedule>& schedules, bool one) {
  auto dry_run = ReadDryRun(c);
  if (auto* e = std::get_if<Reply>(&dry_run)) return *e;
  json out = json::array();
  if (std::get<bool>(dry_run)) {
    auto r = DryRunApply(api.pg, schedules);
    if (!r.ok()) return Fail(r.status());
    for (const auto& e : *r) out.push_back(e.ToJson());
  } else {
    auto r = ApplySchedules(api.pg, schedules, ActorOf(c.who));
    if (!r.ok()) return Fail(r.status());
    for (const auto& o : *r) out.push_back({{"schedule", o.name}, {"version", o.version}, {"changed", o.changed}});
  }
  return {200, one ? out.at(0) : out};
}

// The body's documents are read from its text as `trigctl schedules apply` reads a file
// (ParseScheduleFile, Body::kDocuments): the same limits, repeated keys and messages, so the CLI
// and the API refuse a bad document with the same words.
Reply ApplyOne(const ApiOptions& api, const Call& c) {
  const std::string name = c.params[0] + "/" + c.params[1];
  std::vector<ParsedSchedule> parsed = ParseScheduleFile(c.text);
  const size_t first = c.text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && c.text[first] == '[')
    return Error(400, "the body must be one schedule document (a JSON object)");
  json problems = json::array();
  for (const auto& e : parsed.at(0).errors) problems.push_back(Problem(e.path, e.reason));
  if (parsed[0].ok() && parsed[0].schedule.id().value() != name) {
    problems.push_back(Problem("name", "the document names " + parsed[0].schedule.id().value() + ", the path " + name));
  }
  if (!problems.empty()) return Error(400, "schedule " + name + " refused; nothing applied", problems);
  return Apply(api, c, {parsed[0].schedule}, true);
}

// A document or an array of them, applied in one transaction as `trigctl schedules apply`.
Reply ApplyMany(const ApiOptions& api, const Call& c) {
  std::vector<ParsedSchedule> parsed = ParseScheduleFile(c.text);
  if (parsed.empty()) return Error(400, "no schedule documents (an empty array)");
  std::vector<Schedule> schedules;
  json problems = json::array();
  for (ParsedSchedule& p : parsed) {
    for (const auto& e : p.errors) problems.push_back(Problem(e.path, e.reason));
    if (!p.ok()) continue;
    const std::string ns = NamespaceOf(p.schedule.id().value());
    if (!c.who.Reaches(ns)) return Forbidden(c.who, ns);
    schedules.push_back(std::move(p.schedule));
  }
  if (!problems.empty()) return Error(400, std::to_string(problems.size()) + " problem(s); nothing applied", problems);
  return Apply(api, c, schedules, false);
}

Reply ChangeOne(const ApiOptions& api, const Call& c, ScheduleAction action) {
  if (!c.body.is_null() && !(c.body.is_object() && c.body.empty()))
    return Error(400, "this operation takes no fields", json::array({Problem("", "expected {} or no body")}));
  const std::string name = c.params[0] + "/" + c.params[1];
  bool changed = false;
  Status st = ChangeSchedule(api.pg, api.topic_prefix, name, action, ActorOf(c.who), &changed);
  if (!st.ok()) return Fail(st);
  const std::string done = !changed ? (action == ScheduleAction::kSuspend ? "already suspended" : "already active")
                           : action == ScheduleAction::kDelete  ? "deleted"
                           : action == ScheduleAction::kSuspend ? "suspended"
                                                                : "resumed";
  return {200, json{{"schedule", name}, {"done", done}}};
}

// A list's `schedule` filter: a name whose namespace the caller reaches.
std::optional<Reply> CheckScheduleFilter(const Call& c, const std::optional<std::string>& schedule) {
  if (!schedule) return std::nullopt;
  if (!c.who.Reaches(NamespaceOf(*schedule))) return Forbidden(c.who, NamespaceOf(*schedule));
  return std::nullopt;
}

// Its list's error: a schedule filter that names nothing is 404 (the store's "no schedule X").
Reply FailList(const Status& s, const std::optional<std::string>& schedule) {
  if (s.code() == StatusCode::kNotFound && schedule) return Error(404, s.message());
  return Fail(s);
}

std::optional<int64_t> ParseJobId(const std::string& text) {
  if (text.empty() || text.size() > 18 || !std::all_of(text.begin(), text.end(), ::isdigit)) return std::nullopt;
  return std::stoll(text);
}

Reply BadJobId(const std::string& text) {
  return Error(400, "job id must be a number, got \"" + text + "\"", json::array({Problem("id", "not a number")}));
}

// A positive integer, written as JSON writes integers or as a number with no fraction (1e3,
// 1000.0: JSON Schema's integers, which some clients send so).
bool IsCount(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>() > 0;
  if (!value.is_number_float()) return false;
  const double d = value.get<double>();
  return d >= 1 && d <= 9007199254740992.0 && d == static_cast<double>(static_cast<uint64_t>(d));
}

// The fields of an operation's body: an object (or no body) whose fields are among `allowed`,
// each of the JSON type named; anything else is 400 naming the field.
enum class Field { kObject, kBool, kString, kCount };
std::optional<Reply> CheckFields(const json& body, const std::map<std::string, Field>& allowed) {
  if (body.is_null()) return std::nullopt;
  if (!body.is_object())
    return Error(400, "the body must be a JSON object", json::array({Problem("", "not an object")}));
  json problems = json::array();
  for (const auto& [key, value] : body.items()) {
    auto it = allowed.find(key);
    if (it == allowed.end()) {
      problems.push_back(Problem(key, "unknown field"));
      continue;
    }
    const bool ok = it->second == Field::kObject   ? value.is_object()
                    : it->second == Field::kBool   ? value.is_boolean()
                    : it->second == Field::kString ? value.is_string()
                                                   : IsCount(value);
    if (!ok) {
      const char* want = it->second == Field::kObject   ? "a JSON object"
                         : it->second == Field::kBool   ? "true or false"
                         : it->second == Field::kString ? "a string"
                                                        : "a positive integer";
      problems.push_back(Problem(key, std::string("must be ") + want + ", got " + value.dump()));
    }
  }
  if (problems.empty()) return std::nullopt;
  return Error(400, "invalid body", problems);
}

std::string ScheduleName(const Call& c) { return c.params[0] + "/" + c.params[1]; }

// `runs start`: a job whose trigger counts as complete. Replies at once with the job (its run
// once launched is the job's run_id: GET /api/v1/jobs/{id}).
Reply StartSchedule(const ApiOptions& api, const Call& c) {
  if (auto e = CheckFields(c.body, {{"args", Field::kObject}, {"force", Field::kBool}})) return *e;
  const json args = c.body.is_object() ? c.body.value("args", json::object()) : json::object();
  const bool force = c.body.is_object() && c.body.value("force", false);
  auto r = StartRun(api.pg, ScheduleName(c), args, force, ActorOf(c.who));
  if (!r.ok()) return Fail(r.status());
  return {200, r->ToJson()};
}

// `schedules backfill`: {from, to, dry_run, max}, the plan as `trigctl schedules backfill --json`.
Reply BackfillSchedule(const ApiOptions& api, const Call& c) {
  if (auto e = CheckFields(
          c.body,
          {{"from", Field::kString}, {"to", Field::kString}, {"dry_run", Field::kBool}, {"max", Field::kCount}})) {
    return *e;
  }
  BackfillRequest request{ScheduleName(c)};
  json problems = json::array();
  for (const char* key : {"from", "to"}) {
    if (!c.body.contains(key)) {
      problems.push_back(Problem(key, "required (RFC 3339, e.g. 2026-11-22T00:00:00Z)"));
      continue;
    }
    auto t = ParseEnvelopeTime(c.body[key].get<std::string>());
    if (!t) {
      problems.push_back(Problem(key, "invalid time \"" + c.body[key].get<std::string>() +
                                          "\": expected RFC 3339, e.g. 2026-11-22T00:00:00Z"));
      continue;
    }
    (std::string(key) == "from" ? request.from : request.to) = *t;
  }
  if (!problems.empty()) return Error(400, "invalid backfill range", problems);
  request.dry_run = c.body.value("dry_run", false);
  request.max = c.body.value("max", request.max);
  request.actor = ActorOf(c.who);
  auto plan = Backfill(api.pg, api.kafka, api.topic_prefix, request);
  if (!plan.ok()) return Fail(plan.status());
  json out = plan->ToJson();
  out["dry_run"] = request.dry_run;
  return {200, out};
}

// `schedules next`: ?count= 1 to 1000 (default 5).
Reply NextFireTimesOf(const ApiOptions& api, const Call& c) {
  size_t count = 5;
  if (auto v = c.Query("count")) {
    const bool digits = !v->empty() && v->size() <= 4 && std::all_of(v->begin(), v->end(), ::isdigit);
    count = digits ? std::stoul(*v) : 0;
    if (count < 1 || count > 1000) {
      return Error(400, "invalid count",
                   json::array({Problem("count", "must be an integer from 1 to 1000, got \"" + *v + "\"")}));
    }
  }
  auto r = QueryNextFireTimes(api.pg, ScheduleName(c), count);
  if (!r.ok()) return Fail(r.status());
  return {200, r->ToJson()};
}

// A run named in the path: 404 when there is none, 403 when its schedule's namespace is out of
// the caller's reach; nothing when the caller may act on it.
std::optional<Reply> CheckRunReach(const ApiOptions& api, const Call& c) {
  Reply r = One(QueryRun(api.pg, c.params[0]), "run " + c.params[0], c.who);
  if (r.status != 200) return r;
  return std::nullopt;
}

// `runs cancel`: {reason}. 409 for a finished run.
Reply CancelRunOf(const ApiOptions& api, const Call& c) {
  // Reach before the body: a token of another namespace learns nothing from its body's errors.
  if (auto e = CheckRunReach(api, c)) return *e;
  if (auto e = CheckFields(c.body, {{"reason", Field::kString}})) return *e;
  const std::string reason = c.body.is_object() ? c.body.value("reason", "") : "";
  auto r = CancelRun(api.pg, api.topic_prefix, c.params[0], reason, ActorOf(c.who));
  if (!r.ok()) return Fail(r.status());
  return {200, r->ToJson()};
}

// `runs rerun`: {force}; the new job as `runs start` replies.
Reply RerunRunOf(const ApiOptions& api, const Call& c) {
  if (auto e = CheckRunReach(api, c)) return *e;
  if (auto e = CheckFields(c.body, {{"force", Field::kBool}})) return *e;
  const bool force = c.body.is_object() && c.body.value("force", false);
  auto r = RerunRun(api.pg, c.params[0], force, ActorOf(c.who));
  if (!r.ok()) return Fail(r.status());
  return {200, r->ToJson()};
}

// A list: paging, its `schedule` filter in the caller's reach, then the page of the rows the
// caller reaches. `read` reads `limit` rows, or refuses its own filters with a Reply.
using ListRead = std::function<std::variant<Result<json>, Reply>(const ApiOptions&, const Call&, size_t limit)>;
Route ListRoute(std::string id, std::string path, std::set<std::string> filters, ListRead read) {
  filters.insert({"limit", "offset"});
  return {std::move(id),
          "GET",
          std::move(path),
          Role::kViewer,
          std::move(filters),
          Body::kNone,
          false,
          [read = std::move(read)](const ApiOptions& api, const Call& c) -> Reply {
            auto p = ReadPage(c);
            if (auto* e = std::get_if<Reply>(&p)) return *e;
            const Page& page = std::get<Page>(p);
            auto schedule = c.Query("schedule");
            if (auto e = CheckScheduleFilter(c, schedule)) return *e;
            auto rows = read(api, c, ReadLimit(page, c.who));
            if (auto* e = std::get_if<Reply>(&rows)) return *e;
            const auto& r = std::get<Result<json>>(rows);
            if (!r.ok()) return FailList(r.status(), schedule);
            return {200, PageOf(*r, page, c.who)};
          }};
}

// A route on a schedule by name (/api/v1/schedules/{namespace}/{name}[/verb]).
Route ByName(std::string id, std::string method, const std::string& verb, Role role, Body body,
             std::function<Reply(const ApiOptions&, const Call&)> handle, std::set<std::string> query = {}) {
  return {std::move(id), std::move(method), "/api/v1/schedules/([^/]+)/([^/]+)" + (verb.empty() ? "" : "/" + verb),
          role,          std::move(query),  body,
          true,          std::move(handle)};
}

// A route on a run by id (/api/v1/runs/{run_id}[/verb]).
Route ByRun(std::string id, std::string method, const std::string& verb, Role role, Body body,
            std::function<Reply(const ApiOptions&, const Call&)> handle) {
  return {std::move(id), std::move(method), "/api/v1/runs/([^/]+)" + (verb.empty() ? "" : "/" + verb), role, {}, body,
          false,         std::move(handle)};
}

// A viewer's route on a job by id (/api/v1/jobs/{id}[/verb]); an id that is no number is 400.
Route ByJob(std::string id, const std::string& verb,
            std::function<Reply(const ApiOptions&, const Call&, int64_t)> handle) {
  return {std::move(id),
          "GET",
          "/api/v1/jobs/([^/]+)" + (verb.empty() ? "" : "/" + verb),
          Role::kViewer,
          {},
          Body::kNone,
          false,
          [handle = std::move(handle)](const ApiOptions& api, const Call& c) -> Reply {
            auto job = ParseJobId(c.params[0]);
            if (!job) return BadJobId(c.params[0]);
            return handle(api, c, *job);
          }};
}

// `lineages show`: a lineage spans namespaces, so a token that does not reach every namespace
// sees the runs and open jobs of its own namespaces only (the ids of the others stay in
// `upstream`), and 403 when it reaches none of them.
Reply GetLineage(const ApiOptions& api, const Call& c);

// `lineages show --format dot`: the lineage's runs, waiting jobs and skipped schedules as a
// graph (api/graph.h), in the caller's reach as GetLineage cuts it.
Reply GetLineageGraph(const ApiOptions& api, const Call& c) {
  Reply l = GetLineage(api, c);
  if (l.status != 200) return l;
  auto g = QueryLineageGraph(api.pg, l.body, [&](const std::string& ns) { return c.who.Reaches(ns); });
  if (!g.ok()) return Fail(g.status());
  return {200, *g};
}

// `graph`: the dependency graph of the schedules the caller reaches, of one namespace with
// ?namespace=.
Reply GetGraph(const ApiOptions& api, const Call& c) {
  auto ns = c.Query("namespace");
  if (ns) {
    if (Status s = CheckIdentifier("namespace", *ns); !s.ok())
      return Error(400, "invalid namespace", json::array({Problem("namespace", s.message())}));
    if (!c.who.Reaches(*ns)) return Forbidden(c.who, *ns);
  }
  auto g = QueryDependencyGraph(api.pg, ns, [&](const std::string& n) { return c.who.Reaches(n); });
  if (!g.ok()) return Fail(g.status());
  return {200, *g};
}

// `schedules versions`: the documents the name has had, newest first (paged).
Reply ListVersions(const ApiOptions& api, const Call& c) {
  auto p = ReadPage(c);
  if (auto* e = std::get_if<Reply>(&p)) return *e;
  const Page& page = std::get<Page>(p);
  auto r = QueryScheduleVersions(api.pg, ScheduleName(c), page.offset + page.limit + 1);
  if (!r.ok()) return Fail(r.status());
  json items = json::array();
  for (size_t i = page.offset; i < r->size() && items.size() < page.limit; ++i) items.push_back((*r)[i]);
  const bool more = r->size() > page.offset + page.limit;
  return {200, json{{"items", items}, {"next_offset", more ? json(page.offset + page.limit) : json(nullptr)}}};
}

Reply GetLineage(const ApiOptions& api, const Call& c) {
  auto r = QueryLineage(api.pg, c.params[0]);
  if (!r.ok()) return Fail(r.status());
  json l = *r;
  if (c.who.ReachesAll()) return {200, l};
  bool reached = false;
  for (const char* key : {"runs", "jobs"}) {
    if (!l.contains(key) || !l[key].is_array()) continue;
    json kept = json::array();
    for (const auto& row : l[key]) {
      if (c.who.Reaches(NamespaceOf(ScheduleOf(row)))) kept.push_back(row);
    }
    reached = reached || !kept.empty();
    l[key] = std::move(kept);
  }
  if (!reached) return Error(403, "this token reaches no run of lineage " + l.value("lineage", c.params[0]));
  return {200, l};
}

// `audit list`: ?since= (RFC 3339), ?actor= (exact), ?namespace=. A namespace out of the
// caller's reach is 403; without one, the page holds the rows of the caller's namespaces.
std::variant<Result<json>, Reply> ReadAudit(const ApiOptions& api, const Call& c, size_t limit) {
  AuditQuery q;
  q.limit = limit;
  json problems = json::array();
  if (auto since = c.Query("since")) {
    q.since = ParseEnvelopeTime(*since);
    if (!q.since)
      problems.push_back(
          Problem("since", "invalid time \"" + *since + "\": expected RFC 3339, e.g. 2026-11-22T00:00:00Z"));
  }
  if (auto actor = c.Query("actor")) {
    if (actor->empty()) problems.push_back(Problem("actor", "must not be empty (token:NAME, os:USER@HOST)"));
    q.actor = *actor;
  }
  if (auto ns = c.Query("namespace")) {
    if (Status s = CheckIdentifier("namespace", *ns); !s.ok()) problems.push_back(Problem("namespace", s.message()));
    q.namespace_name = *ns;
  }
  if (!problems.empty()) return Error(400, "invalid audit filter", problems);
  if (q.namespace_name && !c.who.Reaches(*q.namespace_name)) return Forbidden(c.who, *q.namespace_name);
  return QueryAudit(api.pg, q);
}

}  // namespace

std::vector<Route> Routes() {
  std::vector<Route> r;
  r.push_back({"whoami",
               "GET",
               "/api/v1/whoami",
               Role::kViewer,
               {},
               Body::kNone,
               false,
               [](const ApiOptions& api, const Call& c) -> Reply {
                 json ops = json::array();
                 for (const Route& route : Routes()) {
                   if (c.who.role >= route.role) ops.push_back(route.id);
                 }
                 return {200, json{{"role", RoleName(c.who.role)},
                                   {"namespaces", c.who.namespaces},
                                   {"auth", !api.tokens_file.empty()},
                                   {"operations", ops}}};
               }});
  r.back().gated = false;  // answers from memory
  r.push_back(ListRoute("listSchedules", "/api/v1/schedules", {},
                        [](const ApiOptions& api, const Call&, size_t limit) -> std::variant<Result<json>, Reply> {
                          return QuerySchedules(api.pg, limit);
                        }));
  r.push_back(
      {"applySchedules", "POST", "/api/v1/schedules", Role::kAdmin, {"dry_run"}, Body::kDocuments, false, ApplyMany});
  r.push_back(ByName("getSchedule", "GET", "", Role::kViewer, Body::kNone, [](const ApiOptions& api, const Call& c) {
    return One(QuerySchedule(api.pg, ScheduleName(c)), "schedule " + ScheduleName(c), c.who);
  }));
  r.push_back(ByName("applySchedule", "PUT", "", Role::kAdmin, Body::kDocuments, ApplyOne, {"dry_run"}));
  r.push_back(ByName("deleteSchedule", "DELETE", "", Role::kAdmin, Body::kNone,
                     [](const ApiOptions& api, const Call& c) { return ChangeOne(api, c, ScheduleAction::kDelete); }));
  r.push_back(ByName("suspendSchedule", "POST", "suspend", Role::kOperator, Body::kOptional,
                     [](const ApiOptions& api, const Call& c) { return ChangeOne(api, c, ScheduleAction::kSuspend); }));
  r.push_back(ByName("resumeSchedule", "POST", "resume", Role::kOperator, Body::kOptional,
                     [](const ApiOptions& api, const Call& c) { return ChangeOne(api, c, ScheduleAction::kResume); }));
  r.push_back(ByName("startSchedule", "POST", "start", Role::kOperator, Body::kOptional, StartSchedule));
  r.push_back(ByName("backfillSchedule", "POST", "backfill", Role::kOperator, Body::kRequired, BackfillSchedule));
  r.push_back(ByName("nextFireTimes", "GET", "next", Role::kViewer, Body::kNone, NextFireTimesOf, {"count"}));
  r.push_back(
      ByName("listScheduleVersions", "GET", "versions", Role::kViewer, Body::kNone, ListVersions, {"limit", "offset"}));
  r.push_back(ListRoute("listJobs", "/api/v1/jobs", {"state", "schedule"},
                        [](const ApiOptions& api, const Call& c, size_t limit) -> std::variant<Result<json>, Reply> {
                          auto state = c.Query("state");
                          if (state && std::none_of(std::begin(kJobStates), std::end(kJobStates),
                                                    [&](const char* st) { return *state == st; })) {
                            return Error(400, "unknown job state",
                                         json::array({Problem("state", "unknown job state \"" + *state +
                                                                           "\" (one of pending_trigger, "
                                                                           "pending_constraint, launched, "
                                                                           "discarded)")}));
                          }
                          return QueryJobs(api.pg, state, c.Query("schedule"), limit);
                        }));
  r.push_back(ByJob("getJob", "", [](const ApiOptions& api, const Call& c, int64_t id) {
    return One(QueryJob(api.pg, id), "job " + std::to_string(id), c.who);
  }));
  r.push_back(ByJob("whyJob", "why", [](const ApiOptions& api, const Call& c, int64_t id) -> Reply {
    auto in = InspectJob(api.pg, id);
    if (!in.ok()) return Fail(in.status());
    json e = ExplainJob(*in);
    const std::string ns = NamespaceOf(e.value("schedule", ""));
    if (!c.who.Reaches(ns)) return Forbidden(c.who, ns);
    return {200, e};
  }));
  r.push_back(ListRoute("listRuns", "/api/v1/runs", {"schedule"},
                        [](const ApiOptions& api, const Call& c, size_t limit) -> std::variant<Result<json>, Reply> {
                          return QueryRuns(api.pg, c.Query("schedule"), limit);
                        }));
  r.push_back(ByRun("getRun", "GET", "", Role::kViewer, Body::kNone, [](const ApiOptions& api, const Call& c) {
    return One(QueryRun(api.pg, c.params[0]), "run " + c.params[0], c.who);
  }));
  r.push_back(ByRun("cancelRun", "POST", "cancel", Role::kOperator, Body::kOptional, CancelRunOf));
  r.push_back(ByRun("rerunRun", "POST", "rerun", Role::kOperator, Body::kOptional, RerunRunOf));
  r.push_back(ListRoute("listLineages", "/api/v1/lineages", {"state"},
                        [](const ApiOptions& api, const Call& c, size_t limit) -> std::variant<Result<json>, Reply> {
                          std::optional<LineageState> state;
                          if (auto v = c.Query("state")) {
                            state = LineageStateFromName(*v);
                            if (!state) {
                              return Error(
                                  400, "unknown lineage state",
                                  json::array({Problem("state", "unknown lineage state \"" + *v +
                                                                    "\" (one of running, succeeded, failed)")}));
                            }
                          }
                          // A lineage spans namespaces and its row names none: the list is for
                          // tokens of every namespace; the others read one lineage by a run id.
                          if (!c.who.ReachesAll()) {
                            return Error(403,
                                         "lineages span namespaces: listing them needs a token of every namespace "
                                         "(\"*\"); GET /api/v1/lineages/{run_id} shows a lineage's runs in yours");
                          }
                          return QueryLineages(api.pg, state, limit);
                        }));
  r.push_back({"getLineage", "GET", "/api/v1/lineages/([^/]+)", Role::kViewer, {}, Body::kNone, false, GetLineage});
  r.push_back(ListRoute("listAudit", "/api/v1/audit", {"since", "actor", "namespace"}, ReadAudit));
  r.push_back({"getLineageGraph",
               "GET",
               "/api/v1/lineages/([^/]+)/graph",
               Role::kViewer,
               {},
               Body::kNone,
               false,
               GetLineageGraph});
  r.push_back({"getGraph", "GET", "/api/v1/graph", Role::kViewer, {"namespace"}, Body::kNone, false, GetGraph});
  r.push_back({"lag",
               "GET",
               "/api/v1/lag",
               Role::kViewer,
               {},
               Body::kNone,
               false,
               [](const ApiOptions& api, const Call&) -> Reply {
                 auto lag = ComputeLag(api.kafka, api.pg, api.topic_prefix, api.group);
                 if (!lag.ok()) return Fail(lag.status());
                 return {200, *lag};
               }});
  return r;
}

}  // namespace trigd::api_routes
