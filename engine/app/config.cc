#include "app/config.h"

#include <algorithm>
#include <cstdlib>

namespace trigd {

namespace {

void FromEnv(const char* name, std::string& out) {
  if (const char* v = std::getenv(name); v && *v) out = v;
}

}  // namespace

Config LoadConfig(std::vector<std::string>& args) {
  Config c;
  FromEnv("TRIGD_KAFKA", c.kafka);
  FromEnv("TRIGD_PG", c.pg);
  FromEnv("TRIGD_METRICS", c.metrics);
  FromEnv("TRIGD_TOPIC_PREFIX", c.topic_prefix);
  FromEnv("TRIGD_GROUP", c.group);
  FromEnv("TRIGD_INSTANCE_ID", c.instance_id);
  if (const char* v = std::getenv("TRIGD_FAST_PATH"); v && std::string(v) == "0") c.fast_path = false;
  if (const char* v = std::getenv("TRIGD_CHECKERS"); v && *v) c.checkers = std::clamp(std::atoi(v), 1, 16);
  struct Flag { const char* name; std::string* out; };
  const Flag flags[] = {{"--kafka", &c.kafka}, {"--pg", &c.pg}, {"--metrics", &c.metrics},
                        {"--topic-prefix", &c.topic_prefix}, {"--group", &c.group},
                        {"--instance-id", &c.instance_id}};
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    bool taken = false;
    for (const Flag& f : flags) {
      std::string eq = std::string(f.name) + "=";
      if (args[i] == f.name && i + 1 < args.size()) {
        *f.out = args[++i];
        taken = true;
      } else if (args[i].rfind(eq, 0) == 0) {
        *f.out = args[i].substr(eq.size());
        taken = true;
      }
      if (taken) break;
    }
    if (!taken) rest.push_back(args[i]);
  }
  args = std::move(rest);
  return c;
}

}  // namespace trigd
