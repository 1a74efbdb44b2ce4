// The one way in for JSON text from outside trigd: HTTP API bodies, schedule documents (files
// and API bodies), events' payloads, launch requests read by the worker, arguments given on the
// command line, token files. nlohmann's parser is iterative, but copying, comparing, dumping
// and destroying the value it builds recurse once per level, and a body of 80,000 '[' overflowed
// the stack of the API thread that echoed it. So the limits (size, then nesting) are checked by
// one pass over the bytes that keeps no stack of its own before any parser builds a value.
// Pure: no I/O. Thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace trigd {

// The documented nesting limit (docs/schedules.md): 128 levels of arrays and objects.
inline constexpr size_t kMaxJsonDepth = 128;
// The size limit of one JSON text unless its entrance states another: an API body, an event.
inline constexpr size_t kMaxJsonBytes = 1 << 20;

struct JsonLimits {
  size_t max_bytes = kMaxJsonBytes;
  size_t max_depth = kMaxJsonDepth;
};

// The first limit `text` breaks, or nullopt. `reason` reads "invalid JSON: nested deeper than
// 128 levels at \"args.a[0][0]\"" or "invalid JSON: 2000000 bytes, more than the limit of
// 1048576"; `path` is where the nesting went too deep ("" for the size). Brackets inside
// strings do not count; text that is no JSON at all is left to the parser to describe.
struct JsonLimitBreach {
  std::string reason;
  std::string path;
};
std::optional<JsonLimitBreach> CheckJsonLimits(std::string_view text, const JsonLimits& limits = {});

// "invalid JSON at line 3, column 5 (byte 42): syntax error while parsing object - ..."
std::string JsonSyntaxErrorReason(const nlohmann::json::parse_error& e);

// `text` parsed once it keeps `limits` and holds no NUL byte (nlohmann reads one as the end of
// its input). Invalid with the reason otherwise: the breach, the NUL's byte, the syntax error
// with its line and column, or a number beyond a double.
Result<nlohmann::json> ReadJson(std::string_view text, const JsonLimits& limits = {});

}  // namespace trigd
