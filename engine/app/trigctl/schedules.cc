// trigctl schedules: apply, list, show, delete, suspend, resume.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "app/trigctl/context.h"
#include "core/schedule_parser.h"
#include "store/admin.h"

namespace trigctl {
namespace {

// `schedules apply` lists the unchanged schedules up to this many.
constexpr size_t kUnchangedListed = 20;

// The documents in one request (POST /api/v1/schedules: one transaction, as ApplySchedules),
// each in its canonical form.
trigd::Result<std::vector<trigd::ApplyOutcome>> ApplyThroughApi(const Context& ctx,
                                                                const std::vector<trigd::Schedule>& schedules) {
  json docs = json::array();
  for (const auto& s : schedules) docs.push_back(trigd::ScheduleToJson(s));
  auto r = ctx.api->Call("POST", "/api/v1/schedules", docs);
  if (!r.ok()) return r.status();
  std::vector<trigd::ApplyOutcome> out;
  for (const auto& o : *r) out.push_back({o.value("schedule", ""), o.value("version", 0), o.value("changed", false)});
  return out;
}

// Every document of the files and folders (-f, once or more, as kubectl apply; "-" is standard
// input) is validated first; any problem refuses them all, and they are applied in one
// transaction. A file named twice (directly or through a folder) is read once.
}  // namespace

int ReadScheduleDocuments(const std::vector<std::string>& paths, const std::string& command,
                          std::vector<trigd::Schedule>& schedules) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& path : paths) {
    // "-" is standard input; a folder gives its .json files, sorted; a file is itself.
    if (path != "-" && std::filesystem::is_directory(path, ec)) {
      std::vector<std::filesystem::path> in_folder;
      for (const auto& e : std::filesystem::recursive_directory_iterator(path, ec))
        if (e.is_regular_file() && e.path().extension() == ".json") in_folder.push_back(e.path());
      std::sort(in_folder.begin(), in_folder.end());
      if (in_folder.empty()) return Refuse(command, "no .json schedule documents in " + path);
      files.insert(files.end(), in_folder.begin(), in_folder.end());
    } else if (path == "-" || std::filesystem::exists(path, ec)) {
      files.push_back(path);
    } else {
      return Refuse(command, path + ": no such file or folder");
    }
  }
  {
    // `-f a.json -f a.json` reported its schedules as defined twice, in a.json and in a.json.
    std::set<std::filesystem::path> read;
    std::erase_if(files, [&](const std::filesystem::path& f) {
      return !read.insert(f == "-" ? f : std::filesystem::weakly_canonical(f, ec)).second;
    });
  }
  std::vector<std::string> errors;
  std::map<std::string, std::string> seen;  // schedule name -> the file that defines it first
  for (const auto& f : files) {
    std::stringstream text;
    if (f == "-") {
      text << std::cin.rdbuf();
    } else {
      std::ifstream in(f);
      text << in.rdbuf();
      if (!in) {
        errors.push_back(f.string() + ": cannot read");
        continue;
      }
    }
    auto parsed_file = trigd::ParseScheduleFile(text.str());
    // An empty array applied nothing and said nothing, where an empty folder is refused.
    if (parsed_file.empty()) errors.push_back(f.string() + ": no schedule documents (an empty array)");
    for (auto& parsed : parsed_file) {
      for (const auto& e : parsed.errors) errors.push_back(f.string() + ": " + e.ToString());
      if (!parsed.ok()) continue;
      std::string name = parsed.schedule.id().value();
      if (auto [first, fresh] = seen.emplace(name, f.string()); !fresh) {
        errors.push_back(f.string() + ": name: schedule " + name + " is also defined in " + first->second);
        continue;
      }
      schedules.push_back(std::move(parsed.schedule));
    }
  }
  if (!errors.empty()) {
    for (const auto& e : errors) std::cerr << e << "\n";
    std::cerr << "trigctl " << command << ": " << errors.size() << " problem(s); nothing "
              << (command == "schedules apply" ? "applied" : "replayed") << "\n";
    return 1;
  }
  return 0;
}

namespace {

int SchedulesApply(const Context& ctx, const std::vector<std::string>& paths) {
  const trigd::Config& config = ctx.config;
  const bool as_json = ctx.as_json;
  std::vector<trigd::Schedule> schedules;
  if (int refused = ReadScheduleDocuments(paths, "schedules apply", schedules); refused != 0) return refused;
  auto r = ctx.api ? ApplyThroughApi(ctx, schedules) : trigd::ApplySchedules(config.pg, schedules);
  if (!r.ok()) return Fail(r.status(), "schedules apply");
  if (as_json) {
    // Every schedule, changed or not: for scripts.
    json out = json::array();
    for (const auto& o : *r) out.push_back({{"schedule", o.name}, {"version", o.version}, {"changed", o.changed}});
    std::cout << out.dump() << "\n";
    return 0;
  }
  // For people: every change, the unchanged ones only when they are few (a folder of 20,000
  // printed 20,000 lines of "unchanged" around the one change), then a count. The summary says
  // "changed", not "applied": `grep -c applied` counts the applied schedules.
  const size_t changed = std::count_if(r->begin(), r->end(), [](const trigd::ApplyOutcome& o) { return o.changed; });
  const size_t unchanged = r->size() - changed;
  const bool list_unchanged = unchanged <= kUnchangedListed;
  for (const auto& o : *r) {
    if (o.changed || list_unchanged)
      std::cout << (o.changed ? "applied    " : "unchanged  ") << o.name << " v" << o.version << "\n";
  }
  if (r->size() > 1) {
    std::cout << r->size() << " schedules: " << changed << " changed, " << unchanged << " unchanged"
              << (list_unchanged ? "" : " (not listed; --json lists every schedule)") << "\n";
  }
  return 0;
}

int SchedulesList(const Context& ctx, const std::optional<std::string>& limit_flag) {
  auto limit = Limit(limit_flag, SIZE_MAX);
  if (!limit) return Refuse("schedules list", "--limit must be a positive integer, got \"" + *limit_flag + "\"");
  auto r =
      ctx.api ? ApiList(ctx, "/api/v1/schedules", "", *limit)
              : trigd::QuerySchedules(ctx.config.pg, *limit == SIZE_MAX ? std::nullopt : std::optional<size_t>(*limit));
  if (!r.ok()) return Fail(r.status(), "schedules list");
  PrintRows(*r, {"name", "version", "state", "open_jobs", "active_runs", "next_fire_at", "updated_at"}, ctx.as_json);
  return 0;
}

// /api/v1/schedules/NS/NAME; a name without its namespace as NAME alone (the API answers that
// there is no such schedule, as the database does).
std::string SchedulePath(const std::string& name) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return "/api/v1/schedules/-/" + trigd::ApiClient::Encode(name);
  return "/api/v1/schedules/" + trigd::ApiClient::Encode(name.substr(0, slash)) + "/" +
         trigd::ApiClient::Encode(name.substr(slash + 1));
}

int SchedulesChange(const Context& ctx, const std::string& verb, const std::string& name) {
  if (name.empty()) return ctx.Usage("expects one NAME");
  auto action = verb == "delete"    ? trigd::ScheduleAction::kDelete
                : verb == "suspend" ? trigd::ScheduleAction::kSuspend
                                    : trigd::ScheduleAction::kResume;
  bool changed = false;
  if (ctx.api) {
    auto r =
        ctx.api->Call(verb == "delete" ? "DELETE" : "POST", SchedulePath(name) + (verb == "delete" ? "" : "/" + verb));
    if (!r.ok()) return Fail(r.status(), "schedules " + verb);
    changed = r->value("done", "").rfind("already", 0) != 0;
  } else {
    trigd::Status st = trigd::ChangeSchedule(ctx.config.pg, ctx.config.topic_prefix, name, action, &changed);
    if (!st.ok()) return Fail(st, "schedules " + verb);
  }
  std::string done = !changed            ? (verb == "suspend" ? "already suspended" : "already active")
                     : verb == "delete"  ? "deleted"
                     : verb == "suspend" ? "suspended"
                                         : "resumed";
  std::cout << (ctx.as_json ? json{{"schedule", name}, {"done", done}}.dump() : done + " " + name) << "\n";
  return 0;
}

}  // namespace

void AddSchedules(CLI::App& root, Context& ctx) {
  CLI::App* schedules = Noun(root, "schedules", "schedule documents");
  struct Flags {
    std::vector<std::string> files;
    std::optional<std::string> limit;
    std::string name;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* apply =
      ctx.Verb(*schedules, "apply", "validate every document, then apply them all in one transaction", [&ctx, f] {
        if (f->files.empty()) return ctx.Usage("needs -f FILE|DIR");
        return SchedulesApply(ctx, f->files);
      });
  // Repeatable, one file or folder each (as kubectl apply): `-f a.json b.json` leaves b.json
  // unexpected, said with the form.
  trigd::FlagValue(
      apply->add_option("-f", f->files, "a schedule file, a folder of *.json, or - (standard input); repeatable")
          ->type_name("FILE|DIR|-")
          ->allow_extra_args(false));
  AddLimit(*ctx.Verb(*schedules, "list", "every schedule, with its open jobs, active runs and next fire time",
                     [&ctx, f] { return SchedulesList(ctx, f->limit); }),
           f->limit, "default: all");
  CLI::App* show = ctx.Verb(*schedules, "show", "one schedule: its document, state and version", [&ctx, f] {
    if (f->name.empty()) return ctx.Usage("expects one NAME");
    return ShowOne(ctx.api ? ApiOne(ctx, SchedulePath(f->name)) : trigd::QuerySchedule(ctx.config.pg, f->name),
                   "schedules show", "schedule " + f->name, ctx.as_json);
  });
  show->add_option("NAME", f->name, "namespace/name");
  for (const char* verb : {"delete", "suspend", "resume"}) {
    const std::string v = verb;
    const std::string what = v == "delete"    ? "delete a schedule; its waiting jobs are discarded, its runs killed"
                             : v == "suspend" ? "stop a schedule opening and launching jobs"
                                              : "resume a suspended schedule";
    ctx.Verb(*schedules, v, what, [&ctx, f, v] { return SchedulesChange(ctx, v, f->name); })
        ->add_option("NAME", f->name, "namespace/name");
  }
  AddScheduleReplay(*schedules, ctx);
}

}  // namespace trigctl
