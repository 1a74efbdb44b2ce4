#include "common/check.h"

#include <cstdlib>
#include <string>

#include "common/log.h"

namespace trigd::internal {

void CheckFailed(const char* condition, const char* file, int line, std::string_view detail) {
  std::string what = std::string("check failed: ") + condition + " at " + file + ":" + std::to_string(line);
  if (!detail.empty()) what += ": " + std::string(detail);
  SetLogLines(true);  // trigctl turns log lines off; this one must be seen
  LogLine(what);
  std::abort();
}

}  // namespace trigd::internal
