// Wrong: the output is right, but the returned "weights" are the scaled, masked scores, not
// the softmax probabilities.
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const auto d_k = query.size(-1);
  auto attn = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_k));
  if (mask.defined()) {
    attn = attn.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  }
  auto output = torch::matmul(torch::softmax(attn, -1), value);
  return {output, attn};
}
