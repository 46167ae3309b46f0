#include "wire/trace.h"

#include <sstream>
#include <tuple>

namespace grader::wire {
namespace {

const std::string kOpPrefix = "op:";

const char* kind_name(DeviceEvent::Kind kind) {
  switch (kind) {
    case DeviceEvent::Kind::mixed:
      return "mixed";
    case DeviceEvent::Kind::item:
      return "item";
    case DeviceEvent::Kind::to_host:
      return "to_host";
  }
  return "mixed";
}

std::optional<DeviceEvent::Kind> kind_of(const std::string& name) {
  if (name == "mixed") return DeviceEvent::Kind::mixed;
  if (name == "item") return DeviceEvent::Kind::item;
  if (name == "to_host") return DeviceEvent::Kind::to_host;
  return std::nullopt;
}

// One event per line: "<kind> <op>[ <factory>]".
std::string events_text(const std::vector<DeviceEvent>& events) {
  std::string text;
  for (const auto& event : events) {
    text += std::string(kind_name(event.kind)) + " " + event.op;
    if (!event.factory.empty()) text += " " + event.factory;
    text += '\n';
  }
  return text;
}

std::vector<DeviceEvent> events_of(const std::string& text) {
  std::vector<DeviceEvent> events;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string kind, op, factory;
    words >> kind >> op >> factory;
    const auto known = kind_of(kind);
    if (!known || op.empty()) continue;
    events.push_back({*known, op, factory});
  }
  return events;
}

// "<bytes> <op> <size> <size> ...".
std::string largest_text(const std::optional<LargestOutput>& largest) {
  if (!largest || largest->bytes == 0) return "";
  std::string text = std::to_string(largest->bytes) + " " + largest->op;
  for (auto size : largest->sizes) text += " " + std::to_string(size);
  return text;
}

std::optional<LargestOutput> largest_of(const std::string& text) {
  std::istringstream in(text);
  LargestOutput largest;
  double bytes = 0;
  if (!(in >> bytes >> largest.op)) return std::nullopt;
  largest.bytes = static_cast<int64_t>(bytes);
  for (int64_t size = 0; in >> size;) largest.sizes.push_back(size);
  return largest;
}

// One "<macs>/<elements>/<computed>" per call, space-separated.
std::string work_text(const std::vector<ScopeWork>& work) {
  std::string text;
  for (const auto& call : work) {
    text += (text.empty() ? "" : " ") + std::to_string(static_cast<int64_t>(call.macs)) + "/" +
            std::to_string(static_cast<int64_t>(call.elements)) + "/" +
            std::to_string(static_cast<uint64_t>(call.computed));
  }
  return text;
}

// In order, up to the first entry that does not read as one.
std::vector<ScopeWork> work_of(const std::string& text) {
  std::vector<ScopeWork> entries;
  std::istringstream work(text);
  for (std::string item; work >> item;) {
    const auto first = item.find('/');
    if (first == std::string::npos) break;
    const auto second = item.find('/', first + 1);
    ScopeWork entry;
    try {
      entry.macs = std::stod(item.substr(0, first));
      entry.elements = std::stod(item.substr(first + 1, second - first - 1));
      if (second != std::string::npos) entry.computed = std::stod(item.substr(second + 1));
    } catch (const std::exception&) {
      break;
    }
    entries.push_back(entry);
  }
  return entries;
}

}  // namespace

bool DeviceEvent::operator<(const DeviceEvent& other) const {
  // As their lines sort ("item ..." < "mixed ..." < "to_host ...").
  return std::make_tuple(std::string(kind_name(kind)), op, factory) <
         std::make_tuple(std::string(kind_name(other.kind)), other.op, other.factory);
}

bool DeviceEvent::operator==(const DeviceEvent& other) const {
  return kind == other.kind && op == other.op && factory == other.factory;
}

void put_trace(Record& response, const Trace& trace) {
  for (const auto& [name, count] : trace.op_counts) response.ints[kOpPrefix + name.substr(0, kMaxOpName)] += count;
  response.strings["device_events"] = events_text(trace.device_events);
  response.strings["largest_output"] = largest_text(trace.largest_output);
  response.strings["scope_work"] = work_text(trace.scope_work);
  response.ints["heap_growth"] = trace.heap_growth;
  response.ints["static_bytes"] = trace.static_bytes;
  response.ints["recording_intact"] = trace.recording_intact ? 1 : 0;
}

Trace trace_of(const Record& response) {
  Trace trace;
  for (auto it = response.ints.lower_bound(kOpPrefix); it != response.ints.end(); ++it) {
    if (it->first.compare(0, kOpPrefix.size(), kOpPrefix) != 0) break;
    trace.op_counts[it->first.substr(kOpPrefix.size())] = static_cast<long>(it->second);
  }
  trace.device_events = events_of(response.string_or("device_events", ""));
  trace.largest_output = largest_of(response.string_or("largest_output", ""));
  trace.scope_work = work_of(response.string_or("scope_work", ""));
  trace.heap_growth = response.integer_or("heap_growth", 0);
  trace.static_bytes = response.integer_or("static_bytes", 0);
  trace.recording_intact = response.integer_or("recording_intact", 0) != 0;
  return trace;
}

std::optional<Trace> take_trace(Record& response) {
  static const std::vector<std::string> kStrings = {"device_events", "largest_output", "scope_work"};
  static const std::vector<std::string> kInts = {"heap_growth", "static_bytes", "recording_intact"};
  const auto first_op = response.ints.lower_bound(kOpPrefix);
  const bool ops = first_op != response.ints.end() && first_op->first.compare(0, kOpPrefix.size(), kOpPrefix) == 0;
  bool any = ops;
  for (const auto& key : kStrings) any = any || response.strings.count(key);
  for (const auto& key : kInts) any = any || response.ints.count(key);
  if (!any) return std::nullopt;
  auto trace = trace_of(response);
  for (const auto& key : kStrings) response.strings.erase(key);
  for (const auto& key : kInts) response.ints.erase(key);  // (first_op may have been one of these)
  const auto begin = response.ints.lower_bound(kOpPrefix);
  auto end = begin;
  while (end != response.ints.end() && end->first.compare(0, kOpPrefix.size(), kOpPrefix) == 0) ++end;
  response.ints.erase(begin, end);
  return trace;
}

}  // namespace grader::wire
