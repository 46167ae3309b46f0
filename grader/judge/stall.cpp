#include "judge/stall.h"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace grader {

std::optional<double> run_queue_delay_seconds(pid_t tid) {
  std::ifstream in("/proc/" + std::to_string(tid) + "/schedstat");
  unsigned long long on_cpu = 0, waiting = 0;
  if (!(in >> on_cpu >> waiting)) return std::nullopt;
  return static_cast<double>(waiting) / 1e9;
}

std::vector<pid_t> threads_of(pid_t pid) {
  std::vector<pid_t> out;
  const auto path = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(path.c_str());
  if (!dir) return out;
  while (const auto* entry = readdir(dir)) {
    char* end = nullptr;
    const long tid = std::strtol(entry->d_name, &end, 10);
    if (end != entry->d_name && *end == '\0' && tid > 0) out.push_back(static_cast<pid_t>(tid));
  }
  closedir(dir);
  return out;
}

StallMeter::StallMeter(std::function<std::vector<pid_t>()> threads) : threads_(std::move(threads)) {
  for (pid_t tid : threads_()) {
    if (auto delay = run_queue_delay_seconds(tid)) first_[tid] = *delay;
  }
}

double StallMeter::seconds() {
  for (pid_t tid : threads_()) {
    auto delay = run_queue_delay_seconds(tid);
    if (!delay) continue;
    // A thread born after the meter began waited all of its delay since then.
    const double first = first_.emplace(tid, 0.0).first->second;
    longest_ = std::max(longest_, *delay - first);
  }
  return longest_;
}

double wall_allowance(double limit, double stalled) {
  const double backstop = std::max(limit * kStallBackstopFactor, limit + kStallBackstopFloor);
  return std::min(limit + std::max(0.0, stalled), backstop);
}

}  // namespace grader
