#include "app/worker_control.h"

#include <nlohmann/json.hpp>
#include "common/json_reader.h"

namespace trigd {

namespace {

using nlohmann::json;

// The string field `key` of `j` parsed as a time; nullopt when absent or not a time.
std::optional<TimePoint> TimeField(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  Result<TimePoint> t = ParseTime(it->get<std::string>());
  if (!t.ok()) return std::nullopt;
  return *t;
}

std::string StringField(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

bool StopsRunningAttempt(const ControlMessage& m) {
  return m.reason == "cancelled" || m.reason == "overlap" || m.reason == "timeout";
}

std::variant<ControlMessage, std::string> ParseControlMessage(std::string_view text) {
  Result<json> read = ReadJson(text);
  if (!read.ok()) return read.status().message();
  const json j = std::move(read).value();
  if (!j.is_object()) return std::string("not a JSON object");
  ControlMessage m;
  m.run_id = StringField(j, "run_id");
  if (m.run_id.empty()) return std::string("no run_id");
  auto attempt = j.find("attempt");
  if (attempt == j.end() || !attempt->is_number_integer() || attempt->get<int64_t>() < 1) {
    return std::string("no attempt (a positive integer)");
  }
  m.attempt = attempt->get<int64_t>();
  m.type = StringField(j, "type");
  m.status = StringField(j, "status");
  m.reason = StringField(j, "reason");
  m.start_by = TimeField(j, "start_by");
  m.time = TimeField(j, "time");
  return m;
}

std::optional<std::string> PastStartDeadline(std::optional<TimePoint> start_by, TimePoint now) {
  if (!start_by || now <= *start_by) return std::nullopt;
  return "past its start deadline " + FormatTime(*start_by) + " (trigd counts it lost)";
}

void EndedAttempts::Add(const ControlMessage& m, TimePoint now) {
  const TimePoint forget_at = m.start_by ? *m.start_by + kForgetAfter : m.time.value_or(now) + kKeepWithoutDeadline;
  std::string what = !m.status.empty() ? m.status : !m.type.empty() ? m.type : std::string("ended");
  if (!m.reason.empty()) what += ", reason " + m.reason;
  auto it = runs_.find(m.run_id);
  if (it != runs_.end()) {
    if (m.attempt < it->second.attempt) return;  // a later attempt's end already says more
    TimePoint keep = std::max(forget_at, it->second.forget_at);
    by_forget_at_.erase({it->second.forget_at, it->first});
    it->second = {m.attempt, std::move(what), keep};
    by_forget_at_.insert({keep, it->first});
    return;
  }
  runs_.emplace(m.run_id, Entry{m.attempt, std::move(what), forget_at});
  by_forget_at_.insert({forget_at, m.run_id});
  while (runs_.size() > max_runs_) Drop(runs_.find(by_forget_at_.begin()->second));
}

std::optional<std::string> EndedAttempts::WhyEnded(const std::string& run_id, int64_t attempt) const {
  auto it = runs_.find(run_id);
  if (it == runs_.end() || attempt > it->second.attempt) return std::nullopt;
  return "trigd ended attempt " + std::to_string(it->second.attempt) + " (" + it->second.what + ")";
}

void EndedAttempts::Forget(TimePoint now) {
  while (!by_forget_at_.empty() && by_forget_at_.begin()->first <= now) {
    Drop(runs_.find(by_forget_at_.begin()->second));
  }
}

void EndedAttempts::Drop(std::map<std::string, Entry>::iterator it) {
  by_forget_at_.erase({it->second.forget_at, it->first});
  runs_.erase(it);
}

}  // namespace trigd
