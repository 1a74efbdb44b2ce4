#include "app/config.h"

#include <algorithm>
#include <cstdlib>

#include "store/pg_conninfo.h"
#include "store/retention.h"

namespace trigd {

Result<Millis> ParseRetention(const std::string& text) {
  if (text.empty() || text == "0") return Millis{0};
  auto d = ParseDuration(text);
  if (!d.ok()) return Invalid("retention: " + d.status().message());
  if (*d < kMinRetention) {
    return Invalid("retention must be at least " + FormatDuration(kMinRetention) + " (or 0: keep everything), got " +
                   text);
  }
  return *d;
}

Result<int> ParseCheckers(const std::string& text) {
  const bool digits = !text.empty() && text.size() <= 9 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const long n = digits ? std::stol(text) : 0;
  if (n < 1 || n > kMaxCheckers) {
    return Invalid("TRIGD_CHECKERS must be an integer from 1 to " + std::to_string(kMaxCheckers) + ", got \"" + text +
                   "\"");
  }
  return static_cast<int>(n);
}

void ReadEnvironmentSettings(Config& c) {
  if (const char* v = std::getenv("TRIGD_FAST_PATH"); v && std::string(v) == "0") c.fast_path = false;
  // trigd refuses a TRIGD_CHECKERS that ParseCheckers refuses; the other binaries run no
  // checker and keep the default.
  if (const char* v = std::getenv("TRIGD_CHECKERS"); v && *v) {
    if (auto n = ParseCheckers(v); n.ok()) c.checkers = *n;
  }
}

Status FinishConfig(Config& c) {
  if (const char* v = std::getenv("TRIGD_PG_CONNECT_TIMEOUT"); v && *v) {
    // Applied to TRIGD_PG or --pg when it names none; otherwise each connection gets the default
    // (store/pg_conninfo.h).
    auto t = ParseConnectTimeout(v);
    if (!t.ok()) return t.status();
    c.pg = WithConnectTimeout(c.pg, *t);
  }
  return LoadKafkaProperties(c.kafka);
}

}  // namespace trigd
