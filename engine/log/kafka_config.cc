#include "log/kafka_config.h"

#include <sys/stat.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "common/log.h"
#include "log/kafka_internal.h"

namespace trigd {

namespace {

constexpr std::array<std::string_view, 7> kSecretProperties = {
    "sasl.password", "ssl.key.password",        "ssl.keystore.password",          "ssl.key.pem",
    "ssl_key",       "sasl.oauthbearer.config", "sasl.oauthbearer.client.secret",
};

constexpr std::string_view kPositions =
    "trigd keeps its positions in PostgreSQL and trigd-worker commits only the launch requests it took";

struct Refused {
  std::string_view name;
  std::string_view reason;
};

constexpr std::array<Refused, 21> kRefused = {{
    {"bootstrap.servers", "the brokers are TRIGD_KAFKA (--kafka)"},
    {"metadata.broker.list", "the brokers are TRIGD_KAFKA (--kafka)"},
    {"group.id", "trigd names its consumer groups (TRIGD_GROUP, --group; trigd-worker --group-id)"},
    {"group.instance.id", "static membership is TRIGD_INSTANCE_ID (--instance-id), one id per trigd process"},
    {"enable.idempotence",
     "every producer of trigd and trigd-worker is idempotent, so a retried send never duplicates a launch request, "
     "a report or an event"},
    {"acks",
     "every producer waits for all in-sync replicas (acks=all): a confirmed launch request or report is "
     "never lost with a broker"},
    {"request.required.acks",
     "every producer waits for all in-sync replicas (acks=all): a confirmed launch request or report is never lost "
     "with a broker"},
    {"transactional.id",
     "trigd's producers are idempotent, not transactional: a transactional id would make every "
     "send outside a transaction fail"},
    {"enable.auto.commit", kPositions},
    {"auto.commit.enable", kPositions},
    {"enable.auto.offset.store", kPositions},
    {"auto.commit.interval.ms", kPositions},
    {"offset.store.method", kPositions},
    {"offset.store.path", kPositions},
    {"offset.store.sync.interval.ms", kPositions},
    {"auto.offset.reset", "a consumer without a position reads from the beginning (earliest), so no event is skipped"},
    {"isolation.level",
     "consumers read committed messages only (read_committed): an aborted transaction's events "
     "never trigger anything"},
    {"partition.assignment.strategy",
     "trigd chooses it by membership: cooperative-sticky for dynamic members, roundrobin for static ones"},
    {"queuing.strategy", "lifo would send messages out of order"},
    {"msg_order_cmp", "messages are sent in the order they are produced"},
    {"enable.partition.eof", "trigd's consumers never stop at the end of a partition"},
}};

std::string Lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\f'; }

void AppendUtf8(std::string& out, unsigned code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

// Unescapes a name or a value: kInvalid on a malformed \u.
Result<std::string> Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    switch (c) {
      case 't': out += '\t'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        unsigned code = 0;
        for (size_t k = 1; k <= 4; ++k) {
          if (i + k >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + k])))
            return Invalid("malformed \\uXXXX escape");
          code = code * 16 + static_cast<unsigned>(std::stoi(std::string(1, s[i + k]), nullptr, 16));
        }
        AppendUtf8(out, code);
        i += 4;
        break;
      }
      default: out += c;
    }
  }
  return out;
}

// Where the message of librdkafka names a property of the file: its line ("FILE:N: "), or the
// file alone.
std::string Where(const KafkaConfig& config, const std::string& message) {
  for (const KafkaProperty& p : config.properties) {
    if (message.find("`" + p.name + "`") != std::string::npos ||
        message.find("\"" + p.name + "\"") != std::string::npos || message.rfind(p.name + " ", 0) == 0 ||
        message.rfind(p.name + ":", 0) == 0) {
      return config.file + ":" + std::to_string(p.line) + ": ";
    }
  }
  return config.file + ": ";
}

void DiscardLog(const rd_kafka_t*, int, const char*, const char*) {}

// The producer's and the consumer's configuration as trigd builds them, tried without a
// broker: librdkafka checks what depends on more than one property when a client is made.
Status TryClients(const KafkaConfig& config) {
  KafkaConfig offline = config;
  offline.bootstrap.clear();  // no broker: nothing is contacted
  for (const rd_kafka_type_t type : {RD_KAFKA_PRODUCER, RD_KAFKA_CONSUMER}) {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    kafka_internal::Settings owned =
        type == RD_KAFKA_PRODUCER ? kafka_internal::ProducerOwned() : kafka_internal::ConsumerOwned();
    if (type == RD_KAFKA_CONSUMER) owned.emplace_back("group.id", "trigd-configuration-check");
    if (Status s = kafka_internal::Configure(conf, offline, {{"log_level", "0"}}, owned); !s.ok()) {
      rd_kafka_conf_destroy(conf);
      return s;
    }
    rd_kafka_conf_set_log_cb(conf, DiscardLog);
    char err[512] = "";
    rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
    if (!rk) {
      rd_kafka_conf_destroy(conf);
      return Invalid(config.Redact(Where(config, err) + err));
    }
    rd_kafka_destroy(rk);
  }
  return Status();
}

}  // namespace

int KafkaConfig::LogLevel() const {
  int level = 2;
  for (const KafkaProperty& p : properties) {
    if (p.name == "debug" && !p.value.empty()) return 7;
    if (p.name == "log_level") level = std::atoi(p.value.c_str());
  }
  return level;
}

std::string KafkaConfig::Redact(std::string text) const {
  for (const KafkaProperty& p : properties) {
    if (!IsSecretProperty(p.name) || p.value.empty()) continue;
    for (size_t at = text.find(p.value); at != std::string::npos; at = text.find(p.value, at)) {
      text.replace(at, p.value.size(), "[redacted]");
      at += std::strlen("[redacted]");
    }
  }
  return text;
}

bool IsSecretProperty(std::string_view name) {
  for (std::string_view s : kSecretProperties) {
    if (name == s) return true;
  }
  return false;
}

std::string RefusedPropertyReason(std::string_view name, std::string_view value) {
  if (name == "acks" || name == "request.required.acks") {
    const std::string v = Lowered(value);
    if (v == "all" || v == "-1") return "";  // what trigd sets anyway
  }
  for (const Refused& r : kRefused) {
    if (r.name == name) return std::string(r.reason);
  }
  return "";
}

Result<std::vector<KafkaProperty>> ParseJavaProperties(std::string_view text) {
  std::vector<KafkaProperty> out;
  std::vector<std::string_view> lines;
  for (size_t start = 0; start <= text.size();) {
    size_t end = text.find_first_of("\r\n", start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    if (end == text.size()) break;
    start = end + (text[end] == '\r' && end + 1 < text.size() && text[end + 1] == '\n' ? 2 : 1);
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    const int line_number = static_cast<int>(i) + 1;
    std::string_view first = lines[i];
    while (!first.empty() && IsBlank(first.front())) first.remove_prefix(1);
    if (first.empty() || first.front() == '#' || first.front() == '!') continue;
    // A line ending in an odd number of backslashes goes on at the next, its blanks dropped.
    std::string logical;
    std::string_view piece = first;
    for (;;) {
      size_t slashes = 0;
      while (slashes < piece.size() && piece[piece.size() - 1 - slashes] == '\\') ++slashes;
      if (slashes % 2 == 0 || i + 1 >= lines.size()) {
        logical += std::string(piece.substr(0, slashes % 2 == 1 ? piece.size() - 1 : piece.size()));
        break;
      }
      logical += std::string(piece.substr(0, piece.size() - 1));
      piece = lines[++i];
      while (!piece.empty() && IsBlank(piece.front())) piece.remove_prefix(1);
    }
    size_t k = 0;
    while (k < logical.size() && logical[k] != '=' && logical[k] != ':' && !IsBlank(logical[k])) {
      k += logical[k] == '\\' ? 2 : 1;
    }
    k = std::min(k, logical.size());
    const std::string_view raw_name = std::string_view(logical).substr(0, k);
    size_t v = k;
    while (v < logical.size() && IsBlank(logical[v])) ++v;
    if (v < logical.size() && (logical[v] == '=' || logical[v] == ':')) ++v;
    while (v < logical.size() && IsBlank(logical[v])) ++v;
    auto name = Unescape(raw_name);
    if (!name.ok()) return Invalid("line " + std::to_string(line_number) + ": the name: " + name.status().message());
    if (name->empty()) return Invalid("line " + std::to_string(line_number) + ": a value without a property name");
    auto value = Unescape(std::string_view(logical).substr(v));
    if (!value.ok()) {
      return Invalid("line " + std::to_string(line_number) + ": " + *name + ": " + value.status().message());
    }
    out.push_back({std::move(*name), std::move(*value), line_number});
  }
  return out;
}

Status LoadKafkaProperties(KafkaConfig& config) {
  config.properties.clear();
  if (config.file.empty()) return Status();
  std::ifstream in(config.file, std::ios::binary);
  if (!in) {
    return Invalid("TRIGD_KAFKA_CONFIG: cannot read " + config.file + ": " + std::strerror(errno));
  }
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = ParseJavaProperties(text.str());
  if (!parsed.ok()) {
    // "line N: ..." as "FILE:N: ..."
    const std::string& m = parsed.status().message();
    return Invalid(config.file + ":" + m.substr(5));
  }
  std::map<std::string, int> seen;
  rd_kafka_conf_t* scratch = rd_kafka_conf_new();
  std::unique_ptr<rd_kafka_conf_t, decltype(&rd_kafka_conf_destroy)> owner(scratch, &rd_kafka_conf_destroy);
  bool secrets = false;
  for (const KafkaProperty& p : *parsed) {
    const std::string where = config.file + ":" + std::to_string(p.line) + ": ";
    if (auto [it, fresh] = seen.emplace(p.name, p.line); !fresh) {
      return Invalid(where + p.name + " is given twice (first at line " + std::to_string(it->second) + ")");
    }
    if (std::string why = RefusedPropertyReason(p.name, p.value); !why.empty()) {
      return Invalid(where + p.name + " is set by trigd, not by TRIGD_KAFKA_CONFIG: " + why);
    }
    char err[512] = "";
    if (rd_kafka_conf_set(scratch, p.name.c_str(), p.value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      std::string message = err;
      if (IsSecretProperty(p.name)) message = p.name + ": invalid value";
      return Invalid(where + message);
    }
    secrets = secrets || IsSecretProperty(p.name);
  }
  config.properties = std::move(*parsed);
  if (Status s = TryClients(config); !s.ok()) return s;
  struct stat st {};
  if (secrets && stat(config.file.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    LogLine("warning: " + config.file + " holds secrets and may be read by other users (chmod 600 it)");
  }
  return Status();
}

namespace kafka_internal {

Status Configure(rd_kafka_conf_t* conf, const KafkaConfig& kafka, const Settings& tunables, const Settings& owned) {
  char err[512];
  auto set = [&](const std::string& name, const std::string& value) {
    err[0] = '\0';
    return rd_kafka_conf_set(conf, name.c_str(), value.c_str(), err, sizeof err) == RD_KAFKA_CONF_OK;
  };
  if (!kafka.bootstrap.empty() && !set("bootstrap.servers", kafka.bootstrap)) {
    return Invalid(std::string("bootstrap servers: ") + err);
  }
  for (const auto& [k, v] : tunables) {
    if (!set(k, v)) return Invalid(k + ": " + err);
  }
  for (const KafkaProperty& p : kafka.properties) {
    if (!set(p.name, p.value)) {
      return Invalid(kafka.file + ":" + std::to_string(p.line) + ": " +
                     (IsSecretProperty(p.name) ? p.name + ": invalid value" : kafka.Redact(err)));
    }
  }
  for (const auto& [k, v] : owned) {
    if (!set(k, v)) return Invalid(k + ": " + err);
  }
  return Status();
}

const Settings& ProducerOwned() {
  static const Settings kOwned = {{"enable.idempotence", "true"}, {"acks", "all"}};
  return kOwned;
}

const Settings& ConsumerOwned() {
  static const Settings kOwned = {{"auto.offset.reset", "earliest"}, {"isolation.level", "read_committed"}};
  return kOwned;
}

void Refusals::Report(rd_kafka_resp_err_t err, const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!why_.empty()) return;
  switch (err) {
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
      why_ = "Kafka refused the credentials: " + text + " (check sasl.username, sasl.password and sasl.mechanism)";
      return;
    case RD_KAFKA_RESP_ERR__SSL: why_ = "TLS with Kafka failed: " + text; return;
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
      why_ = "Kafka denied this principal: " + text + " (see docs/security.md for the ACLs each one needs)";
      return;
    case RD_KAFKA_RESP_ERR__TRANSPORT:
      // librdkafka's words when a broker closes the connection before answering its first
      // request: TLS or SASL expected where the client spoke plaintext. A broker that is
      // starting may do the same once, so only a repeat before any contact counts.
      if (!reached_ && IsProtocolHint(text) && ++protocol_hints_ >= 3) {
        why_ = "Kafka closed every connection before answering: " + text;
      }
      return;
    default: return;
  }
}

bool IsProtocolHint(const std::string& text) { return text.find("incorrect security.protocol") != std::string::npos; }

Status WatchConnectionLogs(rd_kafka_conf_t* conf, const KafkaConfig& kafka) {
  if (kafka.LogLevel() >= kWatchedLogLevel) return Status();
  char err[512];
  if (rd_kafka_conf_set(conf, "log_level", std::to_string(kWatchedLogLevel).c_str(), err, sizeof err) !=
      RD_KAFKA_CONF_OK) {
    return Invalid(std::string("log_level: ") + err);
  }
  return Status();
}

void Refusals::Reached() {
  std::lock_guard<std::mutex> lock(mu_);
  reached_ = true;
}

std::string Refusals::Why() const {
  std::lock_guard<std::mutex> lock(mu_);
  return why_;
}

namespace {

void LogToTrigd(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
  auto* sink = static_cast<ErrorSink*>(rd_kafka_opaque(rk));
  if (sink && sink->kafka && IsProtocolHint(buf))
    sink->refusals.Report(RD_KAFKA_RESP_ERR__TRANSPORT, sink->kafka->Redact(buf));
  if (sink && sink->kafka && level > sink->kafka->LogLevel()) return;
  const std::string line = std::string("kafka: ") + fac + ": " + buf;
  LogLine(sink && sink->kafka ? sink->kafka->Redact(line) : line);
}

void ErrorToRefusals(rd_kafka_t*, int err, const char* reason, void* opaque) {
  auto* sink = static_cast<ErrorSink*>(opaque);
  if (!sink) return;
  sink->refusals.Report(static_cast<rd_kafka_resp_err_t>(err),
                        sink->kafka ? sink->kafka->Redact(reason) : std::string(reason));
}

}  // namespace

void RouteLogsAndErrors(rd_kafka_conf_t* conf, ErrorSink* sink) {
  rd_kafka_conf_set_opaque(conf, sink);
  rd_kafka_conf_set_log_cb(conf, LogToTrigd);
  rd_kafka_conf_set_error_cb(conf, ErrorToRefusals);
}

}  // namespace kafka_internal

}  // namespace trigd
