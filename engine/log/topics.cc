#include "log/topics.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include <librdkafka/rdkafka.h>
#include <nlohmann/json.hpp>

#include "log/kafka_internal.h"

namespace trigd {

std::string NoSuchTopics(const std::vector<std::string>& missing, const KafkaConfig& kafka) {
  std::string names;
  for (const auto& t : missing) names += (names.empty() ? "" : ", ") + t;
  const bool one = missing.size() == 1;
  const std::string check = kafka.properties.empty() ? ", or check --topic-prefix"
                                                     : ", check --topic-prefix, or check that this client's principal "
                                                       "may describe " +
                                                           std::string(one ? "it" : "them") + " (docs/security.md)";
  return one ? "topic " + names + " does not exist at " + kafka.bootstrap + " (create it with trigctl topics create" +
                   check + ")"
             : "topics " + names + " do not exist at " + kafka.bootstrap + " (create them with trigctl topics create" +
                   check + ")";
}

std::string DefaultTopicsDir() {
  if (const char* env = std::getenv("TRIGD_TOPICS_DIR"); env && *env) return env;
  return TRIGD_DEFAULT_TOPICS_DIR;
}

Status SetReplicationFactor(std::vector<TopicSpec>& topics, int n) {
  if (n < 1 || n > 32767)
    return Invalid("--replication-factor: expected an integer from 1 to 32767, got " + std::to_string(n));
  for (TopicSpec& t : topics) {
    t.replication_factor = n;
    if (n < 3) continue;
    const bool set =
        std::any_of(t.config.begin(), t.config.end(), [](const auto& kv) { return kv.first == "min.insync.replicas"; });
    if (!set) t.config.emplace_back("min.insync.replicas", "2");
  }
  return Status();
}

Result<std::vector<TopicSpec>> LoadTopicSpecs(const std::string& dir, const std::string& prefix) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  if (ec) return Invalid("topics folder " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<TopicSpec> out;
  for (const auto& f : files) {
    nlohmann::json doc;
    try {
      std::ifstream in(f);
      doc = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      return Invalid(f.filename().string() + ": " + e.what());
    }
    if (!doc.is_array()) return Invalid(f.filename().string() + ": expected an array of topics");
    for (size_t i = 0; i < doc.size(); ++i) {
      const auto& t = doc[i];
      std::string where = f.filename().string() + "[" + std::to_string(i) + "]";
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
        return Invalid(where + ".name: required string");
      TopicSpec spec{prefix + t["name"].get<std::string>(), 1, {}};
      if (t.contains("partitions")) {
        if (!t["partitions"].is_number_integer() || t["partitions"].get<int>() < 1)
          return Invalid(where + ".partitions: expected an integer >= 1");
        spec.partitions = t["partitions"].get<int>();
      }
      if (t.contains("config")) {
        if (!t["config"].is_object()) return Invalid(where + ".config: expected an object");
        for (const auto& [k, v] : t["config"].items()) {
          if (!v.is_string()) return Invalid(where + ".config." + k + ": expected a string");
          spec.config.emplace_back(k, v.get<std::string>());
        }
      }
      out.push_back(std::move(spec));
    }
  }
  return out;
}

namespace {

// The topics in the broker's metadata with at least one partition and no error; nothing when
// the metadata request fails within timeout_ms (`why`, when given, says how).
std::optional<std::set<std::string>> VisibleTopics(rd_kafka_t* rk, int timeout_ms, std::string* why = nullptr) {
  const rd_kafka_metadata_t* md = nullptr;
  if (rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, nullptr, &md, timeout_ms); e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (why) *why = rd_kafka_err2str(e);
    return std::nullopt;
  }
  std::set<std::string> seen;
  for (int i = 0; i < md->topic_cnt; ++i) {
    if (md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR && md->topics[i].partition_cnt > 0)
      seen.insert(md->topics[i].topic);
  }
  rd_kafka_metadata_destroy(md);
  return seen;
}

// OK once every topic is in the broker's metadata without error; Unavailable, naming a topic
// still missing, after timeout_ms.
Status WaitUntilVisible(rd_kafka_t* rk, const std::vector<TopicSpec>& topics, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string missing;
  for (;;) {
    missing.clear();
    if (auto seen = VisibleTopics(rk, timeout_ms)) {
      for (const auto& t : topics) {
        if (!seen->count(t.name)) missing = t.name;
      }
      if (missing.empty()) return Status();
    } else {
      missing = "(metadata request failed)";
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Unavailable("topic created but not visible in metadata after " + std::to_string(timeout_ms) +
                         " ms: " + missing);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// A client for admin and metadata requests only, with the errors librdkafka reports about its
// connections (the sink, destroyed after the client).
struct Admin {
  std::unique_ptr<kafka_internal::ErrorSink> sink;
  std::unique_ptr<rd_kafka_t, decltype(&rd_kafka_destroy)> rk{nullptr, &rd_kafka_destroy};
  rd_kafka_t* get() const { return rk.get(); }

  // Why the broker refused this client for good; empty when it did not (yet).
  std::string Refused() {
    rd_kafka_poll(rk.get(), 0);  // serves the error events queued meanwhile
    return sink->refusals.Why();
  }
};

Result<std::unique_ptr<Admin>> AdminHandle(const KafkaConfig& kafka) {
  auto admin = std::make_unique<Admin>();
  admin->sink = std::make_unique<kafka_internal::ErrorSink>();
  admin->sink->kafka = &kafka;
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  // The caller reports unreachability in one line; librdkafka's per-attempt logs are noise here.
  // No idempotence: it sends no message, and an idempotent producer asks the broker for a
  // producer id at once, which a principal with no Write ACL is refused.
  if (Status s = kafka_internal::Configure(conf, kafka, {{"log_level", "2"}}, {}); !s.ok()) {
    rd_kafka_conf_destroy(conf);
    return s;
  }
  kafka_internal::RouteLogsAndErrors(conf, admin->sink.get());
  if (Status s = kafka_internal::WatchConnectionLogs(conf, kafka); !s.ok()) {
    rd_kafka_conf_destroy(conf);
    return s;
  }
  char err[512];
  admin->rk.reset(rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err));
  if (!admin->rk) {
    rd_kafka_conf_destroy(conf);
    return Invalid("kafka client: " + kafka.Redact(err));
  }
  return admin;
}

// The metadata of every topic, asked in slices so that a broker refusing the client (wrong
// credentials, a certificate that does not verify) is told at once rather than after
// timeout_ms; as VisibleTopics otherwise.
Result<std::set<std::string>> Visible(Admin& admin, const KafkaConfig& kafka, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string why;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const int slice = static_cast<int>(std::clamp<int64_t>(left.count(), 1, 500));
    if (auto seen = VisibleTopics(admin.get(), slice, &why)) return *seen;
    if (std::string refused = admin.Refused(); !refused.empty()) return Invalid(refused);
    if (left.count() <= slice) return Unavailable("cannot reach Kafka at " + kafka.bootstrap + ": " + why);
  }
}

// A broker leaves the topics a principal may not describe out of its metadata of all topics.
// Asked by name (by a consumer handle, whose metadata requests never create a topic), it says
// TOPIC_AUTHORIZATION_FAILED for them: kInvalid naming the first such topic; OK otherwise.
Status DeniedTopic(const KafkaConfig& kafka, const std::vector<std::string>& topics, int timeout_ms) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (Status s = kafka_internal::Configure(conf, kafka, {{"log_level", "2"}}, {{"allow.auto.create.topics", "false"}});
      !s.ok()) {
    rd_kafka_conf_destroy(conf);
    return s;
  }
  char err[512];
  std::unique_ptr<rd_kafka_t, decltype(&rd_kafka_destroy)> rk(rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err),
                                                              &rd_kafka_destroy);
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    return Status();
  }
  for (const std::string& topic : topics) {
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk.get(), topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t e = rd_kafka_metadata(rk.get(), 0, rkt, &md, timeout_ms);
    const bool denied = e == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 &&
                        md->topics[0].err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED;
    if (md) rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    if (denied) {
      return Invalid("Kafka denied this principal: " +
                     std::string(rd_kafka_err2str(RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)) + " (topic " + topic +
                     "; see docs/security.md for the ACLs each principal needs)");
    }
  }
  return Status();
}

}  // namespace

Result<std::vector<std::string>> MissingTopics(const KafkaConfig& kafka, const std::vector<std::string>& names,
                                               int timeout_ms) {
  auto rk = AdminHandle(kafka);
  if (!rk.ok()) return rk.status();
  auto seen = Visible(**rk, kafka, timeout_ms);
  if (!seen.ok()) return seen.status();
  std::vector<std::string> missing;
  for (const auto& n : names) {
    if (!seen->count(n)) missing.push_back(n);
  }
  if (!missing.empty() && !kafka.properties.empty()) {
    if (Status denied = DeniedTopic(kafka, missing, timeout_ms); !denied.ok()) return denied;
  }
  return missing;
}

Result<std::vector<TopicCreation>> CreateTopics(const KafkaConfig& kafka, const std::vector<TopicSpec>& topics,
                                                int timeout_ms) {
  auto handle = AdminHandle(kafka);
  if (!handle.ok()) return handle.status();
  Admin& rk = **handle;
  char err[512];

  // Reachability first, so "broker down" is Unavailable rather than a per-topic error.
  const auto seen = Visible(rk, kafka, timeout_ms);
  if (!seen.ok()) return seen.status();
  // Topics the broker has already are not asked for: a broker that refuses CreateTopics to trigd
  // (topics made by its operators), or one without the admin API, costs no admin request.
  std::vector<TopicSpec> wanted;
  for (const auto& t : topics) {
    if (!seen->count(t.name)) wanted.push_back(t);
  }
  auto in_order = [&](const std::vector<TopicCreation>& created) {
    std::vector<TopicCreation> out;
    for (const auto& t : topics) {
      auto it = std::find_if(created.begin(), created.end(), [&](const TopicCreation& c) { return c.name == t.name; });
      out.push_back({t.name, it != created.end() && it->created});
    }
    return out;
  };
  if (wanted.empty()) return in_order({});

  std::vector<rd_kafka_NewTopic_t*> news;
  for (const auto& t : wanted) {
    rd_kafka_NewTopic_t* nt =
        rd_kafka_NewTopic_new(t.name.c_str(), t.partitions, t.replication_factor, err, sizeof err);
    if (!nt) {
      for (auto* n : news) rd_kafka_NewTopic_destroy(n);
      return Invalid(t.name + ": " + err);
    }
    for (const auto& [k, v] : t.config) rd_kafka_NewTopic_set_config(nt, k.c_str(), v.c_str());
    news.push_back(nt);
  }
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk.get());
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk.get(), RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_operation_timeout(opts, timeout_ms, err, sizeof err);
  rd_kafka_CreateTopics(rk.get(), news.data(), news.size(), opts, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, timeout_ms + 5000);
  Result<std::vector<TopicCreation>> result = Unavailable("no answer from Kafka to CreateTopics");
  if (ev) {
    if (rd_kafka_event_error(ev)) {
      result = Unavailable(std::string("CreateTopics: ") + rd_kafka_event_error_string(ev));
    } else {
      size_t n = 0;
      const rd_kafka_topic_result_t** res =
          rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
      std::vector<TopicCreation> out;
      Status failure;
      for (size_t i = 0; i < n; ++i) {
        rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
        std::string name = rd_kafka_topic_result_name(res[i]);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
          out.push_back({name, true});
        } else if (e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
          out.push_back({name, false});
        } else if (failure.ok()) {
          const char* msg = rd_kafka_topic_result_error_string(res[i]);
          failure = Invalid(name + ": " + (msg ? msg : rd_kafka_err2str(e)));
        }
      }
      if (failure.ok())
        result = std::move(out);
      else
        result = failure;
    }
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_queue_destroy(q);
  for (auto* nt : news) rd_kafka_NewTopic_destroy(nt);
  if (result.ok()) {
    // The controller acknowledges a creation before every broker's metadata cache has it;
    // a produce or a metadata request right after would see "unknown topic". Return only once
    // the topics are visible, so "trigd topics create && produce" works.
    Status visible = WaitUntilVisible(rk.get(), wanted, timeout_ms);
    if (!visible.ok()) return visible;
    return in_order(*result);
  }
  return result;
}

}  // namespace trigd
