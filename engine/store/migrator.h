// Applies the numbered SQL files of schema/ (NNN_name.sql) in order, each once, recording
// them in schema_migrations. Safe to run from several processes at once: an advisory lock
// serializes them. Not thread-safe on one connection.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace trigd {

// The schema folder: $TRIGD_SCHEMA_DIR, else the source tree's schema/ baked in at build time.
std::string DefaultSchemaDir();

// Connects with the libpq connection string `pg` and applies what is missing. `applied`
// receives the file names applied by this call. kUnavailable when PostgreSQL cannot be reached,
// kInvalid when a migration fails (its file name and PostgreSQL's message in the status).
Status ApplyMigrations(const std::string& pg, const std::string& schema_dir, std::vector<std::string>* applied);

}  // namespace trigd
