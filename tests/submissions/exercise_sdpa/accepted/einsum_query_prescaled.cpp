// Accepted: the query is scaled before the product, einsum for both products, -1e9 fill,
// Tensor::softmax method.
#include "sdpa.h"

#include <cmath>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const auto d_k = query.size(-1);
  // (q / sqrt(d_k)) . k == (q . k) / sqrt(d_k)
  const auto q_scaled = query / std::sqrt(static_cast<double>(d_k));

  auto scores = torch::einsum("bhqd,bhkd->bhqk", {q_scaled, key});
  if (mask.defined()) {
    scores = scores.masked_fill(mask == 0, -1e9);
  }

  auto weights = scores.softmax(-1);
  auto output = torch::einsum("bhqk,bhkv->bhqv", {weights, value});
  return {output, weights};
}
