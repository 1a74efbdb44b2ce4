// Every Kafka topic trigd and its tools read or write, named from the one prefix
// (--topic-prefix, TRIGD_TOPIC_PREFIX; "trigd." by default): the only place a topic name is
// put together, so a producer and its consumers cannot disagree on one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trigd {

struct TopicNames {
  explicit TopicNames(std::string topic_prefix)
      : prefix(std::move(topic_prefix)),
        events_data(prefix + "events.data"),
        events_program(prefix + "events.program"),
        events_time(prefix + "events.time"),
        dead(prefix + "dead"),
        control(prefix + "control") {}

  std::string prefix;
  std::string events_data;     // partition events (trigctl events emit partition, producers)
  std::string events_program;  // run reports of workers; trigd's own lost/killed reports
  std::string events_time;     // ticks of time triggers, produced by trigd itself
  std::string dead;            // events trigd refused, with the reason
  std::string control;         // attempt_ended messages for workers (worker_control.h)

  // The launch requests of a program target ("default" unless the schedule names one).
  std::string Launch(std::string_view target) const { return prefix + "launch." + std::string(target); }

  // The three event topics trigd consumes, in the order its ingest subscribes to them.
  std::vector<std::string> Events() const { return {events_data, events_program, events_time}; }

  // Every topic trigd itself needs at start (launch topics are created per target).
  std::vector<std::string> Needed() const { return {events_data, events_program, events_time, dead, control}; }
};

}  // namespace trigd
