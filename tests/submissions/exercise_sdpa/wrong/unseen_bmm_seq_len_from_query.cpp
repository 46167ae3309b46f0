// Wrong: batch and heads are folded for bmm, but the sequence length is taken from the query
// for all three tensors, so key and value are reshaped wrongly whenever Nk != Nq.
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const int64_t B = query.size(0), H = query.size(1), N = query.size(2);
  const int64_t d_k = query.size(3), d_v = value.size(3);
  auto q = query.reshape({B * H, N, d_k});
  auto k = key.reshape({B * H, N, d_k});
  auto v = value.reshape({B * H, N, d_v});
  auto scores = torch::bmm(q, k.transpose(1, 2)).view({B, H, N, N}) / std::sqrt(static_cast<double>(d_k));
  if (mask.defined()) {
    scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  }
  auto weights = torch::softmax(scores, -1);
  auto output = torch::bmm(weights.reshape({B * H, N, N}), v).view({B, H, N, d_v});
  return {output, weights};
}
