#include "app/cli.h"

#include <iostream>
#include <regex>

#include "version.h"

namespace trigd {

CLI::Option* FlagValue(CLI::Option* option) {
  return option->check(CLI::Validator(
      [](std::string& value) { return value.rfind("--", 0) == 0 ? std::string("needs a value") : std::string(); }, "",
      "FlagValue"));
}

void AddConfigFlags(CLI::App& app, Config& config, ConfigFlags which) {
  const std::string group = "Connection (flag, else environment variable, else default)";
  auto add = [&](const char* flag, std::string& out, const char* env, const char* what) {
    FlagValue(app.add_option(flag, out, what)->envname(env)->capture_default_str()->group(group));
  };
  add("--kafka", config.kafka.bootstrap, "TRIGD_KAFKA", "Kafka bootstrap servers, HOST:PORT[,...]");
  add("--kafka-config", config.kafka.file, "TRIGD_KAFKA_CONFIG",
      "a file of librdkafka properties (Java properties: TLS, SASL, ...)");
  add("--pg", config.pg, "TRIGD_PG", "PostgreSQL connection string");
  add("--topic-prefix", config.topic_prefix, "TRIGD_TOPIC_PREFIX", "prefix of every topic name");
  add("--group", config.group, "TRIGD_GROUP", "consumer group of trigd's ingest");
  if (which == ConfigFlags::kEngine) {
    add("--metrics", config.metrics, "TRIGD_METRICS", "HOST:PORT to serve /metrics on");
    add("--instance-id", config.instance_id, "TRIGD_INSTANCE_ID",
        "static group membership id of this process (empty: dynamic)");
  }
}

Config LoadConfig() {
  Config c;
  CLI::App app;
  AddConfigFlags(app, c, ConfigFlags::kEngine);
  app.parse(std::vector<std::string>{});
  ReadEnvironmentSettings(c);
  return c;
}

void SetUpApp(CLI::App& app, const std::string& name) {
  app.name(name);
  app.allow_extras();
  app.fallthrough();
  app.get_formatter()->label("Usage", "usage");
  app.get_formatter()->column_width(34);
  app.set_version_flag("--version", name + " " + TRIGD_VERSION, "print the version and exit");
}

const CLI::App& Leaf(const CLI::App& root) {
  const CLI::App* app = &root;
  while (!app->get_subcommands().empty()) app = app->get_subcommands().front();
  return *app;
}

std::string CommandPath(const CLI::App& root) {
  std::string path;
  for (const CLI::App* app = &root; !app->get_subcommands().empty();) {
    app = app->get_subcommands().front();
    path += (path.empty() ? "" : " ") + app->get_name();
  }
  return path;
}

std::string ParseProblem(const CLI::ParseError& e) {
  // CLI11's ArgumentMismatch messages (CLI/Error.hpp): "NAME: 1 required TEXT missing" (a flag
  // at the end), "NAME: At Most 1 required but received 2", and FlagValue's refusal.
  static const std::regex kMissing(R"(^(\S+): \d+ required \S+ missing$)");
  static const std::regex kTwice(R"(^(\S+): At Most 1 required but received \d+$)");
  static const std::regex kFlagAsValue(R"(^(\S+): needs a value$)");
  std::string what = e.what();
  std::smatch m;
  if (std::regex_match(what, m, kMissing) || std::regex_match(what, m, kFlagAsValue))
    return m[1].str() + " needs a value";
  if (std::regex_match(what, m, kTwice)) return m[1].str() + " given more than once";
  return what;
}

int RefuseCommandLine(const CLI::App& root, const std::string& problem) {
  const std::string command = CommandPath(root);
  const std::string where = root.get_name() + (command.empty() ? "" : " " + command);
  std::cerr << where << ": " << problem << "\n(" << where << " --help lists what it takes)\n";
  return 1;
}

int RefuseSetting(const CLI::App& root, const std::string& problem) {
  std::cerr << root.get_name() << ": " << problem << "\n";
  return 1;
}

std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);  // the help of the deepest subcommand named, on stdout; exit 0
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);  // "NAME VERSION" on stdout; exit 0
  } catch (const CLI::ParseError& e) {
    return RefuseCommandLine(app, ParseProblem(e));
  }
  return std::nullopt;
}

}  // namespace trigd
