// Log lines, one form for every binary: the time (UTC, milliseconds), the program's name and
// what happened, on stderr: "2026-11-25T12:50:01.123Z trigd: checker: aborted: …". An operator
// can put trigd's, the worker's and the Kafka adapter's lines on one timeline.
#pragma once

#include <string_view>

namespace trigd {

void LogLine(std::string_view what);
// Off: LogLine prints nothing. trigctl turns it off: its errors say what failed, and a line from
// the Kafka adapter ("cannot reach Kafka ... retrying") would only come before them.
void SetLogLines(bool on);

}  // namespace trigd
