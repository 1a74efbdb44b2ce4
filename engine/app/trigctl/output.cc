#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <regex>

#include "app/trigctl/context.h"
#include "common/time.h"
#include "core/envelope_time.h"

namespace trigctl {

CLI::App* Context::Verb(CLI::App& noun, const std::string& name, const std::string& description,
                        std::function<int()> run) {
  CLI::App* verb = noun.add_subcommand(name, description);
  verb->allow_extras();
  commands[verb] = std::move(run);
  return verb;
}

CLI::App* Noun(CLI::App& root, const std::string& name, const std::string& description) {
  CLI::App* noun = root.add_subcommand(name, description);
  noun->allow_extras();
  noun->require_subcommand(0, 1);
  return noun;
}

int ExitCodeFor(const trigd::Status& s) { return s.code() == trigd::StatusCode::kUnavailable ? 2 : 1; }

int Fail(const trigd::Status& s, const std::string& command) {
  std::cerr << "trigctl " << command << ": " << s.message() << "\n";
  return ExitCodeFor(s);
}

trigd::Actor OsActor() {
  const passwd* pw = getpwuid(geteuid());
  const char* env_user = std::getenv("USER");
  const std::string user = pw != nullptr         ? pw->pw_name
                           : env_user != nullptr ? env_user
                                                 : "uid" + std::to_string(geteuid());
  char host[256] = {};
  const std::string host_name = gethostname(host, sizeof(host) - 1) == 0 && host[0] != '\0' ? host : "unknown-host";
  return trigd::Actor{"os:" + user + "@" + host_name};
}

int Refuse(const std::string& command, const std::string& problem) { return Fail(trigd::Invalid(problem), command); }

int FailList(const trigd::Status& s, const std::string& command, const std::optional<std::string>& schedule) {
  if (s.code() != trigd::StatusCode::kNotFound || !schedule || schedule->find('/') != std::string::npos) {
    return Fail(s, command);
  }
  return Refuse(command, s.message() + " (names are namespace/name, e.g. default/" + *schedule + ")");
}

namespace {

// Timestamps as trigd writes them (UTC, milliseconds, "Z"), wherever PostgreSQL rendered one in
// a row or a history entry ("2026-11-25T14:28:09.13483+00:00": microseconds, trailing zeros
// dropped, so columns changed width, and `jobs why` and `runs show` disagreed with the lists).
// Only the row's own columns and its history entries' fields: a schedule document, its args and
// the events' payloads are the users' and are shown as they wrote them.
void NormalizeTime(json& v) {
  static const std::regex kPgTime(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}:\d{2})");
  if (!v.is_string() || !std::regex_match(v.get_ref<const std::string&>(), kPgTime)) return;
  if (auto t = trigd::ParseEnvelopeTime(v.get_ref<const std::string&>())) v = trigd::FormatTime(*t);
}

void NormalizeRowTimes(json& row) {
  if (!row.is_object()) return;
  for (auto& [key, value] : row.items()) {
    // A local time (schedules next) is shown with its zone's offset, as the user asked for it.
    if (key.starts_with("local")) continue;
    NormalizeTime(value);
    if (key == "history" && value.is_array()) {
      for (auto& entry : value) {
        if (entry.is_object())
          for (auto& field : entry) NormalizeTime(field);
      }
    }
  }
}

std::string Cell(const json& v) {
  if (v.is_null()) return "-";
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

void PrintRows(json rows, const std::vector<std::string>& columns, bool as_json) {
  for (auto& row : rows) NormalizeRowTimes(row);
  if (as_json) {
    std::cout << rows.dump() << "\n";
    return;
  }
  std::vector<size_t> width;
  for (const auto& c : columns) width.push_back(c.size());
  for (const auto& r : rows)
    for (size_t i = 0; i < columns.size(); ++i) width[i] = std::max(width[i], Cell(r.value(columns[i], json())).size());
  auto line = [&](auto get) {
    std::string out;
    for (size_t i = 0; i < columns.size(); ++i) {
      std::string v = get(i);
      out += v + (i + 1 < columns.size() ? std::string(width[i] - v.size() + 2, ' ') : "");
    }
    std::cout << out << "\n";
  };
  line([&](size_t i) {
    std::string h = columns[i];
    for (auto& ch : h) ch = static_cast<char>(std::toupper(ch));
    return h;
  });
  for (const auto& r : rows) line([&](size_t i) { return Cell(r.value(columns[i], json())); });
}

int ShowOne(const trigd::Result<json>& r, const std::string& command, const std::string& what, bool as_json) {
  if (!r.ok()) return Fail(r.status(), command);
  if (r->empty()) return Refuse(command, "no " + what);
  json row = (*r)[0];
  NormalizeRowTimes(row);
  if (as_json) {
    std::cout << row.dump() << "\n";
    return 0;
  }
  // For people: one field a line; a document or a list too long for one line follows its name,
  // indented.
  size_t width = 0;
  for (const auto& [key, value] : row.items()) width = std::max(width, key.size());
  for (const auto& [key, value] : row.items()) {
    std::string text = Cell(value);
    std::cout << key << ":";
    if (!(value.is_structured() && text.size() > 80)) std::cout << std::string(width - key.size() + 1, ' ');
    if (value.is_structured() && text.size() > 80) {
      std::string block = value.dump(2);
      std::string indented = "\n  ";
      for (char c : block) indented += c == '\n' ? std::string("\n  ") : std::string(1, c);
      std::cout << indented << "\n";
    } else {
      std::cout << text << "\n";
    }
  }
  return 0;
}

trigd::Result<json> ApiList(const Context& ctx, const std::string& path, const std::string& query, size_t limit) {
  json rows = json::array();
  size_t offset = 0;
  while (rows.size() < limit) {
    const size_t n = std::min<size_t>(1000, limit - rows.size());
    auto page = ctx.api->Call("GET", path + "?" + query + (query.empty() ? "" : "&") + "limit=" + std::to_string(n) +
                                         "&offset=" + std::to_string(offset));
    if (!page.ok()) return page.status();
    for (auto& r : (*page)["items"]) rows.push_back(std::move(r));
    if (!(*page)["next_offset"].is_number()) break;
    offset = (*page)["next_offset"].get<size_t>();
    // The API pages through its newest 10,000 rows.
    if (offset + std::min<size_t>(1000, limit - rows.size()) > 10000) break;
  }
  return rows;
}

trigd::Result<json> ApiOne(const Context& ctx, const std::string& path) {
  auto r = ctx.api->Call("GET", path);
  if (!r.ok()) {
    if (r.status().code() == trigd::StatusCode::kNotFound && r.status().message().rfind("no ", 0) == 0)
      return json::array();
    return r.status();
  }
  return json::array({*r});
}

// /api/v1/schedules/NS/NAME; a name without its namespace as NAME alone (the API answers that
// there is no such schedule, as the database does).
std::string SchedulePath(const std::string& name) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return "/api/v1/schedules/-/" + trigd::ApiClient::Encode(name);
  return "/api/v1/schedules/" + trigd::ApiClient::Encode(name.substr(0, slash)) + "/" +
         trigd::ApiClient::Encode(name.substr(slash + 1));
}

std::optional<long long> ParseId(const std::string& s) {
  char* end = nullptr;
  errno = 0;
  long long id = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || !end || *end || errno == ERANGE) return std::nullopt;
  return id;
}

std::optional<size_t> Limit(const std::optional<std::string>& flag, size_t otherwise) {
  if (!flag) return otherwise;
  auto n = ParseId(*flag);
  if (!n || *n <= 0) return std::nullopt;
  return static_cast<size_t>(*n);
}

CLI::Option* AddLimit(CLI::App& verb, std::optional<std::string>& limit, const std::string& default_text) {
  return trigd::FlagValue(verb.add_option("--limit", limit, "at most N rows (" + default_text + ")")->type_name("N"));
}

}  // namespace trigctl
