// trigd: the engine binary. `trigd migrate` applies the SQL migrations of schema/.
#include <iostream>
#include <string>
#include <vector>

#include <atomic>
#include <cstdlib>

#include "api/server.h"
#include "app/cli.h"
#include "app/config.h"
#include "app/engine.h"
#include "app/huge_pages.h"
#include "app/stop.h"
#include "store/migrator.h"

namespace {
std::atomic<bool> g_stop{false};

int Migrate(const trigd::Config& config) {
  std::vector<std::string> applied;
  trigd::Status s = trigd::ApplyMigrations(config.pg, trigd::DefaultSchemaDir(), &applied);
  if (!s.ok()) {
    std::cerr << "trigd migrate: " << s.ToString() << "\n";
    return s.code() == trigd::StatusCode::kUnavailable ? 2 : 1;
  }
  for (const auto& name : applied) std::cout << "applied " << name << "\n";
  if (applied.empty()) std::cout << "schema up to date\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  trigd::UseHugePagesForScheduleIndex();
  trigd::Config config;
  CLI::App app("trigd: the trigger engine. Without a command it runs until SIGTERM or SIGINT.");
  trigd::SetUpApp(app, "trigd");
  trigd::AddConfigFlags(app, config, trigd::ConfigFlags::kEngine);
  std::string retention;
  trigd::FlagValue(app.add_option("--retention", retention,
                                  "delete finished jobs and runs older than this (at least 1d; 0 keeps everything)")
                       ->envname("TRIGD_RETENTION"));
  trigd::ApiOptions api;
  trigd::FlagValue(
      app.add_option("--api", api.listen, "HOST:PORT to serve the HTTP API (/api/v1) and the web console on; off: none")
          ->envname("TRIGD_API")
          ->capture_default_str());
  trigd::FlagValue(app.add_option("--tokens", api.tokens_file,
                                  "the API's token file (JSON: sha256, role, namespaces), re-read on SIGHUP; "
                                  "without one the API binds to loopback only")
                       ->envname("TRIGD_TOKENS"));
  trigd::FlagValue(app.add_option("--api-share", api.share,
                                  "the API's largest share of time in PostgreSQL, 0.01 to 1: a flood of API "
                                  "requests waits its turn instead of taking the engine's CPU")
                       ->envname("TRIGD_API_SHARE")
                       ->check(CLI::Range(0.01, 1.0))
                       ->capture_default_str());
  trigd::FlagValue(app.add_option("--api-cert", api.cert_file,
                                  "PEM certificate (chain) of the API: HTTPS with --api-key; re-read when it changes")
                       ->envname("TRIGD_API_CERT"));
  trigd::FlagValue(
      app.add_option("--api-key", api.key_file, "PEM private key of the API's certificate")->envname("TRIGD_API_KEY"));
  if (const char* v = std::getenv("TRIGD_API_INSECURE"); v && std::string(v) == "1") api.insecure = true;
  trigd::FlagValue(app.add_option("--web-dir", api.web_dir, "the console's files (default: the source tree's web/)")
                       ->envname("TRIGD_WEB_DIR"));
  CLI::App* migrate = app.add_subcommand("migrate", "apply the SQL migrations of schema/ and exit");
  migrate->allow_extras();
  app.require_subcommand(0, 1);
  if (auto rc = trigd::ParseCommandLine(app, argc, argv)) return *rc;
  if (auto extra = app.remaining(true); !extra.empty()) {
    std::cerr << "trigd: unknown argument " << extra.front() << "\n(trigd --help lists what it takes)\n";
    return 1;
  }
  trigd::ReadEnvironmentSettings(config);
  if (trigd::Status s = trigd::FinishConfig(config); !s.ok()) return trigd::RefuseSetting(app, s.message());
  if (const char* v = std::getenv("TRIGD_CHECKERS"); v && *v) {
    if (auto n = trigd::ParseCheckers(v); !n.ok()) return trigd::RefuseSetting(app, n.status().message());
  }
  if (auto keep = trigd::ParseRetention(retention); keep.ok()) {
    config.retention = *keep;
  } else {
    return trigd::RefuseCommandLine(app, keep.status().message());
  }
  if (migrate->parsed()) return Migrate(config);
  // The API: threads and PostgreSQL connections of its own, started before the engine's loops
  // (a refused address or token file stops trigd before it consumes anything).
  trigd::ApiServer server;
  trigd::ReloadOnHangup([&server] { (void)server.ReloadTokens(); });
  trigd::StopOnSignals(g_stop);
  if (api.listen != "off") {
    api.pg = config.pg;
    api.kafka = config.kafka;
    api.topic_prefix = config.topic_prefix;
    api.group = config.group;
    if (trigd::Status st = server.Start(api); !st.ok()) {
      std::cerr << "trigd: " << st.message() << "\n";
      return st.code() == trigd::StatusCode::kUnavailable ? 2 : 1;
    }
  }
  trigd::Status s = trigd::RunEngine(config, g_stop);
  server.Stop();
  if (!s.ok()) {
    std::cerr << "trigd: " << s.ToString() << "\n";
    return s.code() == trigd::StatusCode::kUnavailable ? 2 : 1;
  }
  return 0;
}
