// `trigctl jobs why`: which trigger branches are unmet, which constraints fail now and why,
// and when the job is checked next; for a finished job, its decision history. Pure: built
// from a JobInspection read by the store; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "store/admin.h"

namespace trigd {

// The explanation as JSON (for --json, and the source of the text form).
nlohmann::json ExplainJob(const JobInspection& inspection);
// The same for people.
std::string FormatExplanation(const nlohmann::json& explanation);

}  // namespace trigd
