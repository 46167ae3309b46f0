// Hostile: reads the sandbox's mount table (/proc/self/mountinfo) for the
// empty folders mounted over what the sandbox hides (the checkout, the build
// folder, a class or results folder) and throws their paths, so they would be
// printed in the report. The sandbox covers a hidden folder only where a
// folder shown whole would show it, which it never does here: no such mount,
// the correct result passes.
// (The /proc paths are put together at run time, past the audit of the compiled
// code's text, so that the sandbox itself is what this tests.)
#include "sdpa.h"

#include <cmath>
#include <fstream>
#include <sstream>
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
  std::ifstream in(proc_root() + "/self/mountinfo");
  std::string line, found;
  while (std::getline(in, line)) {
    // "<id> <parent> <dev> <root> <mount point> <options> ... - <type> <source> ..."
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string type;
    tail >> type;
    if (type == "tmpfs" && point != "/" && point != "/dev" && point != "/tmp") found += " " + point;
  }
  if (!found.empty()) throw std::runtime_error("folders hidden by the sandbox:" + found);
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
