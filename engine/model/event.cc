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

std::string_view EventKeyPrefix(EventType t) {
  switch (t) {
    case EventType::kPartition: return "partition:";
    case EventType::kProgram: return "program:";
    case EventType::kTick: return "time:";
  }
  return {};
}

std::string Event::EventKey() const {
  std::string key(EventKeyPrefix(type));
  switch (type) {
    case EventType::kPartition: key += partition.dataset; break;
    case EventType::kProgram: key += program.program; break;
    case EventType::kTick: key += tick.schedule; break;
  }
  return key;
}

}  // namespace trigd
