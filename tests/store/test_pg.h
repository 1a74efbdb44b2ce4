// The PostgreSQL the store's integration tests run against: TRIGD_PG (what tools/services
// prints), else the local default. Tests fail, never skip, when it is not there.
#pragma once

#include <cstdlib>
#include <string>

#include <pqxx/pqxx>

namespace trigd::test {

inline std::string Pg() {
  const char* pg = std::getenv("TRIGD_PG");
  return pg ? pg : "host=127.0.0.1 port=55432 user=trigd dbname=trigd";
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
