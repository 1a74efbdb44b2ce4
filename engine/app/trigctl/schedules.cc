// trigctl schedules: apply, list, show, delete, suspend, resume, next, backfill (replay and
// from-crontab have files of their own).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "api/backfill.h"
#include "app/trigctl/context.h"
#include "common/time.h"
#include "core/envelope_time.h"
#include "core/schedule_parser.h"
#include "store/admin.h"
#include "store/operate.h"

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

// `apply --dry-run`: what applying would do; nothing is written. Each entry as
// DryRunEntry::ToJson(), from the store or the API (POST /api/v1/schedules?dry_run=true).
int PrintDryRun(const Context& ctx, const std::vector<trigd::Schedule>& schedules) {
  json entries = json::array();
  if (ctx.api) {
    json docs = json::array();
    for (const auto& s : schedules) docs.push_back(trigd::ScheduleToJson(s));
    auto r = ctx.api->Call("POST", "/api/v1/schedules?dry_run=true", docs);
    if (!r.ok()) return Fail(r.status(), "schedules apply");
    entries = *r;
  } else {
    auto r = trigd::DryRunApply(ctx.config.pg, schedules);
    if (!r.ok()) return Fail(r.status(), "schedules apply");
    for (const auto& e : *r) entries.push_back(e.ToJson());
  }
  if (ctx.as_json) {
    std::cout << entries.dump() << "\n";
    return 0;
  }
  size_t changed = 0, fresh = 0;
  int64_t discarded = 0;
  for (const auto& e : entries) {
    const std::string outcome = e.value("outcome", "");
    const int64_t jobs = e.value("jobs_discarded", int64_t{0});
    changed += outcome == "changed";
    fresh += outcome == "new";
    discarded += jobs;
    std::cout << outcome << std::string(outcome.size() < 10 ? 10 - outcome.size() : 1, ' ') << e.value("schedule", "")
              << " v" << e.value("version", 0);
    if (outcome == "changed")
      std::cout << " (discards " << jobs << " open or waiting job" << (jobs == 1 ? "" : "s") << ")";
    std::cout << "\n";
    for (const auto& c : e["diff"]) {
      std::cout << "    " << c.value("path", "") << ": " << (c["before"].is_null() ? "(none)" : c["before"].dump())
                << " -> " << (c["after"].is_null() ? "(none)" : c["after"].dump()) << "\n";
    }
  }
  std::cout << "dry run: " << fresh << " new, " << changed << " changed, " << entries.size() - fresh - changed
            << " unchanged; " << discarded << " open or waiting job" << (discarded == 1 ? "" : "s")
            << " would be discarded; nothing applied\n";
  return 0;
}

}  // namespace

// Every document of the files and folders (-f, once or more, as kubectl apply; "-" is standard
// input) is validated first; any problem refuses them all, and they are applied in one
// transaction. A file named twice (directly or through a folder) is read once.
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

int SchedulesApply(const Context& ctx, const std::vector<std::string>& paths, bool dry_run) {
  const trigd::Config& config = ctx.config;
  const bool as_json = ctx.as_json;
  std::vector<trigd::Schedule> schedules;
  if (int refused = ReadScheduleDocuments(paths, "schedules apply", schedules); refused != 0) return refused;
  if (dry_run) return PrintDryRun(ctx, schedules);
  auto r = ctx.api ? ApplyThroughApi(ctx, schedules) : trigd::ApplySchedules(config.pg, schedules, OsActor());
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

int SchedulesNext(const Context& ctx, const std::string& name, const std::optional<std::string>& count_flag) {
  if (name.empty()) return ctx.Usage("expects one NAME (namespace/name)");
  auto count = Limit(count_flag, 5);
  if (!count || *count > 1000) {
    return Refuse("schedules next",
                  "--count must be an integer from 1 to 1000, got \"" + count_flag.value_or("") + "\"");
  }
  json next;  // NextFireTimes::ToJson()
  if (ctx.api) {
    auto r = ctx.api->Call("GET", SchedulePath(name) + "/next?count=" + std::to_string(*count));
    if (!r.ok()) return Fail(r.status(), "schedules next");
    next = *r;
  } else {
    auto r = trigd::QueryNextFireTimes(ctx.config.pg, name, *count);
    if (!r.ok()) return Fail(r.status(), "schedules next");
    next = r->ToJson();
  }
  if (ctx.as_json) {
    std::cout << next.dump() << "\n";
    return 0;
  }
  const std::string state = next.value("state", "");
  const std::string timezone = next.value("timezone", "");
  if (state != "active") std::cout << name << " is " << state << ": none of these fire until it is resumed\n";
  if (!next.value("active_now", true)) std::cout << name << " is outside its active period now\n";
  json rows = json::array();
  for (const auto& t : next["fire_times"])
    rows.push_back({{"utc", t["utc"]}, {"local (" + timezone + ")", t["local"]}});
  if (rows.empty()) {
    std::cout << name << " has no further fire times\n";
    return 0;
  }
  PrintRows(rows, {"utc", "local (" + timezone + ")"}, false);
  return 0;
}

struct BackfillFlags {
  std::string from, to;
  std::optional<std::string> max;
  bool dry_run = false;
};

// The ticks of every fire time in [from, to), each with a fire time's one identity: trigd
// launches each fire time once, however often a backfill sends it (docs/semantics.md). Sent by
// trigctl (api/backfill.h), or by trigd through the API.
int SchedulesBackfill(const Context& ctx, const std::string& name, const BackfillFlags& f) {
  if (name.empty()) return ctx.Usage("expects one NAME (namespace/name)");
  if (f.from.empty() || f.to.empty()) return ctx.Usage("needs --from T and --to T (RFC 3339)");
  auto from = trigd::ParseEnvelopeTime(f.from);
  auto to = trigd::ParseEnvelopeTime(f.to);
  if (!from)
    return Refuse("schedules backfill",
                  "--from: invalid time \"" + f.from + "\": expected RFC 3339, e.g. 2026-11-22T00:00:00Z");
  if (!to)
    return Refuse("schedules backfill",
                  "--to: invalid time \"" + f.to + "\": expected RFC 3339, e.g. 2026-11-23T00:00:00Z");
  auto max = Limit(f.max, 10000);
  if (!max) return Refuse("schedules backfill", "--max must be a positive integer, got \"" + f.max.value_or("") + "\"");
  json out;  // BackfillPlan::ToJson() and dry_run
  if (ctx.api) {
    auto r = ctx.api->Call(
        "POST", SchedulePath(name) + "/backfill",
        json{
            {"from", trigd::FormatTime(*from)}, {"to", trigd::FormatTime(*to)}, {"dry_run", f.dry_run}, {"max", *max}});
    if (!r.ok()) return Fail(r.status(), "schedules backfill");
    out = *r;
  } else {
    auto plan = trigd::Backfill(ctx.config.pg, ctx.config.kafka, ctx.config.topic_prefix,
                                trigd::BackfillRequest{name, *from, *to, *max, f.dry_run, OsActor()});
    if (!plan.ok()) return Fail(plan.status(), "schedules backfill");
    out = plan->ToJson();
    out["dry_run"] = f.dry_run;
  }
  if (ctx.as_json) {
    std::cout << out.dump() << "\n";
    return 0;
  }
  const size_t n = out["fire_times"].size();
  if (f.dry_run) {
    for (const auto& t : out["fire_times"]) std::cout << t.get<std::string>() << "\n";
  }
  std::cout << name << ": " << n << " fire time" << (n == 1 ? "" : "s") << " in [" << trigd::FormatTime(*from) << ", "
            << trigd::FormatTime(*to) << ")" << (f.dry_run ? " (dry run: nothing sent)" : " sent") << "; "
            << out.value("already_done", int64_t{0}) << " already done, " << out.value("launched", int64_t{0})
            << " launched so far, " << out.value("waiting", int64_t{0}) << " waiting on constraints\n";
  return 0;
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
    trigd::Status st = trigd::ChangeSchedule(ctx.config.pg, ctx.config.topic_prefix, name, action, OsActor(), &changed);
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
    std::optional<std::string> limit, count;
    std::string name;
    bool dry_run = false;
    BackfillFlags backfill;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* apply =
      ctx.Verb(*schedules, "apply", "validate every document, then apply them all in one transaction", [&ctx, f] {
        if (f->files.empty()) return ctx.Usage("needs -f FILE|DIR");
        return SchedulesApply(ctx, f->files, f->dry_run);
      });
  apply->add_flag("--dry-run", f->dry_run, "validate and print what would change; write nothing");
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
  CLI::App* next = ctx.Verb(*schedules, "next", "the next fire times of a schedule's time trigger, UTC and local",
                            [&ctx, f] { return SchedulesNext(ctx, f->name, f->count); });
  next->add_option("NAME", f->name, "namespace/name");
  trigd::FlagValue(next->add_option("--count", f->count, "how many (default 5)")->type_name("N"));
  CLI::App* backfill = ctx.Verb(*schedules, "backfill", "tick every fire time in [--from, --to): each runs once",
                                [&ctx, f] { return SchedulesBackfill(ctx, f->name, f->backfill); });
  backfill->add_option("NAME", f->name, "namespace/name");
  trigd::FlagValue(backfill->add_option("--from", f->backfill.from, "RFC 3339, inclusive")->type_name("T"));
  trigd::FlagValue(backfill->add_option("--to", f->backfill.to, "RFC 3339, exclusive")->type_name("T"));
  trigd::FlagValue(backfill->add_option("--max", f->backfill.max, "refuse a range of more fire times (default 10000)")
                       ->type_name("N"));
  backfill->add_flag("--dry-run", f->backfill.dry_run, "list the fire times; send nothing");
  for (const char* verb : {"delete", "suspend", "resume"}) {
    const std::string v = verb;
    const std::string what = v == "delete"    ? "delete a schedule; its waiting jobs are discarded, its runs killed"
                             : v == "suspend" ? "stop a schedule opening and launching jobs"
                                              : "resume a suspended schedule";
    ctx.Verb(*schedules, v, what, [&ctx, f, v] { return SchedulesChange(ctx, v, f->name); })
        ->add_option("NAME", f->name, "namespace/name");
  }
  AddScheduleReplay(*schedules, ctx);
  AddScheduleFromCrontab(*schedules, ctx);
}

}  // namespace trigctl
