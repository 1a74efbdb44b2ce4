// Bearer tokens and roles of the HTTP API (SPEC §13): the TRIGD_TOKENS file, a JSON array of
// {"sha256": "<hex of the token's SHA-256>", "role": "viewer|operator|admin",
//  "namespaces": ["team-a", "*"], "name": "ci-deploy"} (name optional). The file holds only hashes; a token itself is
//  never stored
// or logged. Thread-safe: a TokenTable is immutable once parsed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace trigd {

// Each role may do what the ones before it may: viewer reads; operator also starts, cancels,
// reruns, suspends, resumes and backfills; admin also applies and deletes schedules.
enum class Role { kViewer = 0, kOperator = 1, kAdmin = 2 };
const char* RoleName(Role role);

struct TokenEntry {
  std::string sha256;  // 64 lowercase hex digits
  Role role = Role::kViewer;
  std::vector<std::string> namespaces;  // "*": every namespace
  std::string name;                     // who holds it, for the audit; empty: none given
};

struct TokenTable {
  std::vector<TokenEntry> entries;
};

// The SHA-256 of `text`, as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view text);

// Parses the token file's text. kInvalid naming the entry and field ("[2].role: unknown role
// \"root\" (viewer, operator or admin)"); unknown fields are refused, and so are a name that is
// not 1 to 64 letters, digits, '.', '_', '-' or '@', and a name two entries share.
Result<TokenTable> ParseTokens(std::string_view text);
// Reads and parses the file at `path`.
Result<TokenTable> LoadTokens(const std::string& path);

// Whom a request speaks for: the role and namespaces of its token.
struct Principal {
  Role role = Role::kAdmin;
  std::vector<std::string> namespaces{"*"};
  // The first 8 hex digits of its token's SHA-256 (empty without a token file): names the token
  // in the histories of the jobs and runs it changes, and reveals nothing of the token.
  std::string token_id;
  std::string name;  // its entry's name, if given
  bool Reaches(std::string_view ns) const;
  bool ReachesAll() const { return Reaches("*"); }
};

// Who acts, for the audit and the histories (docs/adr/0216): "token:NAME" for a named token,
// "token:sha256:XXXXXXXX" (token_id) for one without a name, "api:no-tokens" without a token file.
std::string ActorName(const Principal& who);

// Whether two hashes (hex digits, lowercase) are equal, in a time that depends only on their
// lengths (OpenSSL's CRYPTO_memcmp), never on where they first differ.
bool SameHash(std::string_view a, std::string_view b);

// The principal of the bearer token `token` (the Authorization header's value after
// "Bearer "); nothing when no entry has its hash. Every entry's hash is compared with SameHash.
std::optional<Principal> FindToken(const TokenTable& table, std::string_view token);

}  // namespace trigd
