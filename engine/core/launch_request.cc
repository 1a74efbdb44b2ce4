#include "core/launch_request.h"

#include <string>

#include <nlohmann/json.hpp>

#include "common/json_text.h"

namespace trigd {

std::string ProgramJson(const Program& p) {
  // nlohmann sorts an object's keys: args, name, target.
  return nlohmann::json{{"name", p.name}, {"args", p.args}, {"target", p.target}}.dump();
}

std::string LaunchRequestTemplate(const LaunchRequest& r) {
  std::string out;
  out.reserve(r.program_json.size() + r.triggered_by_json.size() + r.schedule.size() + 128);
  out += '{';
  if (!r.placeholders_json.empty()) {
    out += "\"placeholders\":";
    out += r.placeholders_json;
    out += ',';
  }
  out += "\"program\":";
  out += r.program_json;
  out += ",\"run_id\":";
  AppendJsonString(out, r.run_id);
  out += ",\"schedule\":";
  AppendJsonString(out, r.schedule);
  out += ",\"schedule_version\":";
  out += std::to_string(r.schedule_version);
  out += ",\"triggered_by\":";
  out += r.triggered_by_json;
  if (r.triggered_by_truncated) out += ",\"triggered_by_truncated\":true";
  if (!r.lineage.empty()) {
    out += ",\"lineage\":";
    AppendJsonString(out, r.lineage);
  }
  out += '}';
  return out;
}

std::string RenderLaunchRequest(std::string_view template_text, const LaunchAttempt& a) {
  // After the template's '{' (and any white space), an empty object ends with its '}'.
  size_t body = template_text.find('{');
  body = body == std::string_view::npos ? template_text.size() : body + 1;
  while (body < template_text.size() && (template_text[body] == ' ' || template_text[body] == '\n')) ++body;
  const bool empty = body >= template_text.size() || template_text[body] == '}';
  std::string out;
  out.reserve(template_text.size() + kLaunchAttemptFieldsBytes);
  out += "{\"attempt\":";
  out += std::to_string(a.attempt);
  out += ",\"heartbeat_timeout\":";
  AppendJsonString(out, FormatDuration(a.heartbeat_timeout));
  out += ",\"launched_at\":";
  AppendJsonString(out, FormatTime(a.launched_at));
  out += ",\"start_by\":";
  AppendJsonString(out, FormatTime(a.StartBy()));
  if (empty) {
    out += '}';
  } else {
    out += ',';
    out.append(template_text.substr(body));
  }
  return out;
}

size_t LaunchRequestFixedBytes(const Schedule& s) {
  return ProgramJson(s.program).size() + nlohmann::json(s.id().value()).dump().size() + kLaunchRequestOverheadBytes;
}

Status CheckLaunchRequestFits(const Schedule& s) {
  const size_t fixed = LaunchRequestFixedBytes(s);
  if (fixed + kMinTriggeredByBytes <= kMaxLaunchRequestBytes) return Status();
  const size_t args = s.program.args.dump().size();
  const size_t over = fixed + kMinTriggeredByBytes - kMaxLaunchRequestBytes;
  return Invalid(
      "program.args: " + std::to_string(args) + " bytes of JSON; a launch request must fit Kafka's message limit (" +
      std::to_string(kMaxPublishedBytes) + " bytes published at most, " + std::to_string(kMaxLaunchRequestBytes) +
      " for a request with room for a retry's copy, " + std::to_string(kMinTriggeredByBytes) +
      " of them kept for triggered_by): program.args may take at most " +
      std::to_string(args > over ? args - over : 0) + " bytes here");
}

}  // namespace trigd
