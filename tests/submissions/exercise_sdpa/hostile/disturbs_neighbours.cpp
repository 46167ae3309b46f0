// Hostile, for a batch: goes through every other grade's runner it can see
// (a process named grader-runner) and tries to open each of its descriptors by
// /proc/PID/fd/N, to read a neighbour's
// request or write into its result pipe. If any descriptor of another process
// opens, it throws, so its own grade fails (and a neighbour's would have been
// at risk). Runners are not dumpable (their /proc entries belong to root) and
// the system-call filter refuses opens for writing; inside the sandbox each
// runner has its own PID namespace too. Nothing opens: verdict passed, and the
// neighbours' verdicts stand.
// (The /proc paths are put together at run time, past the audit of the compiled
// code's text, so that the runtime defences are what this tests.)
#include "sdpa.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace {

std::string proc_root() {
  volatile char last = 'c';
  return std::string("/pro") + last;
}

bool numeric(const std::string& name) {
  return !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
}

void disturb() {
  const std::string own = std::to_string(getpid());
  DIR* processes = opendir(proc_root().c_str());
  if (!processes) return;
  std::string opened;
  while (dirent* process = readdir(processes)) {
    const std::string pid = process->d_name;
    if (!numeric(pid) || pid == own) continue;
    std::string comm(64, '\0');
    const int named = open((proc_root() + "/" + pid + "/comm").c_str(), O_RDONLY);
    if (named < 0) continue;
    const auto got = read(named, &comm[0], comm.size());
    close(named);
    if (got <= 0 || comm.compare(0, 13, "grader-runner") != 0) continue;
    const std::string fds = proc_root() + "/" + pid + "/fd";
    DIR* descriptors = opendir(fds.c_str());
    if (!descriptors) continue;
    while (dirent* fd = readdir(descriptors)) {
      const std::string name = fd->d_name;
      if (!numeric(name)) continue;
      const std::string path = fds + "/" + name;
      for (int flags : {O_RDONLY | O_NONBLOCK, O_WRONLY | O_NONBLOCK}) {
        const int handle = open(path.c_str(), flags);
        if (handle < 0) continue;
        char junk[64] = "garbage from a neighbour";
        if (flags & O_WRONLY) {
          (void)!write(handle, junk, sizeof junk);
        } else {
          (void)!read(handle, junk, sizeof junk);
        }
        close(handle);
        opened += " " + path;
      }
    }
    closedir(descriptors);
  }
  closedir(processes);
  if (!opened.empty()) throw std::runtime_error("opened another process's descriptors:" + opened.substr(0, 300));
}

}  // namespace

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  disturb();
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
