#include "api/tls.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <mutex>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include "common/log.h"

namespace trigd {

struct ApiCertificate::Pair {
  X509* cert = nullptr;
  STACK_OF(X509) * chain = nullptr;
  EVP_PKEY* key = nullptr;
  ~Pair() {
    if (cert) X509_free(cert);
    if (chain) sk_X509_pop_free(chain, X509_free);
    if (key) EVP_PKEY_free(key);
  }
};

struct ApiCertificate::State {
  std::string cert_file, key_file;
  std::mutex mu;
  std::shared_ptr<const Pair> pair;
  timespec cert_mtime{}, key_mtime{};
  std::chrono::steady_clock::time_point checked;
  bool said_failure = false;
};

namespace {

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  char buf[256] = "unknown error";
  if (e != 0) ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

timespec ModifiedAt(const std::string& file) {
  struct stat st {};
  if (stat(file.c_str(), &st) != 0) return {};
  return st.st_mtim;
}

bool Same(const timespec& a, const timespec& b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

Result<std::shared_ptr<const ApiCertificate::Pair>> Read(const std::string& cert_file, const std::string& key_file) {
  auto pair = std::make_shared<ApiCertificate::Pair>();
  FILE* f = std::fopen(cert_file.c_str(), "r");
  if (!f) return Invalid("TRIGD_API_CERT: cannot read " + cert_file);
  pair->cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  if (pair->cert) {
    pair->chain = sk_X509_new_null();
    while (X509* extra = PEM_read_X509(f, nullptr, nullptr, nullptr)) sk_X509_push(pair->chain, extra);
  }
  std::fclose(f);
  ERR_clear_error();  // the chain's end reads as an error
  if (!pair->cert) return Invalid("TRIGD_API_CERT: " + cert_file + " holds no PEM certificate");
  f = std::fopen(key_file.c_str(), "r");
  if (!f) return Invalid("TRIGD_API_KEY: cannot read " + key_file);
  pair->key = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (!pair->key) return Invalid("TRIGD_API_KEY: " + key_file + ": " + OpenSslError());
  if (X509_check_private_key(pair->cert, pair->key) != 1) {
    ERR_clear_error();
    return Invalid("TRIGD_API_KEY: " + key_file + " is not the key of the certificate in " + cert_file);
  }
  return std::shared_ptr<const ApiCertificate::Pair>(std::move(pair));
}

bool Use(SSL* ssl, const ApiCertificate::Pair& pair) {
  return SSL_use_cert_and_key(ssl, pair.cert, pair.key, pair.chain, 1) == 1;
}

}  // namespace

ApiCertificate::~ApiCertificate() = default;

Result<std::shared_ptr<ApiCertificate>> ApiCertificate::Load(const std::string& cert_file,
                                                             const std::string& key_file) {
  auto pair = Read(cert_file, key_file);
  if (!pair.ok()) return pair.status();
  std::shared_ptr<ApiCertificate> c(new ApiCertificate());
  c->state_ = std::make_unique<State>();
  c->state_->cert_file = cert_file;
  c->state_->key_file = key_file;
  c->state_->pair = *pair;
  c->state_->cert_mtime = ModifiedAt(cert_file);
  c->state_->key_mtime = ModifiedAt(key_file);
  c->state_->checked = std::chrono::steady_clock::now();
  return c;
}

std::shared_ptr<const ApiCertificate::Pair> ApiCertificate::Current() {
  State& s = *state_;
  std::lock_guard lock(s.mu);
  const auto now = std::chrono::steady_clock::now();
  if (now - s.checked < std::chrono::seconds(1)) return s.pair;
  s.checked = now;
  const timespec cert_mtime = ModifiedAt(s.cert_file), key_mtime = ModifiedAt(s.key_file);
  if (Same(cert_mtime, s.cert_mtime) && Same(key_mtime, s.key_mtime)) return s.pair;
  // A renewal writes two files: a certificate without its new key yet is kept waiting (the
  // old pair goes on being served) until both match.
  auto pair = Read(s.cert_file, s.key_file);
  if (!pair.ok()) {
    if (!s.said_failure) LogLine("api: keeping the current certificate: " + pair.status().message());
    s.said_failure = true;
    return s.pair;
  }
  s.said_failure = false;
  s.pair = *pair;
  s.cert_mtime = cert_mtime;
  s.key_mtime = key_mtime;
  LogLine("api: certificate reloaded from " + s.cert_file);
  return s.pair;
}

bool ApiCertificate::Install(SSL_CTX& ctx) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  const auto pair = Current();
  if (SSL_CTX_use_cert_and_key(&ctx, pair->cert, pair->key, pair->chain, 1) != 1) return false;
  // Each handshake takes the pair as the files are now (the certificate callback runs per
  // connection, on the thread serving it).
  SSL_CTX_set_cert_cb(
      &ctx,
      [](SSL* ssl, void* arg) -> int {
        auto* self = static_cast<ApiCertificate*>(arg);
        return Use(ssl, *self->Current()) ? 1 : 0;
      },
      this);
  return true;
}

}  // namespace trigd
