// trigctl: the inspection and administration CLI (SPEC §6), as `trigctl NOUN VERB`: one file
// per noun in trigctl/. Human tables by default, --json for scripts. Exit codes: 0 ok, 1 refused
// input (a command line it cannot take included), 2 cannot reach Kafka or PostgreSQL.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "app/cli.h"
#include "app/trigctl/context.h"
#include "common/log.h"

namespace {

// "a, b or c"
std::string Choices(const std::vector<const CLI::App*>& apps) {
  std::string out;
  for (size_t i = 0; i < apps.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == apps.size() ? " or " : ", ") + apps[i]->get_name();
  }
  return out;
}

// Arguments the command line's subcommands did not take: named with the command.
std::string ExtraProblem(const CLI::App& root, const std::vector<std::string>& extra) {
  const CLI::App& leaf = trigd::Leaf(root);
  const std::string& first = extra.front();
  if (first.size() > 1 && first[0] == '-') return "unknown flag " + first;
  if (&leaf == &root) {
    std::string words;
    for (const auto& x : extra) words += (words.empty() ? "" : " ") + x;
    return "unknown command: " + words;
  }
  if (!leaf.get_subcommands({}).empty()) {
    return "unknown " + std::string(leaf.get_parent() == &root ? "verb " : "kind ") + first + " (" +
           Choices(leaf.get_subcommands({})) + ")";
  }
  if (leaf.get_name() == "apply") {
    // `-f a.json b.json` applied a.json alone and said nothing of b.json.
    return "unexpected " + first + " (each file or folder takes its own -f: -f a.json -f b.json)";
  }
  return "unexpected argument " + first;
}

}  // namespace

int main(int argc, char** argv) {
  trigd::SetLogLines(false);  // trigctl's output is its tables and its errors
  const std::vector<std::string> raw(argv + 1, argv + argc);
  trigctl::Context ctx;
  CLI::App app("trigctl: inspect and administer trigd (docs/trigctl.md).");
  ctx.root = &app;
  trigd::SetUpApp(app, "trigctl");
  app.footer(
      "--json, --kafka, --pg, --topic-prefix and --group go before or after the command.\n"
      "exit codes: 0 ok, 1 refused input, 2 cannot reach Kafka or PostgreSQL");
  // The engine's own flags mean nothing here: refused, not ignored (whatever follows them).
  for (const std::string f : {"--metrics", "--instance-id"}) {
    for (const auto& r : raw) {
      if (r == f || r.rfind(f + "=", 0) == 0)
        return trigd::RefuseCommandLine(app, f + " is a flag of trigd, not of trigctl");
    }
  }
  if (!raw.empty() && raw[0] == "help") {
    std::cout << app.help();
    return 0;
  }
  app.add_flag("--json", ctx.as_json, "JSON for scripts instead of tables");
  trigd::AddConfigFlags(app, ctx.config, trigd::ConfigFlags::kClient);
  trigd::FlagValue(
      app.add_option("--api", ctx.api_url,
                     "http(s)://HOST:PORT of trigd's API: use it instead of PostgreSQL (token: TRIGD_TOKEN)")
          ->envname("TRIGD_API_URL")
          ->group("Connection (flag, else environment variable, else default)"));
  std::string cacert;
  trigd::FlagValue(app.add_option("--cacert", cacert, "PEM CA certificate that verifies an https:// --api")
                       ->envname("TRIGD_API_CACERT")
                       ->group("Connection (flag, else environment variable, else default)"));
  app.require_subcommand(0, 1);
  trigctl::AddSchedules(app, ctx);
  trigctl::AddJobs(app, ctx);
  trigctl::AddRuns(app, ctx);
  trigctl::AddEvents(app, ctx);
  trigctl::AddTopics(app, ctx);
  trigctl::AddLag(app, ctx);
  trigctl::AddGraph(app, ctx);
  trigctl::AddPositions(app, ctx);
  trigctl::AddHistory(app, ctx);
  trigctl::AddLineages(app, ctx);
  trigctl::AddAudit(app, ctx);
  if (auto rc = trigd::ParseCommandLine(app, argc, argv)) return *rc;
  if (auto extra = app.remaining(true); !extra.empty()) return trigd::RefuseCommandLine(app, ExtraProblem(app, extra));
  const CLI::App& leaf = trigd::Leaf(app);
  if (&leaf == &app) {
    std::cerr << app.help();  // no command: the usage, on stderr (exit 1)
    return 1;
  }
  auto command = ctx.commands.find(&leaf);
  if (command == ctx.commands.end()) {
    // A noun alone says its verbs.
    return trigd::RefuseCommandLine(app, "needs a verb: " + Choices(leaf.get_subcommands({})));
  }
  trigd::ReadEnvironmentSettings(ctx.config);
  if (trigd::Status s = trigd::FinishConfig(ctx.config); !s.ok()) return trigd::RefuseSetting(app, s.message());
  if (!ctx.api_url.empty()) {
    const char* token = std::getenv("TRIGD_TOKEN");
    auto client = trigd::ApiClient::Create(ctx.api_url, token ? token : "", cacert);
    if (!client.ok()) return trigd::RefuseSetting(app, client.status().message());
    ctx.api = std::move(*client);
  }
  return command->second();
}
