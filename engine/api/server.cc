#include "api/server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>

#include <nlohmann/json.hpp>

#include "api/routes.h"
#include "api/tls.h"
#include "api/work_gate.h"
#include "common/log.h"

namespace trigd {

using api_routes::Body;
using api_routes::Call;
using api_routes::CheckName;
using api_routes::Error;
using api_routes::Forbidden;
using api_routes::Problem;
using api_routes::Reply;
using api_routes::Route;
using api_routes::Routes;
using nlohmann::json;

struct ApiServer::Impl {
  // An httplib::SSLServer for HTTPS, a plain one otherwise.
  explicit Impl(std::unique_ptr<httplib::Server> server = std::make_unique<httplib::Server>())
      : owned(std::move(server)), http(*owned) {}
  ApiOptions options;
  std::shared_ptr<ApiCertificate> certificate;  // HTTPS: outlives the server, whose handshakes use it
  std::unique_ptr<httplib::Server> owned;
  httplib::Server& http;
  std::thread thread;
  int port = 0;
  bool auth = false;
  std::mutex tokens_mu;
  std::shared_ptr<const TokenTable> tokens;
  std::unique_ptr<WorkGate> gate;

  std::shared_ptr<const TokenTable> Tokens() {
    std::lock_guard lock(tokens_mu);
    return tokens;
  }

  // The caller of `req`, or the 401 that refuses it. Without a token file everyone is admin.
  std::variant<Principal, Reply> Authenticate(const httplib::Request& req) {
    if (!auth) return Principal{};
    const std::string header = req.get_header_value("Authorization");
    if (header.empty()) return Error(401, "no token: send Authorization: Bearer TOKEN");
    const std::string prefix = "Bearer ";
    if (header.rfind(prefix, 0) != 0) return Error(401, "the Authorization header is not \"Bearer TOKEN\"");
    auto who = FindToken(*Tokens(), std::string_view(header).substr(prefix.size()));
    if (!who) return Error(401, "unknown token");
    return *who;
  }

  Reply Serve(const Route& route, const httplib::Request& req) {
    auto auth_result = Authenticate(req);
    if (auto* r = std::get_if<Reply>(&auth_result)) return *r;
    const Principal& who = std::get<Principal>(auth_result);
    if (who.role < route.role) {
      return Error(403, std::string("role ") + RoleName(who.role) + " may not " + req.method + " " + req.path +
                            " (needs " + RoleName(route.role) + ")");
    }
    json problems = json::array();
    // The names of the target's query parameters (req.params also holds those of a form body,
    // which a client that sends JSON without its content type gets).
    const size_t q = req.target.find('?');
    for (size_t at = q == std::string::npos ? req.target.size() : q + 1; at < req.target.size();) {
      size_t end = req.target.find('&', at);
      if (end == std::string::npos) end = req.target.size();
      const std::string key = req.target.substr(at, std::min(end, req.target.find('=', at)) - at);
      if (!key.empty() && !route.query.count(key)) problems.push_back(Problem(key, "unknown query parameter"));
      at = end + 1;
    }
    if (!problems.empty()) return Error(400, "unknown query parameter", problems);
    Call call{who, {}, req, json()};
    for (size_t i = 1; i < req.matches.size(); ++i) call.params.push_back(req.matches[i].str());
    if (route.by_name) {
      if (auto bad = CheckName(call.params[0], call.params[1])) return *bad;
      if (!who.Reaches(call.params[0])) return Forbidden(who, call.params[0]);
    }
    if (!req.body.empty()) {
      if (route.body == Body::kNone) return Error(400, "this operation takes no body");
      call.body = json::parse(req.body, nullptr, false);
      if (call.body.is_discarded())
        return Error(400, "invalid JSON in the body", json::array({Problem("", "not JSON")}));
    } else if (route.body == Body::kRequired) {
      return Error(400, "needs a JSON body");
    }
    if (!route.gated) return route.handle(options, call);
    auto pass = gate->Enter();
    if (!pass) {
      Reply busy = Error(503, "the API is busy: this request waited " + std::to_string(kApiMaxWait.count()) +
                                  " s for its turn at PostgreSQL (TRIGD_API_SHARE bounds the API's share); "
                                  "try again");
      busy.retry_after_s = 1;
      return busy;
    }
    return route.handle(options, call);
  }
};

namespace {

// The calling thread at kApiNice, once per thread (Linux keeps a nice value per thread). A
// failure (a nice value already above it) leaves the thread as it is.
void LowerThreadPriority() {
  thread_local bool lowered = false;
  if (lowered) return;
  lowered = true;
  const auto tid = static_cast<id_t>(gettid());
  if (getpriority(PRIO_PROCESS, tid) < kApiNice) setpriority(PRIO_PROCESS, tid, kApiNice);
}

void Send(httplib::Response& res, const Reply& reply) {
  res.status = reply.status;
  if (reply.retry_after_s > 0) res.set_header("Retry-After", std::to_string(reply.retry_after_s));
  res.set_content(reply.body.dump(), "application/json");
}

}  // namespace

Result<std::pair<std::string, int>> ParseListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return Invalid("TRIGD_API must be HOST:PORT (e.g. 127.0.0.1:8080), got \"" + listen + "\"");
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string port = listen.substr(colon + 1);
  const bool digits = !port.empty() && port.size() <= 5 && std::all_of(port.begin(), port.end(), ::isdigit);
  if (!digits || std::stoi(port) > 65535)
    return Invalid("TRIGD_API: port must be an integer from 0 to 65535, got \"" + port + "\"");
  return std::make_pair(host, std::stoi(port));
}

bool IsLoopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) == 1) return (ntohl(a.s_addr) >> 24) == 127;
  return false;
}

std::string DefaultWebDir() {
#ifdef TRIGD_DEFAULT_WEB_DIR
  return TRIGD_DEFAULT_WEB_DIR;
#else
  return "web";
#endif
}

ApiServer::ApiServer() : impl_(std::make_unique<Impl>()) {}
ApiServer::~ApiServer() { Stop(); }

int ApiServer::port() const { return impl_->port; }

Status ApiServer::ReloadTokens() {
  if (impl_->options.tokens_file.empty()) return Status();
  auto table = LoadTokens(impl_->options.tokens_file);
  if (!table.ok()) {
    LogLine("api: tokens not reloaded, the ones in force stay: " + table.status().message());
    return table.status();
  }
  const size_t n = table->entries.size();
  {
    std::lock_guard lock(impl_->tokens_mu);
    impl_->tokens = std::make_shared<const TokenTable>(std::move(*table));
  }
  LogLine("api: " + std::to_string(n) + " token(s) loaded from " + impl_->options.tokens_file);
  return Status();
}

Status ApiServer::Start(const ApiOptions& options) {
  auto listen = ParseListen(options.listen);
  if (!listen.ok()) return listen.status();
  const auto& [host, port] = *listen;
  const bool tls = !options.cert_file.empty() || !options.key_file.empty();
  if (tls) {
    if (options.cert_file.empty() || options.key_file.empty()) {
      return Invalid("HTTPS needs both TRIGD_API_CERT and TRIGD_API_KEY");
    }
    auto certificate = ApiCertificate::Load(options.cert_file, options.key_file);
    if (!certificate.ok()) return certificate.status();
    auto server = std::make_unique<httplib::SSLServer>([c = *certificate](SSL_CTX& ctx) { return c->Install(ctx); });
    if (!server->is_valid()) return Invalid("TRIGD_API_CERT: the TLS context cannot be set up");
    impl_ = std::make_unique<Impl>(std::move(server));
    impl_->certificate = *certificate;
  }
  Impl& s = *impl_;
  s.options = options;
  s.auth = !options.tokens_file.empty();
  if (!s.auth && !IsLoopback(host)) {
    return Invalid("TRIGD_API " + options.listen +
                   " is not a loopback address: without TRIGD_TOKENS the API allows everything, so it binds only to "
                   "127.0.0.1, ::1 or localhost");
  }
  if (!tls && !IsLoopback(host)) {
    if (!options.insecure) {
      return Invalid("TRIGD_API " + options.listen +
                     " is not a loopback address: tokens would travel in clear text; set TRIGD_API_CERT and "
                     "TRIGD_API_KEY for HTTPS (or TRIGD_API_INSECURE=1 when a proxy in front does TLS)");
    }
    LogLine("api: warning: serving plain HTTP on " + options.listen +
            " (TRIGD_API_INSECURE=1): tokens travel in clear text");
  }
  if (s.auth) {
    if (Status st = ReloadTokens(); !st.ok()) return st;
  }
  const std::string web = options.web_dir.empty() ? DefaultWebDir() : options.web_dir;

  s.gate = std::make_unique<WorkGate>(
      WorkGate::Options{.slots = 1,
                        .share = options.share,
                        .max_wait = std::chrono::duration_cast<std::chrono::milliseconds>(kApiMaxWait)});
  s.http.new_task_queue = [] { return new httplib::ThreadPool(kApiThreads); };
  s.http.set_payload_max_length(kApiMaxBody);
  s.http.set_read_timeout(kApiReadTimeout);
  s.http.set_keep_alive_timeout(kApiReadTimeout.count());
  s.http.set_write_timeout(kApiReadTimeout);
  if (!s.http.set_mount_point("/", web)) LogLine("api: no console: " + web + " is not a folder");
  s.http.set_file_request_handler([](const httplib::Request&, httplib::Response& res) {
    // The console runs only its own scripts and talks only to this server.
    res.set_header("Content-Security-Policy", "default-src 'self'; img-src 'self' data:");
    res.set_header("X-Content-Type-Options", "nosniff");
  });
  for (Route& route : Routes()) {
    auto shared = std::make_shared<Route>(std::move(route));
    auto handler = [&s, shared](const httplib::Request& req, httplib::Response& res) {
      LowerThreadPriority();
      Reply reply;
      try {
        reply = s.Serve(*shared, req);
      } catch (const std::exception& e) {
        LogLine(std::string("api: ") + req.method + " " + req.path + ": " + e.what());
        reply = Error(500, "internal error");
      }
      Send(res, reply);
    };
    if (shared->method == "GET") s.http.Get(shared->pattern, handler);
    if (shared->method == "POST") s.http.Post(shared->pattern, handler);
    if (shared->method == "PUT") s.http.Put(shared->pattern, handler);
    if (shared->method == "DELETE") s.http.Delete(shared->pattern, handler);
  }
  // Whatever the library refuses itself (no route, a body over the limit, a bad request line)
  // gets the same error shape.
  s.http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string what = res.status == 404   ? "no such resource: " + req.method + " " + req.path
                       : res.status == 413 ? "body larger than " + std::to_string(kApiMaxBody) + " bytes"
                       : res.status == 405 ? "method not allowed"
                                           : "bad request";
    json problems = json::array();
    if (res.status == 413) problems.push_back(Problem("", "the limit is " + std::to_string(kApiMaxBody) + " bytes"));
    res.set_content(json{{"error", what}, {"problems", problems}}.dump(), "application/json");
  });
  // Request lines only, never headers (the Authorization header holds the token) nor bodies.
  s.http.set_logger([](const httplib::Request& req, const httplib::Response& res) {
    if (res.status >= 500) LogLine("api: " + std::to_string(res.status) + " " + req.method + " " + req.path);
  });
  if (port == 0) {
    s.port = s.http.bind_to_any_port(host);
    if (s.port < 0) return Unavailable("api: cannot bind " + host);
  } else if (!s.http.bind_to_port(host, port)) {
    return Unavailable("api: cannot listen on " + options.listen + " (in use, or not an address of this host)");
  } else {
    s.port = port;
  }
  s.thread = std::thread([&s] { s.http.listen_after_bind(); });
  LogLine("api: serving /api/v1 and the console on " + std::string(tls ? "https" : "http") + "://" +
          (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(s.port) + "/" +
          (s.auth ? "" : " (no TRIGD_TOKENS: loopback only, no token needed)"));
  return Status();
}

void ApiServer::Stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  impl_->http.stop();
  impl_->thread.join();
}

}  // namespace trigd
