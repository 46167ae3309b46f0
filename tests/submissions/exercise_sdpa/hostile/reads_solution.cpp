// Hostile: hunts for the project's files from inside the run: walks up from the
// working directory, along /proc/self/cwd/.. chains, and from where the runner and
// this library live, looking for the model answer, the reference and the corpus.
// If any of them can be opened for reading it fails loudly (an exception, so the
// check fails); otherwise it returns a correct result. The sandbox hides the
// project from the run: verdict passed.
// (The /proc paths are put together at run time, past the audit of the compiled
// code's text, so that the sandbox itself is what this tests.)
#include "sdpa.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// "/proc" put together at run time: the audit refuses the text "/proc" in
// compiled code, and what this file tests is the sandbox behind it.
std::string proc_root() {
  volatile char last = 'c';
  return std::string("/pro") + last;
}

// Files, not folders: the sandbox's empty stand-ins for hidden folders can be opened.
const char* const kTargets[] = {"solutions/exercise_sdpa/sdpa.cpp", "reference/attention.cpp",
                                "tests/submissions/exercise_sdpa/hostile/reads_solution.cpp"};

// Throws if `dir/target` opens for reading, for every target.
void probe(const std::string& dir) {
  for (const char* target : kTargets) {
    std::string path = dir.empty() ? target : dir + "/" + target;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      close(fd);
      throw std::runtime_error("sandbox breach: could read " + path);
    }
  }
}

// Probes `start` and every directory above it, textually ("/a/b/c", "/a/b", ...).
void walk_up(std::string start) {
  while (!start.empty()) {
    probe(start);
    if (start == "/") break;
    auto slash = start.find_last_of('/');
    start = slash == 0 ? "/" : start.substr(0, slash == std::string::npos ? 0 : slash);
  }
}

std::string link_target(const char* link) {
  char buffer[PATH_MAX];
  ssize_t got = readlink(link, buffer, sizeof(buffer) - 1);
  return got > 0 ? std::string(buffer, static_cast<size_t>(got)) : std::string();
}

void hunt() {
  // Relative and /proc chains: ., .., ../.., ...
  std::string relative = ".";
  std::string proc = proc_root() + "/self/cwd";
  for (int level = 0; level < 32; ++level) {
    probe(relative);
    probe(proc);
    relative += "/..";
    proc += "/..";
  }
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd))) walk_up(cwd);
  walk_up(link_target((proc_root() + "/self/cwd").c_str()));
  walk_up(link_target((proc_root() + "/self/exe").c_str()));
  // Where this library was loaded from (dladdr would be refused as a run-time lookup).
  std::ifstream maps(proc_root() + "/self/maps");
  for (std::string line; std::getline(maps, line);) {
    auto slash = line.find('/');
    if (slash != std::string::npos && line.find("submission.so") != std::string::npos) walk_up(line.substr(slash));
  }
}

}  // namespace

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  hunt();
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
