// Wrong: the mask gets mask.unsqueeze(1) "for the head dimension" (copied from multi-head
// code), which breaks masks that already broadcast to (B, H, Nq, Nk).
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const auto d_k = query.size(-1);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_k));
  if (mask.defined()) {
    // same mask for all heads
    const auto head_mask = mask.unsqueeze(1);
    scores = scores.masked_fill(head_mask == 0, -std::numeric_limits<double>::infinity());
  }
  auto weights = torch::softmax(scores, -1);
  auto output = torch::matmul(weights, value);
  return {output, weights};
}
