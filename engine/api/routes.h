// The operations of /api/v1 (SPEC §13) as a table of routes, and the reply and call shapes
// their handlers share with the server (api/server.cc), which authenticates, checks and gates a
// request before its route's handler runs.
#pragma once

#include <httplib.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/server.h"
#include "api/tokens.h"
#include "common/status.h"

namespace trigd::api_routes {

using nlohmann::json;

// A reply: the status and the JSON body.
struct Reply {
  int status = 200;
  json body;
  int retry_after_s = 0;  // a Retry-After header when > 0
};

// The error shape of SPEC §13: {"error": text, "problems": [{"path": p, "message": m}]}.
Reply Error(int status, const std::string& error, json problems = json::array());
// One entry of an error's problems.
json Problem(const std::string& path, const std::string& message);

// A store error as its reply: kInvalid 400, kNotFound 404, kAborted and kFailedPrecondition 409,
// kUnavailable 503, anything else 500 with "internal error" (its text goes to the log only).
Reply Fail(const Status& s);

// 403 for a caller whose token does not reach namespace `ns`.
Reply Forbidden(const Principal& who, const std::string& ns);

// The {namespace}/{name} of a path, each checked as the parser checks a document's: nothing when
// both are valid, else 400 naming each.
std::optional<Reply> CheckName(const std::string& ns, const std::string& name);

// What a handler gets: the caller, the path's parameters, the query and the body.
struct Call {
  const Principal& who;
  std::vector<std::string> params;  // the route's captures, in order
  const httplib::Request& req;
  json body;         // null when the request has none
  std::string text;  // the body's bytes, for a Body::kDocuments route (body stays null)
  std::optional<std::string> Query(const std::string& key) const {
    if (!req.has_param(key)) return std::nullopt;
    return req.get_param_value(key);
  }
};

// A route: method, path pattern (a regex whose groups are the parameters), the least role
// that may call it, the query parameters it takes, whether its path names a namespace (its
// first two groups are namespace and name), and what it does. Adding a verb is one entry.
// kDocuments: required, schedule documents that the route reads from the body's text itself, as
// `trigctl schedules apply` reads a file (ParseScheduleFile: the same limits and messages).
enum class Body { kNone, kOptional, kRequired, kDocuments };
struct Route {
  std::string id;  // its operationId in docs/api/openapi.yaml
  std::string method;
  std::string pattern;
  Role role;
  std::set<std::string> query;
  Body body = Body::kNone;
  bool by_name = false;  // groups 1 and 2: namespace, name
  std::function<Reply(const ApiOptions&, const Call&)> handle;
  bool gated = true;  // takes its turn at PostgreSQL or Kafka through the WorkGate
};

// Every operation, in the order of docs/api/openapi.yaml's paths.
std::vector<Route> Routes();

}  // namespace trigd::api_routes
