#include "api/client.h"

#include <httplib.h>
#include <unistd.h>

#include "common/json_reader.h"

namespace trigd {

using nlohmann::json;

Result<std::unique_ptr<ApiClient>> ApiClient::Create(const std::string& url, const std::string& token,
                                                     const std::string& ca_file) {
  const std::string scheme = url.rfind("https://", 0) == 0 ? "https://" : "http://";
  const size_t slash = url.find('/', scheme.size());
  const bool bare = slash == std::string::npos || slash + 1 == url.size();  // nothing after HOST:PORT[/]
  if (url.rfind(scheme, 0) != 0 || url.size() == scheme.size() || !bare) {
    return Invalid("--api must be http://HOST:PORT or https://HOST:PORT, got \"" + url + "\"");
  }
  if (!ca_file.empty() && scheme == "http://") return Invalid("--cacert is for an https:// --api");
  if (!ca_file.empty() && access(ca_file.c_str(), R_OK) != 0) return Invalid("--cacert: cannot read " + ca_file);
  std::unique_ptr<ApiClient> c(new ApiClient());
  c->url_ = url.back() == '/' ? url.substr(0, url.size() - 1) : url;
  c->token_ = token;
  c->ca_file_ = ca_file;
  return c;
}

ApiClient::~ApiClient() = default;

std::string ApiClient::Encode(const std::string& text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Result<json> ApiClient::Call(const std::string& method, const std::string& path,
                             const std::optional<json>& body) const {
  httplib::Client client(url_);
  // https: the server's certificate and name are verified, against --cacert or the system's CAs.
  client.enable_server_certificate_verification(true);
  if (!ca_file_.empty()) client.set_ca_cert_path(ca_file_.c_str());
  client.set_connection_timeout(std::chrono::seconds(5));
  client.set_read_timeout(std::chrono::seconds(60));
  httplib::Headers headers;
  if (!token_.empty()) headers.emplace("Authorization", "Bearer " + token_);
  const std::string text = body ? body->dump() : std::string();
  httplib::Result r = method == "GET"      ? client.Get(path, headers)
                      : method == "DELETE" ? client.Delete(path, headers)
                      : method == "PUT"    ? client.Put(path, headers, text, "application/json")
                                           : client.Post(path, headers, text, "application/json");
  if (!r && r.error() == httplib::Error::SSLServerVerification) {
    return Invalid("the API at " + url_ + " has a certificate that does not verify" +
                   (ca_file_.empty() ? " (give its CA with --cacert)" : " against " + ca_file_));
  }
  if (!r) return Unavailable("cannot reach the API at " + url_ + ": " + httplib::to_string(r.error()));
  // A reply is JSON from outside trigctl: read within the nesting limit (lists are long: no
  // size limit beyond what the reply holds).
  Result<json> read = ReadJson(r->body, JsonLimits{.max_bytes = r->body.size()});
  json reply = read.ok() ? std::move(read).value() : json(json::value_t::discarded);
  if (r->status >= 200 && r->status < 300) {
    if (reply.is_discarded()) return Internal("the API at " + url_ + " answered " + path + " with no JSON");
    return reply;
  }
  std::string message = reply.is_object() && reply.contains("error") && reply["error"].is_string()
                            ? reply["error"].get<std::string>()
                            : "HTTP " + std::to_string(r->status);
  if (reply.is_object() && reply.contains("problems") && reply["problems"].is_array()) {
    for (const auto& p : reply["problems"]) {
      if (!p.is_object()) continue;
      const std::string where = p.value("path", "");
      const std::string what = p.value("message", "");
      if (what == message) continue;
      message += "\n" + (where.empty() ? what : where + ": " + what);
    }
  }
  if (r->status == 404) return NotFound(message);
  if (r->status == 409) return FailedPrecondition(message);
  if (r->status >= 500) return Unavailable(message);
  return Invalid(message);
}

}  // namespace trigd
