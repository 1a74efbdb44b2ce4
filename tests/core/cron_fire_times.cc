// The fire times trigd's cron computes, for tests that compare them with another evaluator
// (tests/core/cron_cronsim_test.py). Reads lines "EXPR<TAB>ZONE<TAB>FROM<TAB>TO" (RFC 3339) and
// prints, per line, the fire times in (FROM, TO] as UTC RFC 3339, space-separated, or
// "error: MESSAGE" for an expression the parser refuses.
#include <iostream>
#include <sstream>
#include <string>

#include "common/time.h"
#include "core/cron.h"

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream fields(line);
    std::string expr, zone, from, to;
    std::getline(fields, expr, '\t');
    std::getline(fields, zone, '\t');
    std::getline(fields, from, '\t');
    std::getline(fields, to, '\t');
    trigd::Result<trigd::CronExpr> cron = trigd::CronExpr::Parse(expr);
    trigd::Result<trigd::TimePoint> start = trigd::ParseTime(from), end = trigd::ParseTime(to);
    if (!cron.ok() || !start.ok() || !end.ok()) {
      std::cout << "error: "
                << (!cron.ok()    ? cron.status()
                    : !start.ok() ? start.status()
                                  : end.status())
                       .message()
                << "\n";
      continue;
    }
    std::string out;
    for (auto t = cron->Next(*start, zone); t && *t <= *end; t = cron->Next(*t, zone)) {
      out += (out.empty() ? "" : " ") + trigd::FormatTime(*t);
    }
    std::cout << out << "\n";
  }
  return 0;
}
