// trigctl schedules replay: what-if replay of schedule documents over the event log (SPEC §12).
// The evaluation is core/replay.h's (trigd's own trigger and constraint code); this file reads
// the range (log/time_range.h), the recorded runs for --compare (a read-only transaction), and
// prints. It publishes nothing and writes nothing.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>

#include "app/trigctl/context.h"
#include "common/topic_names.h"
#include "core/replay.h"
#include "log/time_range.h"
#include "store/recorded_runs.h"

namespace trigctl {
namespace {

constexpr const char* kCommand = "schedules replay";
// A progress line is shown on a terminal for replays longer than this.
constexpr auto kProgressAfter = std::chrono::seconds(2);

struct ReplayFlags {
  std::vector<std::string> files;
  std::string from;
  std::optional<std::string> to;
  std::optional<std::string> run_duration;
  std::optional<std::string> compare;
};

// RFC 3339, or a duration meaning that long before now ("24h": a day ago).
std::optional<trigd::TimePoint> ParseInstant(const std::string& text, trigd::TimePoint now) {
  if (auto t = trigd::ParseTime(text); t.ok()) return *t;
  if (auto d = trigd::ParseDuration(text); d.ok()) return now - *d;
  return std::nullopt;
}

// A progress line on standard error when it is a terminal, once the work has lasted a while.
class Progress {
 public:
  Progress() : tty_(isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}
  void Show(const std::string& line) {
    if (!tty_ || std::chrono::steady_clock::now() - start_ < kProgressAfter) return;
    std::cerr << "\r\033[K" << line << std::flush;
    shown_ = true;
  }
  void Done() {
    if (shown_) std::cerr << "\r\033[K" << std::flush;
  }
  double Seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

json Ids(const std::vector<trigd::TriggeringEvent>& events) {
  json out = json::array();
  for (const auto& e : events) out.push_back(e.id);
  return out;
}

json LaunchJson(const trigd::ReplayLaunch& l) {
  return {{"job", l.job},
          {"at", trigd::FormatTime(l.at)},
          {"ends_at", trigd::FormatTime(l.ends_at)},
          {"forced", l.forced},
          {"triggered_by", Ids(l.triggered_by)}};
}

json ScheduleJson(const trigd::ReplaySchedule& s) {
  json timeline = json::array();
  for (const auto& step : s.timeline) {
    json j = {{"at", trigd::FormatTime(step.at)}, {"job", step.job}, {"what", step.what}};
    if (!step.event.empty()) j["event"] = step.event;
    if (!step.detail.empty()) j["detail"] = step.detail;
    timeline.push_back(std::move(j));
  }
  json launches = json::array();
  for (const auto& l : s.launches) launches.push_back(LaunchJson(l));
  return {{"schedule", s.name},
          {"enabled", s.enabled},
          {"jobs", s.jobs},
          {"launched", s.launches.size()},
          {"discarded", s.discarded},
          {"open_at_end", s.open_at_end},
          {"waiting_at_end", s.waiting_at_end},
          {"timeline", std::move(timeline)},
          {"launches", std::move(launches)}};
}

// The recorded runs beside the simulated launches: paired by their triggering events (the same
// set of ids), then what is left on either side, each a difference.
json Compare(const std::string& name, const trigd::ReplaySchedule& simulated,
             const std::vector<trigd::RecordedRun>& recorded, trigd::TimePoint to) {
  json matched = json::array(), only_simulated = json::array(), only_recorded = json::array(),
       outcome_outside = json::array();
  std::vector<bool> used(recorded.size(), false);
  for (const auto& l : simulated.launches) {
    std::set<std::string> ids;
    for (const auto& e : l.triggered_by) ids.insert(e.id);
    bool found = false;
    for (size_t i = 0; i < recorded.size() && !found; ++i) {
      if (used[i] || std::set<std::string>(recorded[i].triggered_by.begin(), recorded[i].triggered_by.end()) != ids) {
        continue;
      }
      used[i] = found = true;
      matched.push_back({{"run_id", recorded[i].run_id},
                         {"recorded_at", trigd::FormatTime(recorded[i].launched_at)},
                         {"simulated_at", trigd::FormatTime(l.at)},
                         {"delta_ms", (l.at - recorded[i].launched_at).count()},
                         {"triggered_by", Ids(l.triggered_by)}});
    }
    if (!found) only_simulated.push_back(LaunchJson(l));
  }
  for (size_t i = 0; i < recorded.size(); ++i) {
    const auto& r = recorded[i];
    // Its duration is unknown to the replay when its outcome is not in the range.
    if (!r.finished_at || *r.finished_at > to) outcome_outside.push_back(r.run_id);
    if (used[i]) continue;
    only_recorded.push_back({{"run_id", r.run_id},
                             {"at", trigd::FormatTime(r.launched_at)},
                             {"state", r.state},
                             {"triggered_by", r.triggered_by}});
  }
  const bool agree = only_simulated.empty() && only_recorded.empty();
  return {{"schedule", name},
          {"recorded", recorded.size()},
          {"simulated", simulated.launches.size()},
          {"agree", agree},
          {"matched", std::move(matched)},
          {"only_simulated", std::move(only_simulated)},
          {"only_recorded", std::move(only_recorded)},
          {"outcome_outside_range", std::move(outcome_outside)}};
}

std::string Joined(const json& ids) {
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ", ") + id.get<std::string>();
  return out;
}

void PrintHuman(const json& out) {
  std::cout << "replay " << out["from"].get<std::string>() << " .. " << out["to"].get<std::string>() << ": "
            << out["messages"] << " events (" << out["matched"] << " reached the documents, " << out["invalid"]
            << " invalid, " << out["duplicates"] << " duplicates), " << out["fire_times"] << " fire times\n";
  for (const auto& s : out["schedules"]) {
    std::cout << "\n" << s["schedule"].get<std::string>() << (s["enabled"].get<bool>() ? "" : " (disabled)") << "\n";
    for (const auto& step : s["timeline"]) {
      char job[32];
      std::snprintf(job, sizeof job, "job %-4lld", static_cast<long long>(step["job"].get<int64_t>()));
      std::string what = step["what"];
      what.resize(std::max<size_t>(what.size(), 17), ' ');
      std::cout << "  " << step["at"].get<std::string>() << "  " << job << " " << what;
      if (step.contains("event")) std::cout << " " << step["event"].get<std::string>();
      if (step.contains("detail")) std::cout << "  " << step["detail"].get<std::string>();
      std::cout << "\n";
    }
    std::cout << "  summary: " << s["launched"] << " run(s) would launch, " << s["discarded"] << " discarded, "
              << s["open_at_end"] << " open and " << s["waiting_at_end"] << " waiting at the end\n";
    for (const auto& l : s["launches"]) {
      std::cout << "    " << l["at"].get<std::string>() << "  job " << l["job"]
                << (l["forced"].get<bool>() ? " (timeout)" : "") << "  until " << l["ends_at"].get<std::string>()
                << "  triggered_by " << Joined(l["triggered_by"]) << "\n";
    }
  }
  for (const auto& c : out["retention_cut"]) {
    std::cout << "\nnote: " << c["topic"].get<std::string>() << "/" << c["partition"] << " keeps messages from "
              << c["earliest"].get<std::string>() << " only (retention)\n";
  }
  if (!out.contains("compare")) return;
  const json& c = out["compare"];
  std::cout << "\ncompare with the recorded runs of " << c["schedule"].get<std::string>() << ": " << c["recorded"]
            << " recorded, " << c["simulated"] << " simulated, "
            << (c["agree"].get<bool>() ? "they agree" : "they differ") << "\n";
  for (const auto& m : c["matched"]) {
    std::cout << "  same      recorded " << m["recorded_at"].get<std::string>() << "  simulated "
              << m["simulated_at"].get<std::string>() << "  (" << m["delta_ms"] << " ms)  run "
              << m["run_id"].get<std::string>() << "\n";
  }
  for (const auto& l : c["only_simulated"]) {
    std::cout << "  simulated only  " << l["at"].get<std::string>() << "  triggered_by " << Joined(l["triggered_by"])
              << "\n";
  }
  for (const auto& r : c["only_recorded"]) {
    std::cout << "  recorded only   " << r["at"].get<std::string>() << "  run " << r["run_id"].get<std::string>()
              << "  triggered_by " << Joined(r["triggered_by"]) << "\n";
  }
  for (const auto& id : c["outcome_outside_range"]) {
    std::cout << "  run " << id.get<std::string>() << ": its outcome is outside the range (duration modelled)\n";
  }
}

int SchedulesReplay(const Context& ctx, const ReplayFlags& f) {
  const trigd::TimePoint now = std::chrono::time_point_cast<trigd::Millis>(std::chrono::system_clock::now());
  if (f.files.empty()) return ctx.Usage("needs -f FILE|DIR");
  if (f.from.empty()) return ctx.Usage("needs --from T (RFC 3339, or a duration ago such as 24h)");
  auto from = ParseInstant(f.from, now);
  if (!from)
    return Refuse(kCommand,
                  "--from: expected RFC 3339 (2026-11-22T10:00:00Z) or a duration ago (24h), got \"" + f.from + "\"");
  trigd::TimePoint to = now;
  if (f.to) {
    auto t = ParseInstant(*f.to, now);
    if (!t)
      return Refuse(kCommand,
                    "--to: expected RFC 3339 (2026-11-22T10:00:00Z) or a duration ago (1h), got \"" + *f.to + "\"");
    to = *t;
  }
  if (*from >= to) {
    return Refuse(kCommand, "--from " + trigd::FormatTime(*from) + " is not before --to " + trigd::FormatTime(to));
  }
  trigd::ReplayOptions options;
  options.from = *from;
  options.to = to;
  if (f.run_duration) {
    auto d = trigd::ParseDuration(*f.run_duration);
    if (!d.ok()) return Refuse(kCommand, "--run-duration: " + d.status().message());
    options.run_duration = *d;
  }
  std::vector<trigd::Schedule> schedules;
  if (int refused = ReadScheduleDocuments(f.files, kCommand, schedules); refused != 0) return refused;
  // Which document --compare's recorded runs go beside: the one of that name, or the only one.
  std::optional<size_t> compared;
  if (f.compare) {
    for (size_t i = 0; i < schedules.size(); ++i) {
      if (schedules[i].id().value() == *f.compare) compared = i;
    }
    if (!compared && schedules.size() == 1) compared = 0;
    if (!compared) {
      return Refuse(kCommand, "--compare " + *f.compare +
                                  ": no document of that name among several (name it in a document, or replay one)");
    }
  }

  Progress progress;
  const trigd::TopicNames topics(ctx.config.topic_prefix);
  auto read = trigd::ReadTimeRange(ctx.config.kafka, topics.Events(), *from, to, 10000,
                                   [&](size_t n) { progress.Show("replay: read " + std::to_string(n) + " messages"); });
  if (!read.ok()) return Fail(read.status(), kCommand);
  // A range that lost its beginning to retention is replayed from what is left.
  json cut = json::array();
  for (const auto& c : read->cut) {
    std::cerr << "trigctl " << kCommand << ": --from " << trigd::FormatTime(*from) << " is older than what " << c.topic
              << " partition " << c.partition << " keeps (retention): its earliest message is at "
              << trigd::FormatTime(c.earliest) << "; replaying from there\n";
    cut.push_back({{"topic", c.topic}, {"partition", c.partition}, {"earliest", trigd::FormatTime(c.earliest)}});
    options.from = std::max(options.from, c.earliest);
  }
  if (read->messages.empty()) {
    progress.Done();
    std::cerr << "trigctl " << kCommand << ": no events on " << topics.events_data << ", " << topics.events_program
              << " or " << topics.events_time << " between " << trigd::FormatTime(*from) << " and "
              << trigd::FormatTime(to) << "; nothing to replay\n";
    return 1;
  }
  std::vector<std::string_view> messages;
  messages.reserve(read->messages.size());
  for (const auto& m : read->messages) messages.push_back(m.value);
  if (!options.run_duration) options.recorded_durations = trigd::RecordedRunDurations(messages);

  const bool keep_compared = compared.has_value();
  trigd::Replay replay(schedules, options);
  const std::vector<trigd::ReplayMessage> order = replay.Order(messages);
  const double start = progress.Seconds();
  for (size_t i = 0; i < order.size(); ++i) {
    replay.Feed(messages[order[i].index], order[i]);
    if ((i & 0xffff) == 0xffff) {
      const double rate = (i + 1) / std::max(progress.Seconds() - start, 1e-3);
      progress.Show("replay: " + std::to_string(i + 1) + " of " + std::to_string(order.size()) + " events, at " +
                    trigd::FormatTime(replay.now()) + ", " + std::to_string(static_cast<int64_t>(rate)) + " events/s");
    }
  }
  trigd::ReplayResult result = replay.Finish();
  trigd::DecodeTimeline(result);
  progress.Done();

  json out = {{"from", trigd::FormatTime(options.from)},
              {"to", trigd::FormatTime(to)},
              {"messages", result.messages},
              {"matched", result.matched},
              {"invalid", result.invalid},
              {"duplicates", result.duplicates},
              {"fire_times", result.fire_times},
              {"run_duration", options.run_duration ? trigd::FormatDuration(*options.run_duration) : "recorded"},
              {"retention_cut", std::move(cut)}};
  json list = json::array();
  for (const auto& s : result.schedules) list.push_back(ScheduleJson(s));
  out["schedules"] = std::move(list);
  if (keep_compared) {
    auto recorded = trigd::QueryRecordedRuns(ctx.config.pg, *f.compare, options.from, to);
    if (!recorded.ok()) return Fail(recorded.status(), kCommand);
    out["compare"] = Compare(*f.compare, result.schedules[*compared], *recorded, to);
  }
  if (ctx.as_json) {
    std::cout << out.dump() << "\n";
  } else {
    PrintHuman(out);
  }
  return 0;
}

}  // namespace

void AddScheduleReplay(CLI::App& schedules, Context& ctx) {
  auto f = std::make_shared<ReplayFlags>();
  CLI::App* replay = ctx.Verb(
      schedules, "replay",
      "what-if: evaluate documents over a past range of the event log, in event time; writes and publishes nothing",
      [&ctx, f] { return SchedulesReplay(ctx, *f); });
  trigd::FlagValue(replay->add_option("-f", f->files, "a schedule file or a folder of *.json; repeatable")
                       ->type_name("FILE|DIR")
                       ->allow_extra_args(false));
  trigd::FlagValue(replay->add_option("--from", f->from, "start: RFC 3339, or a duration ago (24h)")->type_name("T"));
  trigd::FlagValue(replay->add_option("--to", f->to, "end (default: now)")->type_name("T"));
  trigd::FlagValue(replay
                       ->add_option("--run-duration", f->run_duration,
                                    "every simulated run lasts D (default: the program's recorded runs, else 0)")
                       ->type_name("D"));
  trigd::FlagValue(
      replay
          ->add_option("--compare", f->compare, "the recorded runs of this applied schedule beside the simulated ones")
          ->type_name("NS/NAME"));
}

}  // namespace trigctl
