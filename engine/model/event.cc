#include "model/event.h"

namespace trigd {

const char* EventTypeName(EventType t) {
  switch (t) {
    case EventType::kPartition: return "partition";
    case EventType::kProgram: return "program";
    case EventType::kTick: return "tick";
  }
  return "?";
}

std::string Event::EventKey() const {
  switch (type) {
    case EventType::kPartition: return "partition:" + partition.dataset;
    case EventType::kProgram: return "program:" + program.program;
    case EventType::kTick: return "time:" + tick.schedule;
  }
  return {};
}

}  // namespace trigd
