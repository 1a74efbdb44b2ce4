#include "store/pg_conninfo.h"

#include <libpq-fe.h>

#include <cstdlib>
#include <memory>

#include "common/time.h"

namespace trigd {

namespace {

// The value of `keyword` in `conninfo`; nullopt when absent, or when conninfo does not parse
// (`parsed` false).
std::optional<std::string> Option(const std::string& conninfo, const char* keyword, bool& parsed) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
  if (error) PQfreemem(error);
  parsed = options != nullptr;
  if (!options) return std::nullopt;
  std::unique_ptr<PQconninfoOption, void (*)(PQconninfoOption*)> owned(options, PQconninfoFree);
  for (PQconninfoOption* o = options; o->keyword; ++o) {
    if (std::string(o->keyword) == keyword && o->val && *o->val) return std::string(o->val);
  }
  return std::nullopt;
}

bool IsUri(const std::string& conninfo) {
  return conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0;
}

}  // namespace

std::string WithConnectTimeout(const std::string& conninfo, std::chrono::seconds timeout) {
  bool parsed = false;
  if (Option(conninfo, "connect_timeout", parsed) || !parsed) return conninfo;
  const std::string option = "connect_timeout=" + std::to_string(timeout.count());
  if (!IsUri(conninfo)) return conninfo.empty() ? option : conninfo + " " + option;
  const size_t fragment = conninfo.find('#');
  const std::string base = conninfo.substr(0, fragment);
  return base + (base.find('?') == std::string::npos ? "?" : "&") + option;
}

int ConnectTimeoutOf(const std::string& conninfo) {
  bool parsed = false;
  auto v = Option(conninfo, "connect_timeout", parsed);
  return v ? std::atoi(v->c_str()) : 0;
}

Result<std::chrono::seconds> ParseConnectTimeout(const std::string& text) {
  auto d = ParseDuration(text);
  const std::string rule = "a whole number of seconds from " + FormatDuration(kMinPgConnectTimeout) + " to " +
                           FormatDuration(kMaxPgConnectTimeout) + " (e.g. 10s)";
  if (!d.ok()) return Invalid("TRIGD_PG_CONNECT_TIMEOUT: " + d.status().message() + "; expected " + rule);
  if (d->count() % 1000 != 0 || *d < kMinPgConnectTimeout || *d > kMaxPgConnectTimeout) {
    return Invalid("TRIGD_PG_CONNECT_TIMEOUT: expected " + rule + ", got " + text);
  }
  return std::chrono::duration_cast<std::chrono::seconds>(*d);
}

}  // namespace trigd
