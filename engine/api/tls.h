// The API's TLS certificate and key (TRIGD_API_CERT, TRIGD_API_KEY). Each TLS handshake gets the
// pair as it is in the files now: when either file's modification time changes (checked at most
// once a second), both are read again, so a renewed certificate is served without a restart.
// Thread-safe: handshakes run on the API's threads.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace trigd {

class ApiCertificate {
 public:
  // Reads the PEM certificate (chain) and private key. kInvalid naming the file and OpenSSL's
  // reason, or a key that does not match the certificate.
  static Result<std::shared_ptr<ApiCertificate>> Load(const std::string& cert_file, const std::string& key_file);
  ~ApiCertificate();

  // Sets `ctx` up to serve the pair: now, and at each handshake the current one.
  bool Install(SSL_CTX& ctx);

  struct Pair;

 private:
  ApiCertificate() = default;
  std::shared_ptr<const Pair> Current();

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace trigd
