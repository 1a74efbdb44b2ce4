#include "core/arg_template.h"

// date's tz.h trips the same g++ 12 false positive inside <chrono> at -O2 as date::parse.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <date/date.h>
#include <date/tz.h>

#include <algorithm>
#include <functional>
#include <set>

#include "common/time.h"
#include "core/launch_request.h"

namespace trigd {
namespace {

bool IsPlaceholder(std::string_view name) {
  return std::find(std::begin(kArgPlaceholders), std::end(kArgPlaceholders), name) != std::end(kArgPlaceholders);
}

// Calls `each(name)` for each `{{name}}` of `text` and `bad(reason)` for a `{{` that opens no
// placeholder; returns the text with each placeholder replaced by `each`'s result.
std::string Scan(std::string_view text, const std::function<std::string(std::string_view)>& each,
                 const std::function<void(const std::string&)>& bad) {
  std::string out;
  size_t from = 0;
  while (true) {
    const size_t open = text.find("{{", from);
    if (open == std::string_view::npos) break;
    const size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos) {
      bad("unclosed placeholder at character " + std::to_string(open) + " (\"{{\" without \"}}\")");
      break;
    }
    std::string_view name = text.substr(open + 2, close - open - 2);
    // Spaces inside the braces are allowed, as in Jinja: "{{ partitions }}".
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    out.append(text.substr(from, open - from));
    if (IsPlaceholder(name)) {
      out += each(name);
    } else {
      std::string known;
      for (std::string_view k : kArgPlaceholders) known += (known.empty() ? "" : ", ") + std::string(k);
      bad("unknown placeholder \"{{" + std::string(name) + "}}\" (expected one of: " + known + ")");
      out.append(text.substr(open, close + 2 - open));
    }
    from = close + 2;
  }
  out.append(text.substr(from));
  return out;
}

void Walk(const nlohmann::json& value, const std::string& path,
          const std::function<void(const std::string&, const std::string&)>& on_string) {
  if (value.is_string()) {
    on_string(value.get_ref<const std::string&>(), path);
  } else if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) Walk(it.value(), path + "." + it.key(), on_string);
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) Walk(value[i], path + "[" + std::to_string(i) + "]", on_string);
  }
}

nlohmann::json RenderValue(const nlohmann::json& value, const TemplateValues& values) {
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (text.find("{{") == std::string::npos) return value;
    return Scan(
        text, [&](std::string_view name) { return values.Get(name); }, [](const std::string&) {});
  }
  if (value.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (auto it = value.begin(); it != value.end(); ++it) out[it.key()] = RenderValue(it.value(), values);
    return out;
  }
  if (value.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const nlohmann::json& v : value) out.push_back(RenderValue(v, values));
    return out;
  }
  return value;
}

// Sorted, distinct, space-separated, at most kMaxRenderedListBytes (whole items only);
// `kept` gets the items joined.
std::string JoinList(const std::set<std::string>& items, std::vector<std::string>& kept) {
  std::string out;
  for (const std::string& item : items) {
    if (out.size() + item.size() + 1 > kMaxRenderedListBytes) break;
    if (!out.empty()) out += ' ';
    out += item;
    kept.push_back(item);
  }
  return out;
}

// Where a shell reads the text that comes next: outside quotes, inside '...', inside "...".
enum class ShellQuoting { kNone, kSingle, kDouble };

// The quoting in force after `text` when it starts in `state` (sh's rules: a backslash outside
// single quotes escapes the next character; inside double quotes only \ " $ ` and newline
// matter, and none of them but " ends the quotes).
ShellQuoting QuotingAfter(std::string_view text, ShellQuoting state) {
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (state) {
      case ShellQuoting::kNone:
        if (c == '\\') {
          ++i;
        } else if (c == '\'') {
          state = ShellQuoting::kSingle;
        } else if (c == '"') {
          state = ShellQuoting::kDouble;
        }
        break;
      case ShellQuoting::kSingle:
        if (c == '\'') state = ShellQuoting::kNone;
        break;
      case ShellQuoting::kDouble:
        if (c == '\\') {
          ++i;
        } else if (c == '"') {
          state = ShellQuoting::kNone;
        }
        break;
    }
  }
  return state;
}

std::string JoinWords(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

// A placeholder's words as text for where it stands.
std::string QuoteFor(ShellQuoting state, const std::vector<std::string>& words) {
  switch (state) {
    case ShellQuoting::kNone: {
      std::string out;
      for (const std::string& w : words) {
        if (!out.empty()) out += ' ';
        out += ShellQuote(w);
      }
      return out;
    }
    case ShellQuoting::kSingle: {
      std::string out;
      for (char c : JoinWords(words)) {
        if (c == '\'') {
          out += "'\\''";
        } else {
          out += c;
        }
      }
      return out;
    }
    case ShellQuoting::kDouble: {
      std::string out;
      for (char c : JoinWords(words)) {
        if (c == '\\' || c == '"' || c == '$' || c == '`') out += '\\';
        out += c;
      }
      return out;
    }
  }
  return {};
}

std::string LocalDate(TimePoint t, const std::string& timezone) {
  try {
    const date::zoned_time<Millis> local(date::locate_zone(timezone), t);
    return date::format("%F", date::floor<date::days>(local.get_local_time()));
  } catch (const std::exception&) {
    return date::format("%F", date::floor<date::days>(t));
  }
}

}  // namespace

std::string TemplateValues::Get(std::string_view name) const {
  if (name == "run_id") return run_id;
  if (name == "attempt") return std::to_string(attempt);
  if (name == "schedule") return schedule;
  if (name == "lineage") return lineage;
  if (name == "fire_time") return fire_time;
  if (name == "fire_date") return fire_date;
  if (name == "partitions") return partitions;
  if (name == "datasets") return datasets;
  if (name == "keys") return keys;
  return {};
}

std::vector<TemplateProblem> CheckArgTemplates(const nlohmann::json& args, const std::string& path) {
  std::vector<TemplateProblem> problems;
  Walk(args, path, [&](const std::string& text, const std::string& at) {
    if (text.find("{{") == std::string::npos) return;
    Scan(
        text, [](std::string_view) { return std::string(); },
        [&](const std::string& reason) {
          problems.push_back({at, reason});
        });
  });
  return problems;
}

bool HasArgTemplates(const nlohmann::json& args) {
  bool found = false;
  Walk(args, "", [&](const std::string& text, const std::string&) {
    if (found || text.find("{{") == std::string::npos) return;
    Scan(
        text,
        [&](std::string_view) {
          found = true;
          return std::string();
        },
        [](const std::string&) {});
  });
  return found;
}

TemplateValues JobTemplateValues(const Schedule& schedule, std::string_view run_id,
                                 const nlohmann::json& triggered_by) {
  TemplateValues v;
  v.run_id = std::string(run_id);
  v.schedule = schedule.id().value();
  std::string timezone = "UTC";
  for (const Trigger* leaf : TriggerLeaves(schedule.trigger)) {
    if (leaf->kind == TriggerKind::kTime) timezone = leaf->time.timezone;
  }
  std::set<std::string> partitions, datasets, keys;
  std::optional<TimePoint> fire_time;
  if (triggered_by.is_array()) {
    for (const nlohmann::json& e : triggered_by) {
      if (!e.is_object()) continue;
      const std::string type = e.value("type", "");
      auto payload = e.find("payload");
      if (payload == e.end() || !payload->is_object()) continue;
      if (type == "partition") {
        if (auto d = payload->find("dataset"); d != payload->end() && d->is_string())
          datasets.insert(d->get<std::string>());
        if (auto ps = payload->find("partitions"); ps != payload->end() && ps->is_array()) {
          for (const nlohmann::json& p : *ps) {
            if (p.is_string()) partitions.insert(p.get<std::string>());
          }
        }
      } else if (type == "custom") {
        // Without a key the event is its own (core/envelope.cc): its id.
        if (auto k = payload->find("key"); k != payload->end() && k->is_string()) {
          keys.insert(k->get<std::string>());
        } else if (auto id = e.find("id"); id != e.end() && id->is_string()) {
          keys.insert(id->get<std::string>());
        }
      } else if (type == "tick") {
        if (auto f = payload->find("fire_time"); f != payload->end() && f->is_string()) {
          // The newest fire time, when a job collected several.
          if (Result<TimePoint> t = ParseTime(f->get<std::string>()); t.ok() && (!fire_time || *t > *fire_time)) {
            fire_time = *t;
          }
        }
      }
    }
  }
  if (fire_time) {
    v.fire_time = FormatTime(*fire_time);
    v.fire_date = LocalDate(*fire_time, timezone);
  }
  v.partitions = JoinList(partitions, v.partition_items);
  v.datasets = JoinList(datasets, v.dataset_items);
  v.keys = JoinList(keys, v.key_items);
  return v;
}

std::vector<std::string> TemplateValues::Words(std::string_view name) const {
  if (name == "partitions") return partition_items;
  if (name == "datasets") return dataset_items;
  if (name == "keys") return key_items;
  return {Get(name)};
}

std::string ShellQuote(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string RenderShellCommand(std::string_view text, const TemplateValues& values) {
  // Scan hands each placeholder in order; the text between them is the template's own, and
  // its quotes say where the next placeholder stands.
  ShellQuoting state = ShellQuoting::kNone;
  size_t from = 0;
  return Scan(
      text,
      [&](std::string_view name) {
        // `name` views `text`: its "{{" lies 2 bytes before it, give or take inner spaces.
        const size_t open = text.rfind("{{", static_cast<size_t>(name.data() - text.data()));
        state = QuotingAfter(text.substr(from, open - from), state);
        from = text.find("}}", open) + 2;
        return QuoteFor(state, values.Words(name));
      },
      [](const std::string&) {});
}

nlohmann::json RenderArgs(const nlohmann::json& args, const TemplateValues& values) {
  nlohmann::json out = RenderValue(args, values);
  if (args.is_object()) {
    auto command = args.find("command");
    if (command != args.end() && command->is_string()) {
      out["command"] = RenderShellCommand(command->get_ref<const std::string&>(), values);
    }
  }
  return out;
}

nlohmann::json TemplateValuesJson(const TemplateValues& values) {
  nlohmann::json out = nlohmann::json::object();
  for (std::string_view name : kArgPlaceholders) out[std::string(name)] = values.Get(name);
  return out;
}

RenderedProgram RenderProgram(const Schedule& schedule, std::string_view run_id, std::string_view lineage,
                              std::string_view triggered_by_json) {
  const nlohmann::json triggered_by = nlohmann::json::parse(triggered_by_json, nullptr, false);
  TemplateValues values = JobTemplateValues(schedule, run_id, triggered_by);
  values.lineage = std::string(lineage);
  Program program = schedule.program;
  program.args = RenderArgs(schedule.program.args, values);
  const auto dump = [](const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  return {nlohmann::json{{"name", program.name}, {"args", program.args}, {"target", program.target}}.dump(
              -1, ' ', false, nlohmann::json::error_handler_t::replace),
          dump(TemplateValuesJson(values))};
}

}  // namespace trigd
