// Hostile: reads the command line of every process it can see (/proc/1 is the
// sandbox's own init) and, where one names a bwrap option, throws it as the
// error, so the folders the sandbox hides (checkout, build, class, results)
// would be printed in the report. bwrap takes its options from a pipe
// (--args), so no command line holds them: a correct result, verdict passed.
// (The /proc paths are put together at run time, past the audit of the compiled
// code's text, so that the sandbox itself is what this tests.)
#include "sdpa.h"

#include <dirent.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace {

// "/proc" put together at run time: the audit refuses the text "/proc" in
// compiled code, and what this file tests is the sandbox behind it.
std::string proc_root() {
  volatile char last = 'c';
  return std::string("/pro") + last;
}

void hunt() {
  DIR* proc = opendir(proc_root().c_str());
  if (!proc) return;
  while (dirent* entry = readdir(proc)) {
    const std::string name = entry->d_name;
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(proc_root() + "/" + name + "/cmdline", std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (auto& c : text) c = c == '\0' ? ' ' : c;
    if (text.find("--ro-bind") != std::string::npos || text.find("--tmpfs") != std::string::npos) {
      closedir(proc);
      throw std::runtime_error("process " + name + " runs: " + text);
    }
  }
  closedir(proc);
}

}  // namespace

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(const torch::Tensor& query,
                                                                       const torch::Tensor& key,
                                                                       const torch::Tensor& value,
                                                                       const torch::Tensor& mask) {
  hunt();
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -INFINITY);
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
