// A client of the HTTP API (`trigctl --api URL`, TRIGD_API_URL, with TRIGD_TOKEN): the API's
// replies as the store functions' results, so trigctl prints the same either way.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace trigd {

class ApiClient {
 public:
  // `url`: http://HOST:PORT or https://HOST:PORT; https verifies the server's certificate and
  // name against `ca_file` (PEM) when given, the system's CAs otherwise. kInvalid when the URL
  // is not of that form or ca_file cannot be read.
  static Result<std::unique_ptr<ApiClient>> Create(const std::string& url, const std::string& token,
                                                   const std::string& ca_file = "");
  ~ApiClient();

  // One request. The body of a 2xx reply; otherwise a Status: kUnavailable when the API cannot
  // be reached or answers 5xx, kNotFound for 404, kFailedPrecondition for 409, kInvalid for the rest, with the reply's
  // "error" (and each problem as "path: message" on a line of its own).
  Result<nlohmann::json> Call(const std::string& method, const std::string& path,
                              const std::optional<nlohmann::json>& body = std::nullopt) const;

  // A path segment or query value, percent-encoded.
  static std::string Encode(const std::string& text);

  const std::string& url() const { return url_; }

 private:
  ApiClient() = default;
  std::string url_, token_, ca_file_;
};

}  // namespace trigd
