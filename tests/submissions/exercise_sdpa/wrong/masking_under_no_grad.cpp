// Wrong: masking and softmax run under torch::NoGradGuard ("the mask is a constant"), which
// cuts the graph, so query and key get no gradient.
#include "sdpa.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const auto d_k = query.size(-1);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_k));
  torch::Tensor weights;
  {
    // The mask is fixed data, it needs no gradients.
    torch::NoGradGuard no_grad;
    if (mask.defined()) {
      scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
    }
    weights = torch::softmax(scores, -1);
  }
  auto output = torch::matmul(weights, value);
  return {output, weights};
}
