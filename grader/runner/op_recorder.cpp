#include "op_recorder.h"

#include <ATen/record_function.h>

#include <atomic>
#include <mutex>

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

namespace {
const std::string kOpPrefix = "op:";
}

void put_op_counts(wire::Record& response, const std::map<std::string, long>& op_counts) {
  for (const auto& [name, count] : op_counts) response.ints[kOpPrefix + name.substr(0, kMaxOpName)] += count;
}

std::map<std::string, long> op_counts(const wire::Record& response) {
  std::map<std::string, long> counts;
  for (auto it = response.ints.lower_bound(kOpPrefix); it != response.ints.end(); ++it) {
    if (it->first.compare(0, kOpPrefix.size(), kOpPrefix) != 0) break;
    counts[it->first.substr(kOpPrefix.size())] = static_cast<long>(it->second);
  }
  return counts;
}

}  // namespace grader
