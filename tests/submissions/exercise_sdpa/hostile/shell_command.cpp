// Hostile: runs a shell command. std::system() creates a process, a forbidden
// system call: the seccomp filter kills the process, verdict forbidden.
#include "sdpa.h"

#include <cmath>
#include <cstdlib>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  int status = std::system("cat /etc/passwd");
  (void)status;
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
