#include "wire/trace.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>
#include <tuple>

#include "wire/fields.h"

namespace grader::wire {
namespace {

const std::string kOpPrefix = "op:";
// The trace's other fields, each under one key.
const std::string kDeviceEvents = "device_events", kLargestOutput = "largest_output", kScopeWork = "scope_work",
                  kFillValues = "fill_values";
const std::string kHeapGrowth = "heap_growth", kStaticBytes = "static_bytes", kRecordingIntact = "recording_intact";
const std::string kGraphOps = "graph_ops", kGraphOp = "graph_op";
const std::vector<std::string> kStringFields = {kDeviceEvents, kLargestOutput, kScopeWork, kFillValues, kGraphOp};
const std::vector<std::string> kIntFields = {kHeapGrowth, kStaticBytes, kRecordingIntact, kGraphOps};

// The operator counts among a record's integers: the keys with kOpPrefix, one
// run in the sorted map.
std::pair<std::map<std::string, int64_t>::const_iterator, std::map<std::string, int64_t>::const_iterator> op_keys(
    const std::map<std::string, int64_t>& ints) {
  auto begin = ints.lower_bound(kOpPrefix), end = begin;
  while (end != ints.end() && end->first.compare(0, kOpPrefix.size(), kOpPrefix) == 0) ++end;
  return {begin, end};
}

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

// One event per line, of fields (wire/fields.h: an operator's name is text a
// learner's own operator chooses): "<kind> <op>[ <factory>]".
std::string events_text(const std::vector<DeviceEvent>& events) {
  std::string text;
  for (const auto& event : events) {
    std::vector<std::string> fields = {kind_name(event.kind), event.op};
    if (!event.factory.empty()) fields.push_back(event.factory);
    text += fields_line(fields);
  }
  return text;
}

std::vector<DeviceEvent> events_of(const std::string& text) {
  std::vector<DeviceEvent> events;
  for (const auto& fields : field_lines(text)) {
    const auto known = kind_of(fields[0]);
    if (!known || fields.size() < 2 || fields.size() > 3 || fields[1].empty()) continue;
    events.push_back({*known, fields[1], fields.size() == 3 ? fields[2] : ""});
  }
  return events;
}

// Fields "<bytes> <op> <size> <size> ...".
std::string largest_text(const std::optional<LargestOutput>& largest) {
  if (!largest || largest->bytes == 0) return "";
  std::vector<std::string> fields = {std::to_string(largest->bytes), largest->op};
  for (auto size : largest->sizes) fields.push_back(std::to_string(size));
  return fields_line(fields);
}

// A count as a whole number: what a trace read from the wire holds can be
// anything (negative, NaN, huge), and converting such a double is undefined.
int64_t whole_count(double value) {
  if (!(value > 0)) return 0;
  return value >= 9.0e18 ? static_cast<int64_t>(9.0e18) : static_cast<int64_t>(value);
}

std::optional<LargestOutput> largest_of(const std::string& text) {
  const auto lines = field_lines(text);
  if (lines.size() != 1 || lines[0].size() < 2) return std::nullopt;
  const auto& fields = lines[0];
  const auto bytes = number_field(fields[0]);
  if (!bytes) return std::nullopt;
  LargestOutput largest;
  largest.bytes = whole_count(*bytes);
  largest.op = fields[1];
  for (size_t i = 2; i < fields.size(); ++i) {
    const auto size = integer_field(fields[i]);
    if (!size) break;
    largest.sizes.push_back(*size);
  }
  return largest;
}

// One "<macs>/<elements>/<computed>" per call, space-separated.
std::string work_text(const std::vector<ScopeWork>& work) {
  std::string text;
  for (const auto& call : work) {
    text += (text.empty() ? "" : " ") + std::to_string(whole_count(call.macs)) + "/" +
            std::to_string(whole_count(call.elements)) + "/" + std::to_string(whole_count(call.computed)) + "/" +
            std::to_string(whole_count(call.calls)) + "/" + std::to_string(whole_count(call.cpu_ns));
  }
  return text;
}

// In order, up to the first entry that does not read as one.
std::vector<ScopeWork> work_of(const std::string& text) {
  std::vector<ScopeWork> entries;
  std::istringstream work(text);
  for (std::string item; work >> item;) {
    // macs/elements[/computed[/calls[/cpu_ns]]]
    std::vector<double> fields;
    std::istringstream parts(item);
    for (std::string part; std::getline(parts, part, '/');) {
      size_t used = 0;
      try {
        fields.push_back(std::stod(part, &used));
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != part.size()) {
        fields.clear();
        break;
      }
    }
    if (fields.size() < 2 || fields.size() > 5) break;
    fields.resize(5, 0.0);
    entries.push_back({fields[0], fields[1], fields[2], fields[3], fields[4]});
  }
  return entries;
}

// Space-separated, each exact ("%.17g"); read back up to the first that is no
// finite number, at most kMaxFillValues.
std::string fills_text(const std::vector<double>& values) {
  std::string text;
  for (size_t i = 0; i < values.size() && i < kMaxFillValues; ++i) {
    if (!std::isfinite(values[i])) continue;
    char number[32];
    std::snprintf(number, sizeof number, "%.17g", values[i]);
    text += (text.empty() ? "" : " ") + std::string(number);
  }
  return text;
}

std::vector<double> fills_of(const std::string& text) {
  std::vector<double> values;
  std::istringstream in(text);
  for (std::string item; values.size() < kMaxFillValues && in >> item;) {
    try {
      size_t used = 0;
      const double value = std::stod(item, &used);
      if (used != item.size() || !std::isfinite(value)) break;
      values.push_back(value);
    } catch (const std::exception&) {
      break;
    }
  }
  return values;
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
  response.strings[kDeviceEvents] = events_text(trace.device_events);
  response.strings[kLargestOutput] = largest_text(trace.largest_output);
  response.strings[kScopeWork] = work_text(trace.scope_work);
  response.strings[kFillValues] = fills_text(trace.fill_values);
  response.ints[kHeapGrowth] = trace.heap_growth;
  response.ints[kStaticBytes] = trace.static_bytes;
  response.ints[kRecordingIntact] = trace.recording_intact ? 1 : 0;
  response.ints[kGraphOps] = trace.graph_ops;
  response.strings[kGraphOp] = wire::escape_field(trace.graph_op);
}

Trace trace_of(const Record& response) {
  Trace trace;
  const auto [begin, end] = op_keys(response.ints);
  for (auto it = begin; it != end; ++it) {
    trace.op_counts[it->first.substr(kOpPrefix.size())] = static_cast<long>(it->second);
  }
  trace.device_events = events_of(response.string_or(kDeviceEvents, ""));
  trace.largest_output = largest_of(response.string_or(kLargestOutput, ""));
  trace.scope_work = work_of(response.string_or(kScopeWork, ""));
  trace.fill_values = fills_of(response.string_or(kFillValues, ""));
  trace.heap_growth = response.integer_or(kHeapGrowth, 0);
  trace.static_bytes = response.integer_or(kStaticBytes, 0);
  trace.recording_intact = response.integer_or(kRecordingIntact, 0) != 0;
  trace.graph_ops = response.integer_or(kGraphOps, 0);
  trace.graph_op = wire::unescape_field(response.string_or(kGraphOp, ""));
  return trace;
}

std::optional<Trace> take_trace(Record& response) {
  const auto ops = op_keys(response.ints);
  bool any = ops.first != ops.second;
  for (const auto& key : kStringFields) any = any || response.strings.count(key);
  for (const auto& key : kIntFields) any = any || response.ints.count(key);
  if (!any) return std::nullopt;
  auto trace = trace_of(response);
  response.ints.erase(ops.first, ops.second);  // before the other keys: erasing those could not move these
  for (const auto& key : kStringFields) response.strings.erase(key);
  for (const auto& key : kIntFields) response.ints.erase(key);
  return trace;
}

}  // namespace grader::wire
