#include "api/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace trigd {

namespace {

using Clock = std::chrono::steady_clock;

thread_local bool close_after_response = false;

// One connection's bytes, from a socket or (ServeBytes) from memory, buffered, with the
// request rules: reads fail once the request's deadline passes, when no byte comes within the
// read timeout, and past max_head_bytes before the headers end. Not thread-safe: one
// connection, one thread.
class RequestStream final : public httplib::Stream {
 public:
  RequestStream(int sock, const ConnectionRules& rules) : sock_(sock), rules_(rules) {}
  RequestStream(std::string_view in, std::string* out, const ConnectionRules& rules)
      : rules_(rules), memory_(true), in_(in), out_(out) {}

  // A new request starts: its deadline and head budget start now.
  void StartRequest() {
    deadline_ = Clock::now() + rules_.request_deadline;
    head_bytes_ = 0;
    in_head_ = true;
  }
  // Its line and headers are read: the body (if any) is not counted against the head budget.
  void HeadRead() { in_head_ = false; }

  // Whether a next request begins within the read timeout; false when the client closed,
  // stayed idle, or `stopping` says the server stops.
  bool WaitForRequest(const std::function<bool()>& stopping) {
    if (off_ < size_) return true;
    if (memory_) return at_ < in_.size();
    const auto until = Clock::now() + rules_.read_timeout;
    while (!stopping()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
      if (left.count() <= 0) return false;
      // Slices of 50 ms, so that a stopping server is noticed soon.
      const int r = Poll(POLLIN, std::min<int64_t>(left.count(), 50));
      if (r < 0) return false;
      if (r > 0) return true;
    }
    return false;
  }

  bool is_readable() const override {
    if (off_ < size_) return true;
    if (memory_) return at_ < in_.size();
    return Poll(POLLIN, WaitMillis()) > 0;
  }

  bool is_writable() const override { return memory_ || Poll(POLLOUT, ToMillis(rules_.read_timeout)) > 0; }

  ssize_t read(char* ptr, size_t size) override {
    if (off_ == size_) {
      const ssize_t n = Fill();
      if (n <= 0) return n;
    }
    size_t n = std::min(size, size_ - off_);
    if (in_head_) {
      if (head_bytes_ >= rules_.max_head_bytes) return -1;
      n = std::min(n, rules_.max_head_bytes - head_bytes_);
      head_bytes_ += n;
    }
    std::memcpy(ptr, buffer_ + off_, n);
    off_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (memory_) {
      out_->append(ptr, size);
      return static_cast<ssize_t>(size);
    }
    if (!is_writable()) return -1;
    return send(sock_, ptr, size, MSG_NOSIGNAL);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { Address(true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { Address(false, ip, port); }
  socket_t socket() const override { return sock_; }

 private:
  static int ToMillis(std::chrono::milliseconds d) { return static_cast<int>(std::max<int64_t>(0, d.count())); }

  // How long a read may wait: the read timeout, cut to what is left of the request's deadline.
  int WaitMillis() const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    return ToMillis(std::min(left, rules_.read_timeout));
  }

  int Poll(short events, int timeout_ms) const {
    pollfd p{sock_, events, 0};
    int r;
    do {
      r = poll(&p, 1, timeout_ms);
    } while (r < 0 && errno == EINTR);
    return r;
  }

  // Reads more into the buffer: the count, 0 at the end, -1 on error, timeout or deadline.
  ssize_t Fill() {
    off_ = size_ = 0;
    if (memory_) {
      const size_t n = std::min(sizeof buffer_, in_.size() - at_);
      std::memcpy(buffer_, in_.data() + at_, n);
      at_ += n;
      size_ = n;
      return static_cast<ssize_t>(n);
    }
    const int wait = WaitMillis();
    if (wait <= 0 || Poll(POLLIN, wait) <= 0) return -1;
    ssize_t n;
    do {
      n = recv(sock_, buffer_, sizeof buffer_, 0);
    } while (n < 0 && errno == EINTR);
    if (n > 0) size_ = static_cast<size_t>(n);
    return n;
  }

  void Address(bool peer, std::string& ip, int& port) const {
    ip = "127.0.0.1";
    port = 0;
    if (memory_) return;
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    const int r = peer ? getpeername(sock_, reinterpret_cast<sockaddr*>(&a), &len)
                       : getsockname(sock_, reinterpret_cast<sockaddr*>(&a), &len);
    if (r != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
      const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
      inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
      port = ntohs(v4->sin_port);
    } else if (a.ss_family == AF_INET6) {
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
      inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
      port = ntohs(v6->sin6_port);
    }
    ip = text;
  }

  int sock_ = -1;
  const ConnectionRules& rules_;
  const bool memory_ = false;
  std::string_view in_;
  size_t at_ = 0;
  std::string* out_ = nullptr;
  char buffer_[4096];
  size_t off_ = 0, size_ = 0;
  Clock::time_point deadline_ = Clock::now();
  size_t head_bytes_ = 0;
  bool in_head_ = true;
};

// The refusal of a connection over its address's cap, written before its request is read.
std::string BusyReply(int per_address) {
  const std::string body =
      R"({"error":"too many connections from this address","problems":[{"path":"","message":"at most )" +
      std::to_string(per_address) + R"( connections at once per client address"}]})";
  return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
         "Connection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

void ApiHttpServer::CloseAfterResponse() { close_after_response = true; }
bool ApiHttpServer::ClosingAfterResponse() { return close_after_response; }

int ApiHttpServer::ConnectionsOf(const std::string& address) {
  std::lock_guard lock(mu_);
  auto it = per_address_.find(address);
  return it == per_address_.end() ? 0 : it->second;
}

namespace {

// The keep-alive loop of httplib's process_server_socket_core, with a RequestStream kept for
// the whole connection (pipelined bytes stay in its buffer) and the close a handler asks for.
template <class ProcessRequest>
void ServeConnection(RequestStream& strm, size_t max_requests, const std::function<bool()>& stopping,
                     ProcessRequest process) {
  for (size_t left = max_requests; left > 0 && strm.WaitForRequest(stopping); --left) {
    strm.StartRequest();
    close_after_response = false;
    bool connection_closed = false;
    const bool ok = process(strm, left == 1, connection_closed);
    if (!ok || connection_closed || close_after_response) break;
  }
  close_after_response = false;
}

}  // namespace

bool ApiHttpServer::process_and_close_socket(socket_t sock) {
  std::string address;
  int port = 0;
  RequestStream strm(sock, rules_);
  strm.get_remote_ip_and_port(address, port);
  bool admitted = false;
  {
    std::lock_guard lock(mu_);
    int& n = per_address_[address];
    admitted = n < rules_.per_address;
    if (admitted) ++n;
  }
  if (admitted) {
    ServeConnection(
        strm, keep_alive_max_count_, [this] { return svr_sock_ == INVALID_SOCKET; },
        [this](RequestStream& s, bool close, bool& closed) {
          return process_request(s, close, closed, [&s](httplib::Request&) { s.HeadRead(); });
        });
  } else {
    const std::string busy = BusyReply(rules_.per_address);
    (void)send(sock, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  {
    std::lock_guard lock(mu_);
    auto it = per_address_.find(address);
    if (admitted && --it->second == 0) per_address_.erase(it);
    if (!admitted && it->second == 0) per_address_.erase(it);
  }
  shutdown(sock, SHUT_RDWR);
  close(sock);
  return admitted;
}

std::string ApiHttpServer::ServeBytes(std::string_view bytes) {
  std::string out;
  RequestStream strm(bytes, &out, rules_);
  ServeConnection(
      strm, keep_alive_max_count_, [] { return false; },
      [this](RequestStream& s, bool close, bool& closed) {
        return process_request(s, close, closed, [&s](httplib::Request&) { s.HeadRead(); });
      });
  return out;
}

}  // namespace trigd
