// Fuzzes the API's whole request path: arbitrary bytes as what one connection sends (request
// lines, headers, bodies, several requests pipelined), served by the real ApiServer (its
// screening, routes, authentication, body reading and handlers, through cpp-httplib's parser)
// on the fuzzer's thread. Beyond "no crash, leak or sanitizer report, no exception out of a
// thread": every response is HTTP/1.1 with a status, and none is 500 (an internal failure).
// PostgreSQL is an address that fails at once (handlers that reach it answer 503); the `lag`
// route's handler, which would wait 5 s for an absent Kafka, is replaced: its routing and
// checks still run.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "api/routes.h"
#include "api/server.h"
#include "api/tokens.h"
#include "fuzz_check.h"

namespace trigd {
namespace {

ApiServer& Server() {
  static ApiServer* server = [] {
    char path[] = "/tmp/trigd-fuzz-api-tokensXXXXXX";
    const int fd = mkstemp(path);
    FUZZ_CHECK(fd >= 0, "cannot make the token file");
    const std::string tokens = R"([{"sha256": ")" + Sha256Hex("fuzz-admin") +
                               R"(", "role": "admin", "namespaces": ["*"]}, {"sha256": ")" + Sha256Hex("fuzz-viewer") +
                               R"(", "role": "viewer", "namespaces": ["a"]}])";
    FUZZ_CHECK(write(fd, tokens.data(), tokens.size()) == static_cast<ssize_t>(tokens.size()), "write");
    close(fd);
    ApiOptions options;
    options.listen = "127.0.0.1:0";
    options.tokens_file = path;
    options.pg = "host=/nonexistent-trigd-fuzz connect_timeout=1";
    options.kafka = "127.0.0.1:1";
    options.share = 1.0;
    auto routes = api_routes::Routes();
    for (auto& r : routes) {
      if (r.id == "lag") {
        r.handle = [](const ApiOptions&, const api_routes::Call&) {
          return api_routes::Error(503, "no Kafka in the fuzz target");
        };
      }
    }
    auto* s = new ApiServer();
    const Status st = s->Prepare(options, std::move(routes));
    FUZZ_CHECK(st.ok(), st.message());
    unlink(path);
    return s;
  }();
  return *server;
}

}  // namespace
}  // namespace trigd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string out = trigd::Server().ServeBytes(std::string_view(reinterpret_cast<const char*>(data), size));
  // Each response's status line (the console's files hold no "HTTP/1.1 ").
  for (size_t at = out.find("HTTP/1.1 "); at != std::string::npos; at = out.find("HTTP/1.1 ", at + 1)) {
    const std::string status = out.substr(at + 9, 3);
    FUZZ_CHECK(status.size() == 3 && status[0] >= '1' && status[0] <= '5', "a response without a status: " + out);
    FUZZ_CHECK(status != "500", "an internal error: " + out.substr(at, 600));
  }
  FUZZ_CHECK(out.empty() || out.rfind("HTTP/1.1 ", 0) == 0, "bytes before the first response: " + out.substr(0, 200));
  return 0;
}
