// trigctl: the inspection and administration CLI. Exit codes (SPEC §6): 0 ok, 1 refused
// input, 2 cannot reach Kafka or PostgreSQL.
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/config.h"
#include "log/topics.h"

namespace {

int ExitCodeFor(const trigd::Status& s) {
  return s.code() == trigd::StatusCode::kUnavailable ? 2 : 1;
}

int TopicsCreate(const trigd::Config& config, bool json) {
  auto specs = trigd::LoadTopicSpecs(trigd::DefaultTopicsDir(), config.topic_prefix);
  if (!specs.ok()) {
    std::cerr << "trigctl topics create: " << specs.status().message() << "\n";
    return 1;
  }
  auto created = trigd::CreateTopics(config.kafka, *specs);
  if (!created.ok()) {
    std::cerr << "trigctl topics create: " << created.status().message() << "\n";
    return ExitCodeFor(created.status());
  }
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& c : *created) out.push_back({{"topic", c.name}, {"created", c.created}});
    std::cout << out.dump() << "\n";
  } else {
    for (const auto& c : *created)
      std::cout << (c.created ? "created  " : "exists   ") << c.name << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  trigd::Config config = trigd::LoadConfig(args);
  bool json = false;
  std::vector<std::string> words;
  for (const auto& a : args) {
    if (a == "--json") json = true; else words.push_back(a);
  }
  if (words.size() == 2 && words[0] == "topics" && words[1] == "create") {
    return TopicsCreate(config, json);
  }
  std::cerr << "usage: trigctl topics create [--json] [--kafka HOST:PORT] [--topic-prefix P]\n"
               "  (this build has the topics verb only; see README 'Status')\n";
  return 1;
}
