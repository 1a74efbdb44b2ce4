#include "api/tokens.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/json_reader.h"

namespace trigd {

const char* RoleName(Role role) {
  switch (role) {
    case Role::kViewer: return "viewer";
    case Role::kOperator: return "operator";
    case Role::kAdmin: return "admin";
  }
  return "viewer";
}

std::string Sha256Hex(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha256(), nullptr);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

namespace {

bool IsHex64(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

// A token's name: it becomes the actor "token:NAME", so nothing that could read as another
// actor's form or break a log line.
bool IsTokenName(const std::string& s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-' || c == '@';
  });
}

}  // namespace

Result<TokenTable> ParseTokens(std::string_view text) {
  Result<nlohmann::json> read = ReadJson(text);
  if (!read.ok()) return read.status();
  const nlohmann::json doc = std::move(read).value();
  if (!doc.is_array()) return Invalid("expected an array of {\"sha256\", \"role\", \"namespaces\"}");
  TokenTable table;
  for (size_t i = 0; i < doc.size(); ++i) {
    const auto& e = doc[i];
    const std::string at = "[" + std::to_string(i) + "]";
    if (!e.is_object()) return Invalid(at + ": expected an object");
    for (const auto& [key, value] : e.items()) {
      if (key != "sha256" && key != "role" && key != "namespaces" && key != "name")
        return Invalid(at + "." + key + ": unknown field (expected one of: sha256, role, namespaces, name)");
    }
    TokenEntry entry;
    auto hash = e.find("sha256");
    if (hash == e.end() || !hash->is_string() || !IsHex64(hash->get<std::string>()))
      return Invalid(at + ".sha256: expected the 64 hex digits of the token's SHA-256");
    entry.sha256 = hash->get<std::string>();
    std::transform(entry.sha256.begin(), entry.sha256.end(), entry.sha256.begin(),
                   [](char c) { return static_cast<char>(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c); });
    auto role = e.find("role");
    const std::string r = role != e.end() && role->is_string() ? role->get<std::string>() : "";
    if (r == "viewer") {
      entry.role = Role::kViewer;
    } else if (r == "operator") {
      entry.role = Role::kOperator;
    } else if (r == "admin") {
      entry.role = Role::kAdmin;
    } else {
      return Invalid(at + ".role: " + (role == e.end() ? std::string("missing") : "unknown role " + role->dump()) +
                     " (viewer, operator or admin)");
    }
    auto ns = e.find("namespaces");
    if (ns == e.end() || !ns->is_array() || ns->empty())
      return Invalid(at + ".namespaces: expected a non-empty array of namespaces (\"*\": all)");
    for (size_t j = 0; j < ns->size(); ++j) {
      if (!(*ns)[j].is_string() || (*ns)[j].get<std::string>().empty())
        return Invalid(at + ".namespaces[" + std::to_string(j) + "]: expected a namespace or \"*\"");
      entry.namespaces.push_back((*ns)[j].get<std::string>());
    }
    if (auto name = e.find("name"); name != e.end()) {
      if (!name->is_string() || !IsTokenName(name->get<std::string>()))
        return Invalid(at + ".name: expected 1 to 64 letters, digits, '.', '_', '-' or '@', got " + name->dump());
      entry.name = name->get<std::string>();
    }
    for (const auto& other : table.entries) {
      if (other.sha256 == entry.sha256) return Invalid(at + ".sha256: the same hash as an earlier entry");
      if (!entry.name.empty() && other.name == entry.name)
        return Invalid(at + ".name: \"" + entry.name + "\" names an earlier entry too (one name, one holder)");
    }
    table.entries.push_back(std::move(entry));
  }
  return table;
}

Result<TokenTable> LoadTokens(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Invalid("TRIGD_TOKENS: cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto table = ParseTokens(text.str());
  if (!table.ok()) return Invalid("TRIGD_TOKENS " + path + ": " + table.status().message());
  return table;
}

bool Principal::Reaches(std::string_view ns) const {
  return std::any_of(namespaces.begin(), namespaces.end(), [&](const std::string& n) { return n == "*" || n == ns; });
}

std::string ActorName(const Principal& who) {
  if (!who.name.empty()) return "token:" + who.name;
  if (!who.token_id.empty()) return "token:sha256:" + who.token_id;
  return "api:no-tokens";
}

bool SameHash(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::optional<Principal> FindToken(const TokenTable& table, std::string_view token) {
  if (token.empty()) return std::nullopt;
  const std::string hash = Sha256Hex(token);
  // Every entry is compared, each in constant time: how long a refusal takes says nothing of
  // how close a guess came to a hash, nor which entry matched.
  const TokenEntry* found = nullptr;
  for (const auto& e : table.entries) {
    if (SameHash(e.sha256, hash) && !found) found = &e;
  }
  if (!found) return std::nullopt;
  return Principal{found->role, found->namespaces, hash.substr(0, 8), found->name};
}

}  // namespace trigd
