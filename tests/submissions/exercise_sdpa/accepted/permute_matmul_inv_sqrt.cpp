// Accepted: permute instead of transpose, multiply by 1/sqrt(d_k), bool mask via
// to(kBool).logical_not(), -infinity fill, torch::softmax.
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const double inv_sqrt_dk = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));

  // (B, H, Nk, d_k) -> (B, H, d_k, Nk)
  const auto key_t = key.permute({0, 1, 3, 2});
  auto scores = torch::matmul(query, key_t) * inv_sqrt_dk;

  if (mask.defined()) {
    // Any non-zero entry means "may attend"; to(kBool) handles bool and integer masks.
    const auto blocked = mask.to(torch::kBool).logical_not();
    scores = scores.masked_fill(blocked, -std::numeric_limits<double>::infinity());
  }

  const auto weights = torch::softmax(scores, /*dim=*/-1);
  const auto output = torch::matmul(weights, value);
  return std::make_tuple(output, weights);
}
