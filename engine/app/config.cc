#include "app/config.h"

#include <algorithm>
#include <cstdlib>

#include "store/pg_conninfo.h"
#include "store/retention.h"

namespace trigd {

namespace {

void FromEnv(const char* name, std::string& out) {
  if (const char* v = std::getenv(name); v && *v) out = v;
}

}  // namespace

bool IsFlagValue(const std::string& word) { return word.rfind("--", 0) != 0; }

bool WantsHelp(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; });
}

std::optional<std::string> TakeFlag(std::vector<std::string>& args, const std::string& name, std::string& refused) {
  std::optional<std::string> value;
  std::vector<std::string> rest;
  const std::string eq = name + "=";
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name) {
      if (i + 1 < args.size() && IsFlagValue(args[i + 1])) {
        value = args[++i];
      } else if (refused.empty()) {
        refused = name + " needs a value";
      }
    } else if (args[i].rfind(eq, 0) == 0) {
      value = args[i].substr(eq.size());
    } else {
      rest.push_back(args[i]);
    }
  }
  args = std::move(rest);
  return value;
}

Result<Millis> ParseRetention(const std::string& text) {
  if (text.empty() || text == "0") return Millis{0};
  auto d = ParseDuration(text);
  if (!d.ok()) return Invalid("retention: " + d.status().message());
  if (*d < kMinRetention) {
    return Invalid("retention must be at least " + FormatDuration(kMinRetention) + " (or 0: keep everything), got " + text);
  }
  return *d;
}

Result<int> ParseCheckers(const std::string& text) {
  const bool digits = !text.empty() && text.size() <= 9 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const long n = digits ? std::stol(text) : 0;
  if (n < 1 || n > kMaxCheckers) {
    return Invalid("TRIGD_CHECKERS must be an integer from 1 to " + std::to_string(kMaxCheckers) + ", got \"" + text + "\"");
  }
  return static_cast<int>(n);
}

Config LoadConfig(std::vector<std::string>& args, std::string* refused) {
  Config c;
  FromEnv("TRIGD_KAFKA", c.kafka);
  FromEnv("TRIGD_PG", c.pg);
  FromEnv("TRIGD_METRICS", c.metrics);
  FromEnv("TRIGD_TOPIC_PREFIX", c.topic_prefix);
  FromEnv("TRIGD_GROUP", c.group);
  FromEnv("TRIGD_INSTANCE_ID", c.instance_id);
  if (const char* v = std::getenv("TRIGD_FAST_PATH"); v && std::string(v) == "0") c.fast_path = false;
  // trigd refuses a TRIGD_CHECKERS that ParseCheckers refuses; the other binaries run no
  // checker and keep the default.
  if (const char* v = std::getenv("TRIGD_CHECKERS"); v && *v) {
    if (auto n = ParseCheckers(v); n.ok()) c.checkers = *n;
  }
  struct Flag { const char* name; std::string* out; };
  const Flag flags[] = {{"--kafka", &c.kafka}, {"--pg", &c.pg}, {"--metrics", &c.metrics},
                        {"--topic-prefix", &c.topic_prefix}, {"--group", &c.group},
                        {"--instance-id", &c.instance_id}};
  std::string unreported;
  for (const Flag& f : flags) {
    if (auto v = TakeFlag(args, f.name, refused ? *refused : unreported)) *f.out = *v;
  }
  if (const char* v = std::getenv("TRIGD_PG_CONNECT_TIMEOUT"); v && *v) {
    // Applied to TRIGD_PG or --pg when it names none; otherwise each connection gets the default
    // (store/pg_conninfo.h).
    if (auto t = ParseConnectTimeout(v); t.ok()) {
      c.pg = WithConnectTimeout(c.pg, *t);
    } else if (refused && refused->empty()) {
      *refused = t.status().message();
    }
  }
  return c;
}

}  // namespace trigd
