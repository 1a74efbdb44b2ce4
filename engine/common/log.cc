#include "common/log.h"

#include <errno.h>  // program_invocation_short_name (glibc)

#include <iostream>
#include <string>

#include "common/time.h"

namespace trigd {

void LogLine(std::string_view what) {
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
