// Helpers shared by the service benchmarks (tools/benchmarks/*.cc; a header, so the build does
// not make a program of it): a private PostgreSQL database and topic prefix per run, created
// at the start and dropped at the end (also on SIGINT/SIGTERM), trigd as a child process,
// bulk Kafka producing and consuming with plain librdkafka (the baselines), medians and
// percentiles, and the JSON last line that tools/bench reads.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "common/topic_names.h"
#include "core/schedule_parser.h"
#include "log/topics.h"
#include "store/admin.h"
#include "store/migrator.h"

namespace bench {

using Clock = std::chrono::steady_clock;
using nlohmann::ordered_json;

inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline std::string Getenv(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// Concatenation by append: GCC 12 at -O3 warns falsely (-Wrestrict) on some
// "literal" + std::string expressions once inlined.
inline void AppendPart(std::string& out, std::string_view part) { out.append(part); }
inline void AppendPart(std::string& out, int64_t n) { out.append(std::to_string(n)); }
template <class... Parts>
std::string Cat(const Parts&... parts) {
  std::string out;
  (AppendPart(out, parts), ...);
  return out;
}

inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Nearest-rank percentile of sorted values (p in 0..100).
inline double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

inline double Round(double v, int decimals) {
  double f = std::pow(10.0, decimals);
  return std::round(v * f) / f;
}

// --name=value flags with defaults; anything unknown prints the usage and exits 2.
class Flags {
 public:
  Flags(int argc, char** argv, std::string usage) : usage_(std::move(usage)) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      size_t eq = a.find('=');
      if (a.rfind("--", 0) != 0) Usage();
      if (eq == std::string::npos) {
        if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
          values_[a.substr(2)] = argv[++i];
        } else {
          values_[a.substr(2)] = "true";
        }
      } else {
        values_[a.substr(2, eq - 2)] = a.substr(eq + 1);
      }
    }
  }
  int64_t Int(const std::string& name, int64_t fallback) {
    known_.push_back(name);
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    try {
      // Accepts 10M, 100k.
      std::string v = it->second;
      int64_t scale = 1;
      if (!v.empty() && (v.back() == 'k' || v.back() == 'K')) scale = 1000, v.pop_back();
      if (!v.empty() && (v.back() == 'm' || v.back() == 'M')) scale = 1000000, v.pop_back();
      return static_cast<int64_t>(std::stod(v) * static_cast<double>(scale));
    } catch (...) {
      Usage();
    }
  }
  // Call after every Int(): refuses flags nobody asked for.
  void Check() {
    for (const auto& [k, v] : values_) {
      if (k == "help" || std::find(known_.begin(), known_.end(), k) == known_.end()) Usage();
    }
  }

 private:
  [[noreturn]] void Usage() {
    std::fprintf(stderr, "usage: %s\n", usage_.c_str());
    std::exit(2);
  }
  std::string usage_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> known_;
};

// The bin directory this program runs from (trigd sits next to it).
inline std::string BinDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

// A child process (trigd) whose output goes to a log file; it dies with this process
// (PR_SET_PDEATHSIG), so a crashed benchmark leaves no engine behind.
class Child {
 public:
  Child(const std::string& path, const std::vector<std::string>& args,
        const std::vector<std::pair<std::string, std::string>>& env, const std::string& log)
      : log_(log) {
    pid_t parent = getpid();
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      sigset_t all;
      sigfillset(&all);
      sigprocmask(SIG_UNBLOCK, &all, nullptr);  // the parent blocks signals for its signal thread
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
      }
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(path.c_str()));
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(path.c_str(), argv.data());
      _exit(127);
    }
  }
  ~Child() { Stop(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& log() const { return log_; }
  bool Alive() {
    if (pid_ <= 0) return false;
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }
  // SIGTERM, then SIGKILL after `grace`.
  void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000)) {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    auto deadline = Clock::now() + grace;
    int status;
    while (Clock::now() < deadline) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  std::string Tail(size_t bytes = 2000) const {
    FILE* f = std::fopen(log_.c_str(), "r");
    if (!f) return "";
    std::fseek(f, 0, SEEK_END);
    long size = std::ftell(f);
    std::fseek(f, std::max<long>(0, size - static_cast<long>(bytes)), SEEK_SET);
    std::string out(static_cast<size_t>(std::min<long>(size, static_cast<long>(bytes))), '\0');
    size_t n = std::fread(out.data(), 1, out.size(), f);
    out.resize(n);
    std::fclose(f);
    return out;
  }

 private:
  pid_t pid_ = -1;
  std::string log_;
};

// Deletes every topic whose name starts with `prefix` (librdkafka's admin API).
inline void DeleteTopicsWithPrefix(const std::string& bootstrap, const std::string& prefix) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof err);
  rd_kafka_conf_set(conf, "log_level", "2", err, sizeof err);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!rk) return;
  const rd_kafka_metadata_t* md = nullptr;
  std::vector<std::string> names;
  if (rd_kafka_metadata(rk, 1, nullptr, &md, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    for (int i = 0; i < md->topic_cnt; ++i) {
      std::string name = md->topics[i].topic;
      if (name.rfind(prefix, 0) == 0) names.push_back(name);
    }
    rd_kafka_metadata_destroy(md);
  }
  if (!names.empty()) {
    std::vector<rd_kafka_DeleteTopic_t*> del;
    for (const auto& n : names) del.push_back(rd_kafka_DeleteTopic_new(n.c_str()));
    rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
    rd_kafka_DeleteTopics(rk, del.data(), del.size(), nullptr, q);
    if (rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 15000)) rd_kafka_event_destroy(ev);
    rd_kafka_DeleteTopic_destroy_array(del.data(), del.size());
    rd_kafka_queue_destroy(q);
  }
  rd_kafka_destroy(rk);
}

// One benchmark run's private resources: database bench_<scenario>_<pid>_<time> (migrated),
// topic prefix and consumer group bench-<scenario>-<pid>-<time>, the topics of topics/ under
// that prefix, and any trigd children. Start() first thing in main (it blocks SIGINT/SIGTERM in
// every thread and handles them on its own thread: clean up, exit 130); Finish() at the end.
class Run {
 public:
  static Run& Start(const std::string& scenario) {
    static Run run;
    Run& r = run;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([set] {
      int sig = 0;
      sigwait(&set, &sig);
      std::fprintf(stderr, "%s: signal %d: cleaning up\n", run.scenario.c_str(), sig);
      run.Cleanup();
      _exit(130);
    }).detach();
    r.scenario = scenario;
    r.kafka = Getenv("TRIGD_KAFKA", "127.0.0.1:9092");
    r.pg_admin = Getenv("TRIGD_PG", "host=127.0.0.1 port=55432 user=trigd dbname=trigd");
    std::string tag = std::to_string(getpid()) + "_" + std::to_string(time(nullptr));
    r.db = "bench_" + scenario + "_" + tag;
    r.pg = r.pg_admin + " dbname=" + r.db;
    std::string dashed = "bench-" + scenario + "-" + tag;
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    r.prefix = dashed + ".";
    r.group = dashed;
    try {
      pqxx::connection c(r.pg_admin);
      pqxx::nontransaction tx(c);
      tx.exec("CREATE DATABASE " + r.db);
      // For timing breakdowns: every statement of this database with its duration in the
      // server log.
      if (Getenv("BENCH_LOG_STATEMENTS", "") == "1") {
        tx.exec("ALTER DATABASE " + r.db + " SET log_min_duration_statement = 0");
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: cannot create a database on PostgreSQL (%s): %s\n", scenario.c_str(),
                   r.pg_admin.c_str(), e.what());
      std::exit(2);
    }
    r.created_db_ = true;
    if (trigd::Status s = trigd::ApplyMigrations(r.pg, trigd::DefaultSchemaDir(), nullptr); !s.ok()) {
      r.Fail("migrations: " + s.ToString());
    }
    auto specs = trigd::LoadTopicSpecs(trigd::DefaultTopicsDir(), r.prefix);
    if (!specs.ok()) r.Fail("topics: " + specs.status().ToString());
    r.created_topics_ = true;
    if (auto c = trigd::CreateTopics(r.kafka, *specs); !c.ok()) {
      r.Fail("cannot create topics on Kafka (" + r.kafka + "): " + c.status().ToString());
    }
    return r;
  }

  // A second private database (<db>_<suffix>, migrated unless `migrate` is false, dropped with
  // the first); returns its connection string. For comparing two states of the tables round by
  // round, or for a peer's own tables.
  std::string AddDatabase(const std::string& suffix, bool migrate = true) {
    std::string name = db + "_" + suffix;
    try {
      pqxx::connection c(pg_admin);
      pqxx::nontransaction tx(c);
      tx.exec("CREATE DATABASE " + name);
    } catch (const std::exception& e) {
      Fail("cannot create database " + name + ": " + e.what());
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      extra_dbs_.push_back(name);
    }
    std::string conn = pg_admin + " dbname=" + name;
    if (!migrate) return conn;
    if (trigd::Status s = trigd::ApplyMigrations(conn, trigd::DefaultSchemaDir(), nullptr); !s.ok()) {
      Fail("migrations: " + s.ToString());
    }
    return conn;
  }

  // Creates an extra topic under the prefix (baselines).
  void CreateTopic(const std::string& name, int partitions) {
    if (auto c = trigd::CreateTopics(kafka, {{name, partitions, {}}}); !c.ok()) {
      Fail("cannot create topic " + name + ": " + c.status().ToString());
    }
  }

  // A loopback port the kernel reports free (a random one can be an outgoing connection's).
  static int FreePort() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port = ntohs(a.sin_port);
    }
    if (fd >= 0) ::close(fd);
    return port;
  }

  // trigd with this run's database, prefix and `group` (default: the run's), metrics on a
  // free port; its log goes to /tmp/<db>-trigd-N.log.
  // The HTTP API port of the trigd StartTrigd started last.
  int api_port = 0;

  Child& StartTrigd(const std::string& group_override = "") {
    std::lock_guard<std::mutex> l(mu_);
    int port = FreePort();
    metrics_port = port;
    std::string log = "/tmp/" + db + "-trigd-" + std::to_string(children_.size()) + ".log";
    children_.push_back(
        std::make_unique<Child>(BinDir() + "/trigd", std::vector<std::string>{},
                                std::vector<std::pair<std::string, std::string>>{
                                    {"TRIGD_PG", pg},
                                    {"TRIGD_KAFKA", kafka},
                                    {"TRIGD_TOPIC_PREFIX", prefix},
                                    {"TRIGD_GROUP", group_override.empty() ? group : group_override},
                                    {"TRIGD_METRICS", "127.0.0.1:" + std::to_string(port)},
                                    {"TRIGD_API", "127.0.0.1:" + std::to_string(api_port = FreePort())}},
                                log));
    return *children_.back();
  }

  [[noreturn]] void Fail(const std::string& what) {
    std::fprintf(stderr, "%s: %s\n", scenario.c_str(), what.c_str());
    for (const auto& c : children_) {
      if (c) std::fprintf(stderr, "--- %s (tail)\n%s\n", c->log().c_str(), c->Tail().c_str());
    }
    Cleanup();
    std::exit(1);
  }

  void Finish() { Cleanup(); }

  std::string scenario, kafka, pg_admin, pg, db, prefix, group;
  int metrics_port = 0;  // the last trigd's (StartTrigd)

 private:
  void Cleanup() {
    std::lock_guard<std::mutex> l(mu_);
    if (cleaned_) return;
    cleaned_ = true;
    for (auto& c : children_) c->Stop();
    if (created_topics_) DeleteTopicsWithPrefix(kafka, prefix);
    if (created_db_ && Getenv("BENCH_KEEP_DB", "") == "1") {
      // For looking at plans after a run; drop it by hand.
      std::fprintf(stderr, "%s: kept database %s (BENCH_KEEP_DB=1)\n", scenario.c_str(), db.c_str());
    } else if (created_db_) {
      std::vector<std::string> all = extra_dbs_;
      all.push_back(db);
      for (const std::string& name : all) {
        try {
          pqxx::connection c(pg_admin);
          pqxx::nontransaction tx(c);
          tx.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
        } catch (const std::exception& e) {
          std::fprintf(stderr, "%s: could not drop database %s: %s\n", scenario.c_str(), name.c_str(), e.what());
        }
      }
    }
  }
  std::mutex mu_;
  bool cleaned_ = false, created_db_ = false, created_topics_ = false;
  std::vector<std::unique_ptr<Child>> children_;
  std::vector<std::string> extra_dbs_;
};

// Produces many messages fast (the benchmark's event source): batches of up to 10,000,
// acks=all like any careful producer. Not thread-safe.
class BulkProducer : public RdKafka::DeliveryReportCb {
 public:
  explicit BulkProducer(const std::string& bootstrap, const std::string& linger_ms = "5") {
    std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    std::string err;
    conf->set("bootstrap.servers", bootstrap, err);
    conf->set("linger.ms", linger_ms, err);
    conf->set("batch.num.messages", "10000", err);
    conf->set("queue.buffering.max.messages", "1000000", err);
    conf->set("log_level", "2", err);
    conf->set("dr_cb", static_cast<RdKafka::DeliveryReportCb*>(this), err);
    producer_.reset(RdKafka::Producer::create(conf.get(), err));
    if (!producer_) throw std::runtime_error("producer: " + err);
  }
  void dr_cb(RdKafka::Message& m) override {
    if (m.err() != RdKafka::ERR_NO_ERROR)
      ++failed_;
    else
      ++delivered_;
  }
  // partition -1: by key.
  void Produce(const std::string& topic, const std::string& key, const std::string& value, int partition = -1) {
    while (true) {
      auto err = producer_->produce(topic, partition < 0 ? RdKafka::Topic::PARTITION_UA : partition,
                                    RdKafka::Producer::RK_MSG_COPY, const_cast<char*>(value.data()), value.size(),
                                    key.empty() ? nullptr : key.data(), key.size(), 0, nullptr);
      if (err == RdKafka::ERR_NO_ERROR) break;
      if (err != RdKafka::ERR__QUEUE_FULL) throw std::runtime_error("produce: " + RdKafka::err2str(err));
      producer_->poll(5);
    }
    producer_->poll(0);
  }
  // Waits for every delivery report; throws if any message failed.
  void Flush() {
    while (producer_->outq_len() > 0) producer_->flush(1000);
    if (failed_ > 0) throw std::runtime_error(std::to_string(failed_) + " messages not delivered");
  }
  void Poll() { producer_->poll(0); }
  // Fetches `topic`'s metadata now, so the first message to it does not wait for it.
  void Warm(const std::string& topic) {
    std::string err;
    std::unique_ptr<RdKafka::Topic> t(RdKafka::Topic::create(producer_.get(), topic, nullptr, err));
    if (!t) throw std::runtime_error("topic " + topic + ": " + err);
    RdKafka::Metadata* md = nullptr;
    if (producer_->metadata(false, t.get(), &md, 10000) != RdKafka::ERR_NO_ERROR) {
      throw std::runtime_error("no metadata for " + topic);
    }
    delete md;
  }
  int64_t delivered() const { return delivered_; }

 private:
  std::unique_ptr<RdKafka::Producer> producer_;
  std::atomic<int64_t> delivered_{0}, failed_{0};
};

// A bare librdkafka consumer reading whole batches (rd_kafka_consume_batch_queue) from every
// partition of `topic`, assigned from the beginning (no group join). The baseline of ingest
// and of the storm.
class BatchConsumer {
 public:
  // `start`: the offset to start each partition at (default: the beginning).
  // `settings`: more librdkafka settings, as the consumer being compared sets them.
  BatchConsumer(const std::string& bootstrap, const std::string& group, const std::string& topic, int partitions,
                const std::string& fetch_wait_ms = "10", const std::vector<int64_t>& start = {},
                const std::vector<std::pair<std::string, std::string>>& settings = {}) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    auto set = [&](const char* k, const std::string& v) {
      if (rd_kafka_conf_set(conf, k, v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
        throw std::runtime_error(std::string(k) + ": " + err);
      }
    };
    // The settings of trigd's own consumer (engine/log/kafka.cc), so only the processing differs.
    set("bootstrap.servers", bootstrap);
    set("group.id", group);
    set("enable.auto.commit", "false");
    set("auto.offset.reset", "earliest");
    set("fetch.wait.max.ms", fetch_wait_ms);
    set("log_level", "2");
    for (const auto& [k, v] : settings) set(k.c_str(), v);
    rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk_) throw std::runtime_error(std::string("consumer: ") + err);
    rd_kafka_poll_set_consumer(rk_);
    rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions);
    for (int p = 0; p < partitions; ++p) {
      rd_kafka_topic_partition_list_add(parts, topic.c_str(), p)->offset =
          static_cast<size_t>(p) < start.size() ? start[p] : RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_assign(rk_, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    queue_ = rd_kafka_queue_get_consumer(rk_);
  }
  ~BatchConsumer() {
    rd_kafka_queue_destroy(queue_);
    rd_kafka_consumer_close(rk_);
    rd_kafka_destroy(rk_);
  }
  // Calls f(payload, len) for each message of the next batch (up to 10,000, waiting up to
  // timeout_ms for the first). Returns how many messages it saw.
  template <class F>
  size_t ConsumeBatch(int timeout_ms, F&& f) {
    rd_kafka_message_t* msgs[10000];
    ssize_t n = rd_kafka_consume_batch_queue(queue_, timeout_ms, msgs, 10000);
    size_t seen = 0;
    for (ssize_t i = 0; i < n; ++i) {
      if (msgs[i]->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        f(static_cast<const char*>(msgs[i]->payload), msgs[i]->len);
        ++seen;
      }
      rd_kafka_message_destroy(msgs[i]);
    }
    return seen;
  }

 private:
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_queue_t* queue_ = nullptr;
};

// CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat.
inline double ProcessCpuSeconds(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return 0;
  char buf[4096];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const char* p = std::strrchr(buf, ')');
  if (!p) return 0;
  unsigned long utime = 0, stime = 0;
  if (std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2) return 0;
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The 1-minute load average: the machine is shared, so every result says how busy it was.
inline double LoadAverage() {
  double load = 0;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = 0;
    std::fclose(f);
  }
  return load;
}

// GET http://127.0.0.1:<port><path>: the body, or "" when nothing answers.
inline std::string HttpGet(int port, const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[65536];
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof buf)) > 0) response.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

// A Prometheus histogram's cumulative bucket counts (upper bound -> count, +Inf as infinity),
// read from a /metrics page.
inline std::map<double, double> HistogramBuckets(const std::string& page, const std::string& name) {
  std::map<double, double> buckets;
  const std::string prefix = name + "_bucket{";
  size_t at = 0;
  while ((at = page.find(prefix, at)) != std::string::npos) {
    size_t le = page.find("le=\"", at), close = page.find("\"}", at), eol = page.find('\n', at);
    if (le == std::string::npos || close == std::string::npos || eol == std::string::npos || le > eol) break;
    const std::string bound = page.substr(le + 4, close - le - 4);
    const double upper = bound == "+Inf" ? HUGE_VAL : std::stod(bound);
    buckets[upper] = std::stod(page.substr(close + 2, eol - close - 2));
    at = eol;
  }
  return buckets;
}

// The q-quantile (0..1) of the observations between two snapshots of a histogram, interpolated
// linearly inside its bucket as Prometheus's histogram_quantile does; 0 without observations.
inline double HistogramQuantile(const std::map<double, double>& before, const std::map<double, double>& after,
                                double q) {
  std::vector<std::pair<double, double>> counts;  // (upper bound, cumulative count in between)
  for (const auto& [upper, n] : after) {
    auto it = before.find(upper);
    counts.emplace_back(upper, n - (it == before.end() ? 0 : it->second));
  }
  if (counts.empty() || counts.back().second <= 0) return 0;
  const double rank = q * counts.back().second;
  double lower = 0, below = 0;
  for (const auto& [upper, n] : counts) {
    if (n >= rank) {
      if (std::isinf(upper)) return lower;
      return lower + (upper - lower) * (n > below ? (rank - below) / (n - below) : 1);
    }
    lower = upper;
    below = n;
  }
  return lower;
}

// Prints the JSON last line (tools/bench builds RESULTS.md from it).
inline void PrintJson(const ordered_json& j) {
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

// Parses schedule documents and applies them with trigctl's path (ApplySchedules), `chunk` per
// transaction. Fails the run on any refused document.
inline void ApplyScheduleDocs(Run& run, const std::vector<nlohmann::json>& docs, size_t chunk = 2000) {
  for (size_t i = 0; i < docs.size(); i += chunk) {
    std::vector<trigd::Schedule> batch;
    for (size_t j = i; j < std::min(docs.size(), i + chunk); ++j) {
      trigd::ParsedSchedule p = trigd::ParseSchedule(docs[j]);
      if (!p.ok()) run.Fail("schedule " + docs[j].dump() + ": " + p.errors[0].ToString());
      batch.push_back(std::move(p.schedule));
    }
    if (auto r = trigd::ApplySchedules(run.pg, batch, trigd::Actor{"bench"}); !r.ok())
      run.Fail("apply: " + r.status().ToString());
  }
}

// Schedule documents bench/s<k> for k < count: program p<k>, one partition trigger on
// <dataset_prefix><k>, no constraints (every event on that dataset opens and completes a job).
inline std::vector<nlohmann::json> PartitionSchedules(int64_t count, const std::string& dataset_prefix) {
  std::vector<nlohmann::json> docs;
  docs.reserve(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) {
    docs.push_back({{"namespace", "bench"},
                    {"name", Cat("s", k)},
                    {"program", {{"name", Cat("p", k)}}},
                    {"trigger", {{"partition", {{"dataset", Cat(dataset_prefix, k)}}}}}});
  }
  return docs;
}

// A partition event in the envelope of SPEC §3.
inline std::string PartitionEvent(const std::string& id, const std::string& dataset, const std::string& partition) {
  return R"({"id":")" + id + R"(","type":"partition","time":"2026-11-22T10:00:00Z","payload":{"dataset":")" + dataset +
         R"(","partitions":[")" + partition + R"("]}})";
}

}  // namespace bench
