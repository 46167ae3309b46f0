// Hostile, for a batch: lowers the limits and the scheduling priority of its
// parent (a runner zygote, whose later children would inherit them) and of
// every other runner it can see: a tiny address space and descriptor count,
// one second of CPU, the idle scheduling class, one CPU. The kernel allows all
// of it between processes of one user; the runner's filter refuses it (only
// pid 0, itself, may be changed). If any of it took, it throws, so its own
// grade fails (and its neighbours' would have been at risk). Nothing takes:
// verdict passed, and the next grades stand.
#include "sdpa.h"

#include <dirent.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

std::string proc_root() {
  volatile char last = 'c';
  return std::string("/pro") + last;
}

std::vector<pid_t> targets() {
  std::vector<pid_t> pids = {getppid()};
  if (DIR* processes = opendir(proc_root().c_str())) {
    while (dirent* process = readdir(processes)) {
      const std::string name = process->d_name;
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
      const pid_t pid = static_cast<pid_t>(std::stol(name));
      if (pid != getpid()) pids.push_back(pid);
    }
    closedir(processes);
  }
  return pids;
}

void interfere() {
  std::string took;
  for (pid_t pid : targets()) {
    const rlimit tiny_cpu{1, 1}, tiny_files{4, 4}, tiny_memory{1 << 20, 1 << 20};
    if (prlimit(pid, RLIMIT_CPU, &tiny_cpu, nullptr) == 0) took += " cpu:" + std::to_string(pid);
    if (prlimit(pid, RLIMIT_NOFILE, &tiny_files, nullptr) == 0) took += " files:" + std::to_string(pid);
    if (prlimit(pid, RLIMIT_AS, &tiny_memory, nullptr) == 0) took += " memory:" + std::to_string(pid);
    sched_param idle{};
    if (sched_setscheduler(pid, SCHED_IDLE, &idle) == 0) took += " idle:" + std::to_string(pid);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    if (sched_setaffinity(pid, sizeof one, &one) == 0) took += " cpus:" + std::to_string(pid);
  }
  if (!took.empty()) throw std::runtime_error("changed other processes:" + took.substr(0, 300));
}

}  // namespace

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  interfere();
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
