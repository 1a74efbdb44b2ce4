// The PostgreSQL the store's integration tests run against: TRIGD_PG (what tools/services
// prints), else the local default. Tests fail, never skip, when it is not there.
#pragma once

#include <cstdlib>
#include <string>

#include <pqxx/pqxx>

#include "store/pg_conninfo.h"

namespace trigd::test {

// With the connect timeout trigd's own connections get: a PostgreSQL that accepts and never
// answers fails the test instead of holding it.
inline std::string Pg() {
  const char* pg = std::getenv("TRIGD_PG");
  return WithConnectTimeout(pg ? pg : "host=127.0.0.1 port=55432 user=trigd dbname=trigd", kDefaultPgConnectTimeout);
}

// A test's own empty database `name` (dropped first if a run left it): its connection string.
inline std::string FreshDatabase(const std::string& name) {
  pqxx::connection admin(Pg());
  pqxx::nontransaction tx(admin);
  tx.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
  tx.exec("CREATE DATABASE " + name);
  return Pg() + " dbname=" + name;
}

}  // namespace trigd::test
