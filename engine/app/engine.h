// The trigd engine loop (walking skeleton): consume events, apply them to jobs in one
// PostgreSQL transaction with the consumed positions, and relay the outbox to Kafka.
#pragma once

#include <atomic>

#include "app/config.h"
#include "common/status.h"

namespace trigd {

// Runs until `stop` becomes true. Returns non-ok on a fatal error.
Status RunEngine(const Config& config, const std::atomic<bool>& stop);

}  // namespace trigd
