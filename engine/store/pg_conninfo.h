// The connection string trigd's processes give libpq (TRIGD_PG): its connect timeout.
#pragma once

#include <chrono>
#include <string>

#include "common/status.h"

namespace trigd {

// How long a connection to PostgreSQL may go unanswered before it fails (libpq's
// connect_timeout): without one, an endpoint that accepts TCP and never answers held trigctl
// and trigd's start for good. libpq takes whole seconds, 2 at least.
inline constexpr std::chrono::seconds kDefaultPgConnectTimeout{10};
inline constexpr std::chrono::seconds kMinPgConnectTimeout{2};
inline constexpr std::chrono::seconds kMaxPgConnectTimeout{3600};

// `conninfo` (key=value pairs or a postgresql:// URI) with connect_timeout=`timeout` added when
// it names none; unchanged when it does, or when it does not parse (libpq then says why).
std::string WithConnectTimeout(const std::string& conninfo, std::chrono::seconds timeout);

// The connect_timeout in seconds `conninfo` names; 0 when none.
int ConnectTimeoutOf(const std::string& conninfo);

// A connect timeout as TRIGD_PG_CONNECT_TIMEOUT gives it: a duration of whole seconds
// ("10s", "1m") from kMinPgConnectTimeout to kMaxPgConnectTimeout; kInvalid naming the rule.
Result<std::chrono::seconds> ParseConnectTimeout(const std::string& text);

}  // namespace trigd
