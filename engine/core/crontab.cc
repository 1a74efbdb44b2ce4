#include "core/crontab.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <utility>

#include "common/time.h"
#include "core/cron.h"
#include "core/schedule_parser.h"

namespace trigd {
namespace {

using nlohmann::json;

constexpr std::string_view kSpace = " \t";

std::string_view Trim(std::string_view s) {
  size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// The next whitespace-separated word of `rest`, which loses it and the blanks after it.
std::string_view NextWord(std::string_view& rest) {
  size_t end = rest.find_first_of(kSpace);
  std::string_view word = rest.substr(0, end);
  rest = end == std::string_view::npos ? std::string_view{} : Trim(rest.substr(end));
  return word;
}

// The shell's single quoting: 'it'\''s'.
std::string Quote(std::string_view value) {
  std::string out = "'";
  for (char c : value) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

const std::map<std::string_view, std::string_view>& Nicknames() {
  static const std::map<std::string_view, std::string_view> kNicknames = {
      {"@hourly", "0 * * * *"},  {"@daily", "0 0 * * *"},  {"@midnight", "0 0 * * *"}, {"@weekly", "0 0 * * 0"},
      {"@monthly", "0 0 1 * *"}, {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}};
  return kNicknames;
}

// A name from the command's program (its first word's file name): `backup.sh` of
// `/usr/local/bin/backup.sh --full`; empty when nothing usable is left.
std::string ProgramWord(std::string_view command) {
  std::string_view rest = command;
  std::string_view word = NextWord(rest);
  size_t slash = word.find_last_of('/');
  if (slash != std::string_view::npos) word = word.substr(slash + 1);
  std::string out;
  for (char c : word) {
    if (out.size() == 40) break;
    bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    if (keep) out += c;
  }
  if (out.find_first_not_of('.') == std::string::npos) return "";
  return out;
}

// The command as /bin/sh should see it: `\%` is a literal percent. std::nullopt when an
// unescaped `%` remains (cron would feed the rest to the command's standard input).
std::optional<std::string> Unescape(std::string_view command) {
  std::string out;
  for (size_t i = 0; i < command.size(); ++i) {
    if (command[i] == '\\' && i + 1 < command.size() && command[i + 1] == '%') {
      out += '%';
      ++i;
    } else if (command[i] == '%') {
      return std::nullopt;
    } else {
      out += command[i];
    }
  }
  return out;
}

bool StartsEntry(std::string_view line) {
  char c = line.front();
  return c == '@' || c == '*' || std::isdigit(static_cast<unsigned char>(c));
}

// NAME=value (crontab(5): blanks around '=' allowed, the value may be quoted).
std::optional<std::pair<std::string, std::string>> EnvironmentLine(std::string_view line) {
  size_t eq = line.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  std::string_view name = Trim(line.substr(0, eq));
  if (name.empty()) return std::nullopt;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return std::nullopt;
  }
  if (std::isdigit(static_cast<unsigned char>(name.front()))) return std::nullopt;
  std::string_view value = Trim(line.substr(eq + 1));
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
    value = value.substr(1, value.size() - 2);
  }
  return std::make_pair(std::string(name), std::string(value));
}

}  // namespace

CrontabConversion ConvertCrontab(std::string_view text, const CrontabOptions& options) {
  CrontabConversion out;
  if (!IsKnownTimeZone(options.timezone)) {
    out.refused.push_back({0, "", "unknown time zone \"" + options.timezone + "\" (an IANA name: UTC, Europe/Berlin)"});
    return out;
  }
  if (Status s = CheckIdentifier("namespace", options.name_space); !s.ok()) {
    out.refused.push_back({0, "", s.message()});
    return out;
  }
  std::string timezone = options.timezone;
  std::vector<std::pair<std::string, std::string>> exports;
  std::vector<std::string_view> lines;
  for (size_t pos = 0; pos <= text.size();) {
    size_t end = std::min(text.find('\n', pos), text.size());
    lines.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  for (size_t index = 0; index < lines.size(); ++index) {
    const int number = static_cast<int>(index) + 1;
    std::string_view raw = lines[index];
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    std::string_view line = Trim(raw);
    if (line.empty() || line.front() == '#') continue;
    auto refuse = [&](std::string reason) { out.refused.push_back({number, std::string(raw), std::move(reason)}); };
    if (!StartsEntry(line)) {
      auto env = EnvironmentLine(line);
      if (!env) {
        refuse("neither an entry (five time fields or @daily … and a command) nor NAME=value");
      } else if (env->first == "CRON_TZ") {
        if (IsKnownTimeZone(env->second)) {
          timezone = env->second;
        } else {
          refuse("unknown time zone \"" + env->second + "\" (an IANA name: UTC, Europe/Berlin)");
        }
      } else if (env->first == "MAILTO" || env->first == "MAILFROM") {
        out.notes.push_back({number, std::string(raw), "dropped: trigd sends no mail (alert on failed runs instead)"});
      } else if (env->first == "SHELL" && env->second != "/bin/sh") {
        refuse("commands run with /bin/sh, not " + env->second + " (write the command as " + env->second +
               " -c '…' instead)");
      } else if (env->first != "SHELL") {
        exports.emplace_back(env->first, env->second);
      }
      continue;
    }
    std::string_view rest = line;
    std::string cron;
    if (line.front() == '@') {
      std::string_view nickname = NextWord(rest);
      if (nickname == "@reboot") {
        refuse("@reboot: trigd has no event for a machine's start (run it from the machine's init system)");
        continue;
      }
      auto it = Nicknames().find(nickname);
      if (it == Nicknames().end()) {
        refuse("unknown nickname " + std::string(nickname) +
               " (expected @hourly, @daily, @midnight, @weekly, @monthly, @yearly or @annually)");
        continue;
      }
      cron = it->second;
    } else {
      for (int field = 0; field < 5 && !rest.empty(); ++field) {
        cron += (field ? " " : "") + std::string(NextWord(rest));
      }
    }
    std::optional<std::string> command = Unescape(rest);
    if (rest.empty()) {
      refuse("no command after the time fields");
    } else if (Result<CronExpr> parsed = CronExpr::Parse(cron); !parsed.ok()) {
      refuse("cron \"" + cron + "\": " + parsed.status().message());
    } else if (!command) {
      refuse(
          "an unescaped % (cron passes the text after it on standard input; trigd passes none: write \\% for a "
          "percent sign, or put the input in the command)");
    } else if (command->find("{{") != std::string::npos) {
      refuse("{{ in the command: trigd reads {{…}} as an argument placeholder");
    } else {
      std::string shell;
      if (!exports.empty()) {
        shell = "export";
        for (const auto& [name, value] : exports) shell += " " + name + "=" + Quote(value);
        shell += "; ";
      }
      std::string word = ProgramWord(*command);
      std::string name = "cron-" + std::to_string(number) + (word.empty() ? "" : "-" + word);
      json document = {{"namespace", options.name_space},
                       {"name", name},
                       {"program", {{"name", name}, {"args", {{"command", shell + *command}}}}},
                       {"trigger", {{"time", {{"cron", cron}, {"timezone", timezone}, {"catchup", "none"}}}}}};
      ParsedSchedule parsed = ParseSchedule(document);
      if (parsed.ok()) {
        out.schedules.push_back({number, std::move(document)});
      } else {
        refuse(parsed.errors.front().ToString());
      }
    }
  }
  return out;
}

}  // namespace trigd
