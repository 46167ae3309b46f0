// Hostile: tries to enter new user and network namespaces (the first step of
// most container escapes and of getting root-like powers), then returns a
// correct result. unshare is a forbidden system call: the seccomp filter kills
// the process, verdict forbidden.
#include "sdpa.h"

#include <sched.h>

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  unshare(CLONE_NEWUSER | CLONE_NEWNET);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
