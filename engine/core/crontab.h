// A crontab (the user form crontab(5) describes: `crontab -l`) converted to schedule documents,
// one per entry, for `trigctl schedules from-crontab`. Pure: no I/O; thread-safe.
//
// - An entry (five time fields, or @hourly, @daily, @midnight, @weekly, @monthly, @yearly,
//   @annually, then a command) becomes a schedule with a cron time trigger in the crontab's
//   zone and `catchup: none` (cron runs no missed job), running the command with /bin/sh.
// - Environment lines (NAME=value): CRON_TZ sets the zone of the entries after it; MAILTO and
//   MAILFROM are dropped with a note (trigd sends no mail); SHELL other than /bin/sh is refused;
//   any other variable is exported at the start of the commands after it.
// - Refused, with the line named: @reboot (no event for a machine's start), an unescaped `%`
//   (cron's standard input; `\%` is a literal percent), `{{` (trigd's argument placeholders),
//   a cron expression trigd's parser refuses, a line that is no entry.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace trigd {

struct CrontabOptions {
  std::string timezone = "UTC";  // the zone of entries before any CRON_TZ line
  std::string name_space = "default";
};

struct CrontabLine {
  int line = 0;      // 1-based
  std::string text;  // the line as written
  std::string note;  // a refusal's reason, or what was dropped
};

struct CrontabConversion {
  struct Entry {
    int line = 0;
    nlohmann::json document;  // a schedule document the parser accepts
  };
  std::vector<Entry> schedules;
  std::vector<CrontabLine> refused;  // each makes the conversion incomplete
  std::vector<CrontabLine> notes;    // lines kept out on purpose (MAILTO)
};

// Converts `text`. An invalid option (an unknown zone, an invalid namespace) is one refusal of
// line 0.
CrontabConversion ConvertCrontab(std::string_view text, const CrontabOptions& options);

}  // namespace trigd
