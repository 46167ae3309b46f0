// Hostile: tries to attach to its parent (the grader) with ptrace, to read or
// change its memory, then returns a correct result. ptrace is a forbidden system
// call: the seccomp filter kills the process, verdict forbidden.
#include "sdpa.h"

#include <sys/ptrace.h>
#include <unistd.h>

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  ptrace(PTRACE_ATTACH, getppid(), nullptr, nullptr);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
