#include "common/log.h"

#include <errno.h>  // program_invocation_short_name (glibc)

#include <atomic>
#include <iostream>
#include <string>

#include "common/time.h"

namespace trigd {
namespace {

std::atomic<bool> g_log_lines{true};

}  // namespace

void SetLogLines(bool on) { g_log_lines = on; }

void LogLine(std::string_view what) {
  if (!g_log_lines.load(std::memory_order_relaxed)) return;
  // One write per line, so lines of several threads do not interleave.
  std::string line = FormatTime(SystemClock::Get().Now());
  line += ' ';
  line += program_invocation_short_name;
  line += ": ";
  line += what;
  line += '\n';
  std::cerr << line << std::flush;
}

}  // namespace trigd
