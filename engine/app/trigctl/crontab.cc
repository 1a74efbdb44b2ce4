// trigctl schedules from-crontab: a crontab converted to schedule documents, one file per entry
// (core/crontab.h decides; this file reads and writes).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

#include "app/trigctl/context.h"
#include "core/crontab.h"

namespace trigctl {
namespace {

namespace fs = std::filesystem;

struct CrontabFlags {
  std::string file;
  std::optional<std::string> out, timezone, name_space;
};

int SchedulesFromCrontab(const Context& ctx, const CrontabFlags& f) {
  const std::string command = "schedules from-crontab";
  if (f.file.empty()) return ctx.Usage("needs FILE (a crontab, or - for standard input)");
  if (!f.out || f.out->empty()) return ctx.Usage("needs --out DIR");
  std::string text;
  if (f.file == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(f.file, std::ios::binary);
    if (!in) return Refuse(command, "cannot read " + f.file);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  trigd::CrontabOptions options;
  if (f.timezone) options.timezone = *f.timezone;
  if (f.name_space) options.name_space = *f.name_space;
  trigd::CrontabConversion c = trigd::ConvertCrontab(text, options);
  if (!c.refused.empty() && c.refused.front().line == 0) return Refuse(command, c.refused.front().note);

  std::error_code ec;
  fs::create_directories(*f.out, ec);
  if (ec) return Refuse(command, "cannot create " + *f.out + ": " + ec.message());
  const std::string source = f.file == "-" ? "<stdin>" : f.file;
  json written = json::array();
  for (const auto& entry : c.schedules) {
    const std::string name = entry.document["name"];
    const fs::path path = fs::path(*f.out) / (name + ".json");
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << entry.document.dump(2) << "\n";
    out.close();
    if (!out) return Refuse(command, "cannot write " + path.string());
    const json& time = entry.document["trigger"]["time"];
    written.push_back({{"line", entry.line},
                       {"file", path.string()},
                       {"schedule", entry.document["namespace"].get<std::string>() + "/" + name},
                       {"cron", time["cron"]},
                       {"timezone", time["timezone"]}});
    if (!ctx.as_json) {
      std::cout << "line " << entry.line << ": wrote " << path.string() << " (" << time["cron"].get<std::string>()
                << ", " << time["timezone"].get<std::string>() << ")\n";
    }
  }
  json refused = json::array(), notes = json::array();
  for (const auto& r : c.notes) {
    notes.push_back({{"line", r.line}, {"text", r.text}, {"note", r.note}});
    if (!ctx.as_json) std::cout << "line " << r.line << ": " << r.note << ": " << r.text << "\n";
  }
  std::cout.flush();  // the refusals come after the lines written, also in one file
  for (const auto& r : c.refused) {
    refused.push_back({{"line", r.line}, {"text", r.text}, {"reason", r.note}});
    std::cerr << "trigctl " << command << ": " << source << ":" << r.line << ": " << r.note << ": " << r.text << "\n";
  }
  if (ctx.as_json) {
    std::cout << json{{"written", written}, {"refused", refused}, {"notes", notes}}.dump() << "\n";
  } else {
    std::cout << written.size() << " schedule(s) written to " << *f.out << ", " << refused.size()
              << " line(s) refused\n";
  }
  return c.refused.empty() ? 0 : 1;
}

}  // namespace

void AddScheduleFromCrontab(CLI::App& schedules, Context& ctx) {
  auto f = std::make_shared<CrontabFlags>();
  CLI::App* verb = ctx.Verb(schedules, "from-crontab",
                            "convert a crontab into schedule documents, one file per entry; exit 1 when a line "
                            "cannot be expressed (each named)",
                            [&ctx, f] { return SchedulesFromCrontab(ctx, *f); });
  verb->add_option("FILE", f->file, "a crontab (crontab -l), or - for standard input");
  trigd::FlagValue(verb->add_option("--out", f->out, "the folder to write NAME.json files into")->type_name("DIR"));
  trigd::FlagValue(verb->add_option("--timezone", f->timezone, "the zone the crontab's times are in (default UTC)")
                       ->type_name("ZONE"));
  trigd::FlagValue(
      verb->add_option("--namespace", f->name_space, "the schedules' namespace (default default)")->type_name("NS"));
}

}  // namespace trigctl
