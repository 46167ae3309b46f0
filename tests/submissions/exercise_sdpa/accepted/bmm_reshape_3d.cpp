// Accepted: fold batch and heads into one dimension and use bmm on 3-D tensors, then view
// back to 4-D; mask filled with -1e9 on the 4-D scores.
#include "sdpa.h"

#include <cmath>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const int64_t B = query.size(0);
  const int64_t H = query.size(1);
  const int64_t Nq = query.size(2);
  const int64_t d_k = query.size(3);
  const int64_t Nk = key.size(2);
  const int64_t d_v = value.size(3);

  const auto q3 = query.reshape({B * H, Nq, d_k});
  const auto k3 = key.reshape({B * H, Nk, d_k});
  const auto v3 = value.reshape({B * H, Nk, d_v});

  auto scores = torch::bmm(q3, k3.transpose(1, 2)).view({B, H, Nq, Nk});
  scores = scores / std::sqrt(static_cast<double>(d_k));

  if (mask.defined()) {
    // The mask broadcasts against the 4-D scores, whatever its own shape.
    scores = scores.masked_fill(mask == 0, -1e9);
  }

  auto weights = torch::softmax(scores, /*dim=*/-1);
  auto output = torch::bmm(weights.reshape({B * H, Nq, Nk}), v3).view({B, H, Nq, d_v});
  return {output, weights};
}
