// The PostgreSQL the store's integration tests run against: TRIGD_PG (what tools/services
// prints), else the local default. Tests fail, never skip, when it is not there.
#pragma once

#include <cstdlib>
#include <string>

namespace trigd::test {

inline std::string Pg() {
  const char* pg = std::getenv("TRIGD_PG");
  return pg ? pg : "host=127.0.0.1 port=55432 user=trigd dbname=trigd";
}

}  // namespace trigd::test
