// Glob matching for the partition leaf's `match` (SPEC §11): `*` matches any run of characters
// (none included), `?` exactly one byte; every other character matches itself. Pure.
#pragma once

#include <string_view>

namespace trigd {

// True when the whole of `text` matches `pattern`. Linear in |pattern| * |text| at worst (one
// backtrack point, the last `*`), never exponential.
bool GlobMatch(std::string_view pattern, std::string_view text);

}  // namespace trigd
