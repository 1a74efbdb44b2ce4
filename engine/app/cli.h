// The command lines of trigd, trigctl and trigd-worker (CLI11): the connection flags with their
// environment defaults, generated help, and a refused command line said the same way in each.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "app/config.h"

namespace trigd {

// Which flags of Config a binary takes.
enum class ConfigFlags {
  kClient,  // --kafka, --kafka-config, --pg, --topic-prefix, --group (trigctl, trigd-worker)
  kEngine,  // and --metrics, --instance-id (trigd)
};

// Refuses, as "NAME needs a value", a value that is another flag ("--pg --json" connected with
// the string "--json": CLI11 takes the next word whatever it is). Every flag with a value has it.
CLI::Option* FlagValue(CLI::Option* option);

// Adds the flags of `which` to `app`, each defaulting to its environment variable
// (TRIGD_KAFKA, TRIGD_KAFKA_CONFIG, TRIGD_PG, TRIGD_TOPIC_PREFIX, TRIGD_GROUP, TRIGD_METRICS, TRIGD_INSTANCE_ID;
// an empty variable counts as unset) and then to Config's default. `config` must outlive the
// parse. A flag given twice is refused (CLI11's MultiOptionPolicy::Throw).
void AddConfigFlags(CLI::App& app, Config& config, ConfigFlags which);

// The configuration from the environment alone (AddConfigFlags with no flags given, then
// ReadEnvironmentSettings): defaults where a variable is unset or empty.
Config LoadConfig();

// A CLI11 App as the three binaries use it: `name` in its usage line ("usage: NAME ..."),
// help on stdout with exit 0, --version printing "NAME VERSION" (CMake's project version) on
// stdout with exit 0, unknown arguments kept for RefuseExtras rather than thrown, flags
// of the binary also accepted after a subcommand (fallthrough).
void SetUpApp(CLI::App& app, const std::string& name);

// The subcommands named on the command line, as "jobs list" ("" when none).
std::string CommandPath(const CLI::App& root);

// The deepest subcommand named on the command line (root when none).
const CLI::App& Leaf(const CLI::App& root);

// What a CLI11 parse error means, in trigd's words: "--state needs a value", "--state given
// more than once"; CLI11's own message otherwise.
std::string ParseProblem(const CLI::ParseError& e);

// Parses argv into `app`. Help or the version asked for: printed on stdout, returns 0. A
// refused command line: "PROGRAM[ COMMAND]: PROBLEM" and a pointer to --help on stderr, returns
// 1. nullopt: parsed, go on (RefuseExtras next).
std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv);

// Refuses a command line (exit 1): "PROGRAM[ COMMAND]: PROBLEM" on stderr, then where the
// usage is.
int RefuseCommandLine(const CLI::App& root, const std::string& problem);

// Refuses a setting (exit 1), an environment variable's most often: "PROGRAM: PROBLEM" on
// stderr, whatever the command.
int RefuseSetting(const CLI::App& root, const std::string& problem);

}  // namespace trigd
