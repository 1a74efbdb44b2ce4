// trigd: the engine binary. `trigd migrate` applies the SQL migrations of schema/.
#include <iostream>
#include <string>
#include <vector>

#include <atomic>
#include <cstdlib>

#include "app/config.h"
#include "app/engine.h"
#include "app/huge_pages.h"
#include "app/stop.h"
#include "store/migrator.h"

namespace {
std::atomic<bool> g_stop{false};

constexpr const char* kUsage =
    "usage: trigd [migrate] [--kafka H:P] [--pg CONNSTR] [--metrics HOST:PORT] [--group G] [--instance-id ID] "
    "[--topic-prefix P] [--retention DURATION]\n";

// A refused command line: what is wrong, then the usage, on stderr.
int Usage(const std::string& problem) {
  std::cerr << "trigd: " << problem << "\n" << kUsage;
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  trigd::UseHugePagesForScheduleIndex();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (trigd::WantsHelp(args)) {
    std::cout << kUsage;  // asked for: on stdout, exit 0 (as trigctl --help)
    return 0;
  }
  std::string refused;
  trigd::Config config = trigd::LoadConfig(args, &refused);
  std::string retention;
  if (const char* v = std::getenv("TRIGD_RETENTION")) retention = v;
  if (auto v = trigd::TakeFlag(args, "--retention", refused)) retention = *v;
  if (!refused.empty()) return Usage(refused);
  if (const char* v = std::getenv("TRIGD_CHECKERS"); v && *v) {
    if (auto n = trigd::ParseCheckers(v); !n.ok()) return Usage(n.status().message());
  }
  if (auto keep = trigd::ParseRetention(retention); keep.ok()) {
    config.retention = *keep;
  } else {
    return Usage(keep.status().message());
  }
  if (args.size() == 1 && args[0] == "migrate") {
    std::vector<std::string> applied;
    trigd::Status s = trigd::ApplyMigrations(config.pg, trigd::DefaultSchemaDir(), &applied);
    if (!s.ok()) {
      std::cerr << "trigd migrate: " << s.ToString() << "\n";
      return s.code() == trigd::StatusCode::kUnavailable ? 2 : 1;
    }
    for (const auto& name : applied) std::cout << "applied " << name << "\n";
    if (applied.empty()) std::cout << "schema up to date\n";
    return 0;
  }
  if (!args.empty()) return Usage("unknown argument " + args[args[0] == "migrate" ? 1 : 0]);
  trigd::StopOnSignals(g_stop);
  trigd::Status s = trigd::RunEngine(config, g_stop);
  if (!s.ok()) {
    std::cerr << "trigd: " << s.ToString() << "\n";
    return s.code() == trigd::StatusCode::kUnavailable ? 2 : 1;
  }
  return 0;
}
