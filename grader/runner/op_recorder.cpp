#include "op_recorder.h"

#include <ATen/record_function.h>

#include <atomic>
#include <mutex>
#include <sstream>

namespace grader {
namespace {

std::mutex counts_mutex;
std::map<std::string, long> counts;
std::atomic<bool> recording{false};
at::CallbackHandle handle = 0;

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  if (recording.load()) {
    std::lock_guard<std::mutex> lock(counts_mutex);
    ++counts[fn.name()];
  }
  return nullptr;
}

}  // namespace

OpRecorder::OpRecorder() {
  handle = at::addGlobalCallback(at::RecordFunctionCallback(on_enter).scopes({at::RecordScope::FUNCTION}));
}

OpRecorder::~OpRecorder() {
  if (handle != 0 && at::hasGlobalCallbacks()) at::removeCallback(handle);
}

void OpRecorder::start() {
  std::lock_guard<std::mutex> lock(counts_mutex);
  counts.clear();
  recording = true;
}

std::map<std::string, long> OpRecorder::stop() {
  recording = false;
  std::lock_guard<std::mutex> lock(counts_mutex);
  return counts;
}

bool OpRecorder::intact() const { return at::isRecordFunctionEnabled() && at::hasGlobalCallbacks(); }

std::string format_op_counts(const std::map<std::string, long>& op_counts) {
  std::ostringstream out;
  for (const auto& [name, count] : op_counts) out << name << ' ' << count << '\n';
  return out.str();
}

std::map<std::string, long> parse_op_counts(const std::string& text) {
  std::map<std::string, long> parsed;
  std::istringstream in(text);
  std::string name;
  long count = 0;
  while (in >> name >> count) parsed[name] += count;
  return parsed;
}

}  // namespace grader
