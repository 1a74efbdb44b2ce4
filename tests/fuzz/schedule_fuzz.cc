// Fuzzes ParseScheduleFile (SPEC §4) with arbitrary text. Beyond "no crash, leak or sanitizer
// report": every error has a reason, and every valid schedule survives its canonical form,
// as a value (ParseSchedule(ScheduleToJson(s)).schedule == s) and as text (what trigctl
// prints and applies again), and the canonical form is a fixed point.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/schedule_parser.h"
#include "fuzz_check.h"

namespace trigd {
namespace {

std::string Errors(const ParsedSchedule& parsed) {
  std::string out;
  for (const ScheduleError& e : parsed.errors) out += e.ToString() + "; ";
  return out;
}

void CheckScheduleFile(std::string_view text) {
  std::vector<ParsedSchedule> parsed = ParseScheduleFile(text);
  for (const ParsedSchedule& p : parsed) {
    FUZZ_CHECK(p.ok() == p.errors.empty(), Errors(p));
    for (const ScheduleError& e : p.errors) FUZZ_CHECK(!e.reason.empty(), e.path);
    if (!p.ok()) continue;

    const nlohmann::json canonical = ScheduleToJson(p.schedule);
    ParsedSchedule again = ParseSchedule(canonical);
    FUZZ_CHECK(again.ok(), Errors(again) + " in " + canonical.dump());
    FUZZ_CHECK(again.schedule == p.schedule, canonical.dump());
    FUZZ_CHECK(ScheduleToJson(again.schedule) == canonical, canonical.dump());

    // Strict dump: the parser accepted only valid UTF-8, so this must not throw.
    const std::string dumped = canonical.dump(2);
    std::vector<ParsedSchedule> from_text = ParseScheduleFile(dumped);
    FUZZ_CHECK(from_text.size() == 1, dumped);
    FUZZ_CHECK(from_text[0].ok(), Errors(from_text[0]) + " in " + dumped);
    FUZZ_CHECK(from_text[0].schedule == p.schedule, dumped);
  }
}

}  // namespace
}  // namespace trigd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  trigd::CheckScheduleFile(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
