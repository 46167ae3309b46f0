// Accepted: einsum for the scores and matmul for the output, scale by std::pow(d_k, -0.5),
// -1e9 fill where mask.logical_not() (true where the mask is 0, for bool and integer
// masks alike), hand-written softmax using max().values.
#include "sdpa.h"

#include <cmath>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const double scale = std::pow(static_cast<double>(query.size(-1)), -0.5);
  auto scores = torch::einsum("...qd,...kd->...qk", {query, key}) * scale;

  if (mask.defined()) {
    scores = scores.masked_fill(mask.logical_not(), -1e9);
  }

  const auto row_max = std::get<0>(scores.max(/*dim=*/-1, /*keepdim=*/true));
  const auto shifted = (scores - row_max).exp();
  const auto weights = shifted / shifted.sum(-1, /*keepdim=*/true);
  const auto output = torch::matmul(weights, value);
  return {output, weights};
}
