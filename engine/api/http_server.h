// The API's httplib::Server with the rules that keep slow or hostile clients from holding its
// threads (docs/adr/0201): each connection is served on one of the pool's threads by a loop of
// our own instead of httplib's, which reads each request through a RequestStream that enforces
// a total deadline for the request line, headers and body (httplib 0.11 has only a per-read
// timeout, which a client sending a byte every few seconds never trips) and a cap on the bytes
// before the body (httplib buffers a header line of any length); and a client address holds at
// most `per_address` connections at once, the ones over it answered 503 and closed at once.
// Thread-safe as httplib::Server is: configure it, then serve from any number of pool threads.
#pragma once

#include <httplib.h>

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace trigd {

struct ConnectionRules {
  // A request's line, headers and body must all arrive within this of its first byte.
  std::chrono::milliseconds request_deadline{10000};
  // No single read waits longer than this for the next bytes (nor an idle keep-alive connection).
  std::chrono::milliseconds read_timeout{5000};
  // The request line and headers together, in bytes.
  size_t max_head_bytes = 64 * 1024;
  // Connections served at once for one client address.
  int per_address = 8;
};

class ApiHttpServer : public httplib::Server {
 public:
  explicit ApiHttpServer(ConnectionRules rules) : rules_(rules) {}

  // Serves the requests in `bytes`, as one connection that sent them and then closed, on the
  // calling thread, and returns the bytes written back (for the fuzz target and unit tests).
  std::string ServeBytes(std::string_view bytes);

  // Asks that the connection whose request the calling thread serves be closed once its
  // response is written (the rest of a refused body is not read as a next request).
  static void CloseAfterResponse();
  // Whether CloseAfterResponse was called for the request the calling thread serves.
  static bool ClosingAfterResponse();

  const ConnectionRules& rules() const { return rules_; }
  // Connections being served now for `address`.
  int ConnectionsOf(const std::string& address);

 private:
  bool process_and_close_socket(socket_t sock) override;

  const ConnectionRules rules_;
  std::mutex mu_;
  std::map<std::string, int> per_address_;  // addresses with connections being served
};

}  // namespace trigd
