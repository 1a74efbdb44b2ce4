#include "api/server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <thread>
#include <variant>

#include <nlohmann/json.hpp>

#include "api/http_server.h"
#include "api/routes.h"
#include "api/tls.h"
#include "api/work_gate.h"
#include "common/json_reader.h"
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

namespace {

// Whether `text` is UTF-8 as RFC 3629 has it: no overlong forms, no surrogates, nothing past
// U+10FFFF.
bool IsUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (i + n >= text.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return false;
    }
    i += n + 1;
  }
  return true;
}

// Why `text` may not stand in a request's target, path, query or header: invalid UTF-8, or a
// NUL (which C strings, file names and PostgreSQL's text cut or refuse); empty when it may.
std::string BadText(std::string_view text) {
  if (!IsUtf8(text)) return "not valid UTF-8";
  if (text.find('\0') != std::string_view::npos) return "contains a NUL byte";
  return "";
}

// The decoded path of a request target (what httplib makes req.path), for a request the library
// refused before it decoded one.
std::string PathOf(const std::string& target) {
  const std::string raw = target.substr(0, target.find('?'));
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '%' && i + 2 < raw.size() && std::isxdigit(static_cast<unsigned char>(raw[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(raw[i + 2]))) {
      out += static_cast<char>(std::stoi(raw.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += raw[i];
    }
  }
  return out;
}

// The text of a request as one line for the log: controls and bytes beyond ASCII escaped.
std::string Printable(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : text.substr(0, 200)) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b >= 0x7F || b == '\\') {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
    } else {
      out += c;
    }
  }
  return out;
}

// JSON text of `body`, bytes that are not UTF-8 (never expected) replaced rather than thrown.
std::string Dump(const json& body) { return body.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

struct ApiServer::Impl {
  // An httplib::SSLServer for HTTPS; otherwise the server with the slow-client rules
  // (ApiHttpServer, docs/adr/0201), which speaks plain HTTP only.
  explicit Impl(std::unique_ptr<httplib::Server> server = std::make_unique<ApiHttpServer>(ConnectionRules{
                    .request_deadline = kApiRequestDeadline,
                    .read_timeout = kApiReadTimeout,
                    .max_head_bytes = kApiMaxHeadBytes,
                    .per_address = kApiConnectionsPerAddress}))
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
  // Each route's path pattern and method, for 404 and 405 before a route is chosen.
  std::vector<std::pair<std::regex, std::string>> methods;

  std::shared_ptr<const TokenTable> Tokens() {
    std::lock_guard lock(tokens_mu);
    return tokens;
  }

  // The caller of `req`, or the 401 that refuses it. Without a token file everyone is admin.
  std::variant<Principal, Reply> Authenticate(const httplib::Request& req) {
    if (!auth) return Principal{};
    if (!req.has_header("Authorization")) return Error(401, "no token: send Authorization: Bearer TOKEN");
    const std::string header = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (header.rfind(prefix, 0) != 0) return Error(401, "the Authorization header is not \"Bearer TOKEN\"");
    auto who = FindToken(*Tokens(), std::string_view(header).substr(prefix.size()));
    if (!who) return Error(401, "unknown token");
    return *who;
  }

  // Reads the request's body into `body`; the error reply when it cannot be (over the limit,
  // cut short, a multipart form). Nothing is read before the caller is authenticated.
  using BodyReader = std::function<std::optional<Reply>(std::string& body)>;

  // Serves `req` by `route`: the caller, its role and reach, the query, the path's names, then
  // the body (read by `read_body`, none for GET) and the handler, gated when the route is.
  Reply Serve(const Route& route, const httplib::Request& req, const BodyReader& read_body) {
    auto auth_result = Authenticate(req);
    if (auto* r = std::get_if<Reply>(&auth_result)) return *r;
    const Principal& who = std::get<Principal>(auth_result);
    if (who.role < route.role) {
      return Error(403, std::string("role ") + RoleName(who.role) + " may not " + req.method + " " + req.path +
                            " (needs " + RoleName(route.role) + ")");
    }
    json problems = json::array();
    for (const auto& [key, value] : req.params) {
      if (!route.query.count(key)) problems.push_back(Problem(key, "unknown query parameter"));
    }
    if (!problems.empty()) return Error(400, "unknown query parameter", problems);
    Call call{who, {}, req, json()};
    for (size_t i = 1; i < req.matches.size(); ++i) call.params.push_back(req.matches[i].str());
    if (route.by_name) {
      if (auto bad = CheckName(call.params[0], call.params[1])) return *bad;
      if (!who.Reaches(call.params[0])) return Forbidden(who, call.params[0]);
    }
    std::string body;
    if (read_body) {
      if (auto bad = read_body(body)) return *bad;
    }
    if (body.empty()) {
      if (route.body == Body::kRequired || route.body == Body::kDocuments) return Error(400, "needs a JSON body");
    } else if (route.body == Body::kNone) {
      return Error(400, "this operation takes no body");
    } else if (route.body == Body::kDocuments) {
      call.text = std::move(body);  // read by the documents' own reader, as trigctl reads a file
    } else {
      // The one reader: nesting and size are checked before a value is built (common/json_reader.h).
      auto parsed = ReadJson(body, JsonLimits{.max_bytes = kApiMaxBody});
      if (!parsed.ok())
        return Error(400, "invalid JSON in the body", json::array({Problem("", parsed.status().message())}));
      call.body = std::move(parsed).value();
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

  // The refusal of a request before any route reads it: text that is not UTF-8 or holds a
  // control character anywhere in its target, path, query or headers; a body on GET; a path
  // no route has (404) or a method its routes do not take (405 with Allow).
  std::optional<std::pair<Reply, std::string>> Screen(const httplib::Request& req) {
    json problems = json::array();
    auto check = [&](const std::string& where, std::string_view text) {
      if (std::string why = BadText(text); !why.empty()) problems.push_back(Problem(where, why));
    };
    check("target", req.target);
    check("path", req.path);
    for (const auto& [key, value] : req.params) {
      const std::string name = BadText(key).empty() ? key : "(a parameter name)";
      check("query", key);
      check("query." + name, value);
    }
    for (const auto& [key, value] : req.headers) {
      const std::string name = BadText(key).empty() ? key : "(a header name)";
      check("headers", key);
      check("headers." + name, value);
    }
    if (!problems.empty()) return std::make_pair(Error(400, "invalid bytes in the request", problems), "");
    const bool read_only = req.method == "GET" || req.method == "HEAD";
    const bool api = req.path == "/api" || req.path.rfind("/api/", 0) == 0;
    std::optional<std::pair<Reply, std::string>> refused;
    if (api) {
      refused = RouteMethod(req.method, req.path);
    } else if (!read_only) {
      refused = std::make_pair(
          Error(405, "method " + req.method + " not allowed: the console's files take GET and HEAD"), "GET, HEAD");
    }
    if (refused) return refused;
    if (read_only && (req.has_header("Transfer-Encoding") ||
                      (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0"))) {
      return std::make_pair(Error(400, req.method + " takes no body"), "");
    }
    return std::nullopt;
  }

  // 404 for an API path no route has, 405 with the Allow header's value for a method its
  // routes do not take; nothing when one does.
  std::optional<std::pair<Reply, std::string>> RouteMethod(const std::string& method, const std::string& path) {
    std::set<std::string> allowed;
    for (const auto& [pattern, m] : methods) {
      if (std::regex_match(path, pattern)) allowed.insert(m);
    }
    if (allowed.empty()) return std::make_pair(Error(404, "no such resource: " + method + " " + path), "");
    if (allowed.count("GET")) allowed.insert("HEAD");
    if (allowed.count(method)) return std::nullopt;
    std::string allow;
    for (const char* m : {"GET", "HEAD", "POST", "PUT", "DELETE"}) {
      if (allowed.count(m)) allow += (allow.empty() ? "" : ", ") + std::string(m);
    }
    return std::make_pair(Error(405, "method " + method + " not allowed on " + path + " (allowed: " + allow + ")"),
                          allow);
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
  res.set_content(Dump(reply.body), "application/json");
}

// The body of `req` as bytes, whatever its Content-Type says (a form content type is not
// parsed as a form), at most kApiMaxBody after any Content-Encoding is undone. A request with
// neither Content-Length nor Transfer-Encoding has none (RFC 9112 §6.3).
std::optional<Reply> ReadBody(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader,
                              std::string& body) {
  if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding")) return std::nullopt;
  const auto too_large = [] {
    ApiHttpServer::CloseAfterResponse();
    return Error(413, "body larger than " + std::to_string(kApiMaxBody) + " bytes",
                 json::array({Problem("", "the limit is " + std::to_string(kApiMaxBody) + " bytes")}));
  };
  if (req.is_multipart_form_data()) {
    ApiHttpServer::CloseAfterResponse();
    return Error(415,
                 "a multipart form is no JSON body: send the document as the body (Content-Type: application/json)");
  }
  bool over = false;
  const bool read = reader([&](const char* data, size_t n) {
    if (body.size() + n > kApiMaxBody) {
      over = true;
      return false;
    }
    body.append(data, n);
    return true;
  });
  if (over || res.status == 413) return too_large();
  if (!read) {
    ApiHttpServer::CloseAfterResponse();
    return Error(400,
                 "the body could not be read (cut short, too slow, or a bad Content-Length, "
                 "Transfer-Encoding or Content-Encoding)");
  }
  return std::nullopt;
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

Status ApiServer::Prepare(const ApiOptions& options, std::vector<Route> routes) {
  auto listen = ParseListen(options.listen);
  if (!listen.ok()) return listen.status();
  const auto& host = listen->first;
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
  // Before a file or a route is looked for, and before any body is read.
  s.http.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    auto refused = s.Screen(req);
    if (!refused) return httplib::Server::HandlerResponse::Unhandled;
    // The rest of the request (a body) is not read: it must not be taken for a next request.
    ApiHttpServer::CloseAfterResponse();
    if (!refused->second.empty()) res.set_header("Allow", refused->second);
    Send(res, refused->first);
    return httplib::Server::HandlerResponse::Handled;
  });
  for (Route& route : routes) {
    auto shared = std::make_shared<Route>(std::move(route));
    s.methods.emplace_back(std::regex(shared->pattern), shared->method);
    auto serve = [&s, shared](const httplib::Request& req, httplib::Response& res, const Impl::BodyReader& read) {
      LowerThreadPriority();
      Reply reply;
      try {
        reply = s.Serve(*shared, req, read);
      } catch (const std::exception& e) {
        LogLine(std::string("api: ") + req.method + " " + Printable(req.path) + ": " + e.what());
        reply = Error(500, "internal error");
      }
      Send(res, reply);
    };
    auto with_body = [serve](const httplib::Request& req, httplib::Response& res,
                             const httplib::ContentReader& reader) {
      bool read = false;
      serve(req, res, [&](std::string& body) {
        read = true;
        return ReadBody(req, res, reader, body);
      });
      // Refused before its body was read (401, 403, a bad name): the body's bytes must not be
      // taken for a next request.
      if (!read && (req.has_header("Transfer-Encoding") ||
                    (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0"))) {
        ApiHttpServer::CloseAfterResponse();
      }
    };
    // GET bodies are refused before routing (Screen); the others are read after authentication.
    if (shared->method == "GET")
      s.http.Get(shared->pattern,
                 [serve](const httplib::Request& req, httplib::Response& res) { serve(req, res, {}); });
    if (shared->method == "POST") s.http.Post(shared->pattern, with_body);
    if (shared->method == "PUT") s.http.Put(shared->pattern, with_body);
    if (shared->method == "DELETE") s.http.Delete(shared->pattern, with_body);
  }
  // Whatever escapes a handler, or the library's own code around it: 500 without its text,
  // which goes to the log.
  s.http.set_exception_handler([](const httplib::Request& req, httplib::Response& res, const std::exception_ptr& ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    LogLine("api: " + Printable(req.method) + " " + Printable(req.path) + ": " + what);
    ApiHttpServer::CloseAfterResponse();
    Send(res, Error(500, "internal error"));
  });
  // Whatever the library refuses itself (a bad request line or header, a body over the limit)
  // gets the same error shape; the rest of such a request is not read, so the connection closes.
  s.http.set_error_handler([&s](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    ApiHttpServer::CloseAfterResponse();
    try {
      // A method the library does not know (QUERY, PROPFIND, ...) is refused by its request-line
      // parser with 400, before routing: answered as an undeclared method is.
      const bool token = !req.method.empty() && std::all_of(req.method.begin(), req.method.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
      });
      if (res.status == 400 && token && req.path.empty() && req.version.rfind("HTTP/1.", 0) == 0 &&
          !req.target.empty() && req.target[0] == '/') {
        const std::string path = PathOf(req.target);
        if (BadText(path).empty() && BadText(req.target).empty()) {
          const bool api = path == "/api" || path.rfind("/api/", 0) == 0;
          auto refused =
              api ? s.RouteMethod(req.method, path)
                  : std::make_optional(std::make_pair(
                        Error(405, "method " + req.method + " not allowed: the console's files take GET and HEAD"),
                        std::string("GET, HEAD")));
          if (refused) {
            res.status = refused->first.status;
            if (!refused->second.empty()) res.set_header("Allow", refused->second);
            res.set_content(Dump(refused->first.body), "application/json");
            return;
          }
        }
      }
      std::string what = res.status == 404   ? "no such resource: " + req.method + " " + req.path
                         : res.status == 413 ? "body larger than " + std::to_string(kApiMaxBody) + " bytes"
                         : res.status == 414 ? "request target too long"
                                             : "bad request: the request line or headers are malformed or too long";
      json problems = json::array();
      if (res.status == 413) problems.push_back(Problem("", "the limit is " + std::to_string(kApiMaxBody) + " bytes"));
      res.set_content(Dump(json{{"error", what}, {"problems", problems}}), "application/json");
    } catch (const std::exception&) {
      res.set_content(R"({"error":"bad request","problems":[]})", "application/json");
    }
  });
  // A connection that closes after this response says so.
  s.http.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    if (!ApiHttpServer::ClosingAfterResponse()) return;
    res.headers.erase("Keep-Alive");
    res.headers.erase("Connection");
    res.set_header("Connection", "close");
  });
  // Request lines only, never headers (the Authorization header holds the token) nor bodies.
  s.http.set_logger([](const httplib::Request& req, const httplib::Response& res) {
    if (res.status >= 500)
      LogLine("api: " + std::to_string(res.status) + " " + Printable(req.method) + " " + Printable(req.path));
  });
  return Status();
}

Status ApiServer::Start(const ApiOptions& options) {
  if (Status st = Prepare(options, Routes()); !st.ok()) return st;
  Impl& s = *impl_;
  const auto [host, port] = *ParseListen(options.listen);
  if (port == 0) {
    s.port = s.http.bind_to_any_port(host);
    if (s.port < 0) return Unavailable("api: cannot bind " + host);
  } else if (!s.http.bind_to_port(host, port)) {
    return Unavailable("api: cannot listen on " + options.listen + " (in use, or not an address of this host)");
  } else {
    s.port = port;
  }
  s.thread = std::thread([&s] { s.http.listen_after_bind(); });
  const bool tls = s.certificate != nullptr;
  LogLine("api: serving /api/v1 and the console on " + std::string(tls ? "https" : "http") + "://" +
          (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(s.port) + "/" +
          (s.auth ? "" : " (no TRIGD_TOKENS: loopback only, no token needed)"));
  return Status();
}

std::string ApiServer::ServeBytes(std::string_view bytes) {
  auto* plain = dynamic_cast<ApiHttpServer*>(impl_->owned.get());
  return plain ? plain->ServeBytes(bytes) : std::string();
}

void ApiServer::Stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  impl_->http.stop();
  impl_->thread.join();
}

}  // namespace trigd
