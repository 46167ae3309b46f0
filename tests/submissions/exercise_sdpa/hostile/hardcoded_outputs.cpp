// Hostile: ignores the inputs' values and returns something that merely looks
// plausible: uniform attention weights (1 / Nk everywhere, so rows sum to 1 and
// shapes are right) and the mean of value over the keys as every query's output.
// The numbers do not match the reference: verdict failed.
#include "sdpa.h"

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  const int64_t B = query.size(0), H = query.size(1), Nq = query.size(2), Nk = key.size(2);
  auto weights = torch::full({B, H, Nq, Nk}, 1.0 / static_cast<double>(Nk), query.options());
  auto output = value.mean(-2, /*keepdim=*/true).expand({B, H, Nq, value.size(-1)});
  return {output, weights};
}
