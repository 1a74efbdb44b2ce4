// trigctl audit list: who changed what (store/audit.h), from PostgreSQL or through the API.
#include <memory>
#include <string>

#include "app/trigctl/context.h"
#include "core/envelope_time.h"
#include "core/schedule_parser.h"
#include "store/audit.h"

namespace trigctl {
namespace {

struct AuditFlags {
  std::optional<std::string> since, actor, namespace_name, limit;
};

int AuditList(const Context& ctx, const AuditFlags& f) {
  const std::string command = "audit list";
  auto limit = Limit(f.limit);
  if (!limit) return Refuse(command, "--limit must be a positive integer, got \"" + *f.limit + "\"");
  trigd::AuditQuery q;
  q.limit = *limit;
  if (f.since) {
    q.since = trigd::ParseEnvelopeTime(*f.since);
    if (!q.since)
      return Refuse(command,
                    "--since: invalid time \"" + *f.since + "\": expected RFC 3339, e.g. 2026-11-22T00:00:00Z");
  }
  if (f.actor) {
    if (f.actor->empty()) return Refuse(command, "--actor must not be empty (token:NAME, os:USER@HOST)");
    q.actor = *f.actor;
  }
  if (f.namespace_name) {
    if (trigd::Status s = trigd::CheckIdentifier("namespace", *f.namespace_name); !s.ok())
      return Refuse(command, "--namespace: " + s.message());
    q.namespace_name = *f.namespace_name;
  }
  trigd::Result<json> rows = json::array();
  if (ctx.api) {
    std::string query;
    auto add = [&](const char* key, const std::optional<std::string>& v) {
      if (v) query += (query.empty() ? "" : "&") + std::string(key) + "=" + trigd::ApiClient::Encode(*v);
    };
    add("since", f.since);
    add("actor", f.actor);
    add("namespace", f.namespace_name);
    rows = ApiList(ctx, "/api/v1/audit", query, *limit);
  } else {
    rows = trigd::QueryAudit(ctx.config.pg, q);
  }
  if (!rows.ok()) return Fail(rows.status(), command);
  PrintRows(*rows, {"at", "actor", "action", "schedule", "run_id", "detail"}, ctx.as_json);
  return 0;
}

}  // namespace

void AddAudit(CLI::App& root, Context& ctx) {
  CLI::App* audit =
      Noun(root, "audit", "who changed what: apply, delete, suspend, resume, start, cancel, rerun, backfill");
  auto f = std::make_shared<AuditFlags>();
  CLI::App* list = ctx.Verb(*audit, "list", "changes, newest first", [&ctx, f] { return AuditList(ctx, *f); });
  trigd::FlagValue(list->add_option("--since", f->since, "only changes at or after T (RFC 3339)")->type_name("T"));
  trigd::FlagValue(
      list->add_option("--actor", f->actor, "only this actor's (token:NAME, os:USER@HOST)")->type_name("ACTOR"));
  trigd::FlagValue(list->add_option("--namespace", f->namespace_name, "only changes of this namespace's schedules")
                       ->type_name("NS"));
  AddLimit(*list, f->limit, "default: 100");
}

}  // namespace trigctl
