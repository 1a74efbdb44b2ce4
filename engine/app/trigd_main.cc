// trigd: the engine binary. `trigd migrate` applies the SQL migrations of schema/.
#include <iostream>
#include <string>
#include <vector>

#include "app/config.h"
#include "store/migrator.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  trigd::Config config = trigd::LoadConfig(args);
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
  std::cerr << "usage: trigd migrate [--pg CONNSTR]\n"
               "  (this build has the schema migrator only; the engine loops are not built yet,"
               " see README 'Status')\n";
  return 1;
}
