#include "core/launch_request.h"

#include <string>

#include <nlohmann/json.hpp>

namespace trigd {

size_t LaunchRequestFixedBytes(const Schedule& s) {
  const nlohmann::json program = {{"name", s.program.name}, {"args", s.program.args}, {"target", s.program.target}};
  return program.dump().size() + nlohmann::json(s.id().value()).dump().size() + kLaunchRequestOverheadBytes;
}

Status CheckLaunchRequestFits(const Schedule& s) {
  const size_t fixed = LaunchRequestFixedBytes(s);
  if (fixed + kMinTriggeredByBytes <= kMaxLaunchRequestBytes) return Status();
  const size_t args = s.program.args.dump().size();
  const size_t over = fixed + kMinTriggeredByBytes - kMaxLaunchRequestBytes;
  return Invalid("program.args: " + std::to_string(args) + " bytes of JSON; a launch request must fit Kafka's message limit (" +
                 std::to_string(kMaxPublishedBytes) + " bytes published at most, " +
                 std::to_string(kMaxLaunchRequestBytes) + " for a request with room for a retry's copy, " +
                 std::to_string(kMinTriggeredByBytes) + " of them kept for triggered_by): program.args may take at most " +
                 std::to_string(args > over ? args - over : 0) + " bytes here");
}

}  // namespace trigd
