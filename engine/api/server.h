// The HTTP API under /api/v1 and the web console at / (SPEC §13), served by cpp-httplib on a
// pool of its own threads, at a lower CPU priority than the engine's. Each request opens its
// own PostgreSQL connection through the same store functions trigctl calls (store/admin.h),
// never one of the engine loops', and takes its turn through a WorkGate that bounds the API's
// share of PostgreSQL's time: a slow or flooding client holds up API requests, not ingest or
// the checkers.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/tokens.h"
#include "common/status.h"
#include "log/kafka_config.h"

namespace trigd {

namespace api_routes {
struct Route;
}

// The largest request body the API reads (a schedule document, or an array of them for the
// bulk apply); a larger one is refused with 413 before it is read whole.
inline constexpr size_t kApiMaxBody = 1 << 20;
// A client that sends nothing for this long while the server reads its request (headers or
// body) is disconnected; an idle keep-alive connection is closed after it too.
inline constexpr std::chrono::seconds kApiReadTimeout{5};
// A request's line, headers and body must all arrive within this of its first byte, however
// steadily they trickle in; the connection is closed otherwise (docs/adr/0201).
inline constexpr std::chrono::seconds kApiRequestDeadline{10};
// The request line and headers together, at most (a longer head is refused with 400).
inline constexpr size_t kApiMaxHeadBytes = 64 * 1024;
// Connections served at once for one client address; one more is answered 503 and closed.
inline constexpr int kApiConnectionsPerAddress = 8;
// Threads serving requests; one per connection being served.
inline constexpr int kApiThreads = 32;
// A request waits at most this long for the API's turn at PostgreSQL (api/work_gate.h) before
// it is refused with 503 and Retry-After.
inline constexpr std::chrono::seconds kApiMaxWait{10};
// The API's threads run at this nice value: the engine's loops, in the same process, come first.
inline constexpr int kApiNice = 10;
// Lists: `limit` at most this; `offset` at most kApiMaxWindow, and a page ends at the
// kApiMaxWindow-th row (docs/adr/0202).
inline constexpr size_t kApiMaxLimit = 1000;
inline constexpr size_t kApiMaxWindow = 10000;

struct ApiOptions {
  std::string listen = "127.0.0.1:8080";  // TRIGD_API: HOST:PORT
  std::string tokens_file;                // TRIGD_TOKENS; empty: no tokens, loopback only
  std::string web_dir;                    // TRIGD_WEB_DIR; empty: the source tree's web/
  double share = 0.25;                    // TRIGD_API_SHARE: the API's most of one PostgreSQL slot's time
  // TRIGD_API_CERT and TRIGD_API_KEY (PEM): HTTPS when both are set, the files re-read when
  // they change (api/tls.h). TRIGD_API_INSECURE=1: plain HTTP on a non-loopback address,
  // which is refused otherwise (a token would travel in clear text).
  std::string cert_file, key_file;
  bool insecure = false;
  std::string pg;
  KafkaConfig kafka;
  std::string topic_prefix, group;
};

// HOST:PORT as TRIGD_API takes it; kInvalid naming what is wrong.
Result<std::pair<std::string, int>> ParseListen(const std::string& listen);
// Whether `host` is a loopback address or name (127.0.0.0/8, ::1, localhost).
bool IsLoopback(const std::string& host);
// The directory of the console's files compiled in (the source tree's web/).
std::string DefaultWebDir();

class ApiServer {
 public:
  ApiServer();
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Loads the token file, binds and starts serving on threads of its own. kInvalid: a bad
  // address, an unreadable or invalid token file, a non-loopback address without one or
  // without TLS (unless `insecure`), a certificate or key that cannot be loaded;
  // kUnavailable: the address cannot be bound.
  Status Start(const ApiOptions& options);
  // What Start does but binding: tokens, routes (`routes`, Routes() in Start) and the request
  // rules. For ServeBytes: the fuzz target and tests.
  Status Prepare(const ApiOptions& options, std::vector<api_routes::Route> routes);
  // Serves `bytes` as the requests of one connection, on the calling thread, after Prepare;
  // returns the bytes of the responses.
  std::string ServeBytes(std::string_view bytes);
  // Re-reads the token file (SIGHUP). An unreadable or invalid file keeps the tokens in force
  // and is logged (the file holds hashes only; no token is ever logged).
  Status ReloadTokens();
  // Stops serving and joins the threads.
  void Stop();
  // The port bound (for HOST:0).
  int port() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace trigd
