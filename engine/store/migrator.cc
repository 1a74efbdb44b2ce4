#include "store/migrator.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <pqxx/pqxx>

#include "source_paths.h"
#include "store/pg_internal.h"

namespace trigd {

namespace {

// Any constant shared by every trigd process: the advisory lock that serializes migrations.
constexpr long long kMigrationLock = 0x7472696764;  // "trigd"

bool IsMigrationFile(const std::filesystem::path& p) {
  std::string name = p.filename().string();
  return p.extension() == ".sql" && name.size() > 4 && std::isdigit(static_cast<unsigned char>(name[0]));
}

}  // namespace

std::string DefaultSchemaDir() {
  if (const char* env = std::getenv("TRIGD_SCHEMA_DIR"); env && *env) return env;
  return TRIGD_DEFAULT_SCHEMA_DIR;
}

Status ApplyMigrations(const std::string& pg, const std::string& schema_dir, std::vector<std::string>* applied) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(schema_dir, ec)) {
    if (entry.is_regular_file() && IsMigrationFile(entry.path())) files.push_back(entry.path());
  }
  if (ec) return Invalid("schema folder " + schema_dir + ": " + ec.message());
  std::sort(files.begin(), files.end());

  auto connected = pg_internal::Connect(pg);
  if (!connected.ok()) return connected.status();
  std::unique_ptr<pqxx::connection> conn = std::move(*connected);
  for (const auto& file : files) {
    std::string name = file.filename().string();
    try {
      pqxx::work tx(*conn);
      tx.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLock);
      tx.exec(
          "CREATE TABLE IF NOT EXISTS schema_migrations ("
          " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())");
      if (!tx.exec_params("SELECT 1 FROM schema_migrations WHERE name = $1", name).empty()) {
        tx.abort();
        continue;
      }
      std::ifstream in(file);
      std::stringstream sql;
      sql << in.rdbuf();
      tx.exec(sql.str());
      tx.exec_params("INSERT INTO schema_migrations (name) VALUES ($1)", name);
      tx.commit();
      if (applied) applied->push_back(name);
    } catch (const pqxx::broken_connection& e) {
      return Unavailable(std::string("PostgreSQL connection lost: ") + pg_internal::OneLine(e.what()));
    } catch (const std::exception& e) {
      return Invalid("migration " + name + " failed: " + e.what());
    }
  }
  return Status::Ok();
}

}  // namespace trigd
