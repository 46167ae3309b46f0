// Batch and heads folded into one axis of size B*H and multiplied with bmm,
// the way PyTorch's own implementation does it. The mask is expanded to the
// full (B, H, Nq, Nk) first, so every broadcastable layout folds the same way.
#include <cmath>
#include <limits>

#include "mha.h"

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t d_model, int64_t num_heads)
    : d_model(d_model), num_heads(num_heads), d_k(num_heads > 0 ? d_model / num_heads : 0) {
  TORCH_CHECK(num_heads > 0, "num_heads must be positive");
  TORCH_CHECK(d_k * num_heads == d_model, "d_model must be a multiple of num_heads");
  q_linear = register_module("q_linear", torch::nn::Linear(d_model, d_model));
  k_linear = register_module("k_linear", torch::nn::Linear(d_model, d_model));
  v_linear = register_module("v_linear", torch::nn::Linear(d_model, d_model));
  out_linear = register_module("out_linear", torch::nn::Linear(d_model, d_model));
}

namespace {
// (B, N, H*d) -> (B*H, N, d)
torch::Tensor fold_heads(const torch::Tensor& x, int64_t heads, int64_t d) {
  const auto B = x.size(0), N = x.size(1);
  return x.view({B, N, heads, d}).transpose(1, 2).reshape({B * heads, N, d});
}
// (B*H, N, d) -> (B, N, H*d)
torch::Tensor unfold_heads(const torch::Tensor& x, int64_t heads) {
  const auto BH = x.size(0), N = x.size(1), d = x.size(2);
  return x.view({BH / heads, heads, N, d}).transpose(1, 2).reshape({BH / heads, N, heads * d});
}
}  // namespace

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& key,
                                              const torch::Tensor& value, const torch::Tensor& mask) {
  const auto B = query.size(0), Nq = query.size(1), Nk = key.size(1);
  auto q = fold_heads(q_linear(query), num_heads, d_k);  // (B*H, Nq, d_k)
  auto k = fold_heads(k_linear(key), num_heads, d_k);    // (B*H, Nk, d_k)
  auto v = fold_heads(v_linear(value), num_heads, d_k);  // (B*H, Nk, d_k)

  auto scores = torch::bmm(q, k.transpose(1, 2)) / std::sqrt(static_cast<double>(d_k));  // (B*H, Nq, Nk)
  if (mask.defined()) {
    auto keep = (mask != 0).expand({B, num_heads, Nq, Nk}).reshape({B * num_heads, Nq, Nk});
    scores = scores.masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
  }
  auto weights = torch::softmax(scores, 2);
  return out_linear(unfold_heads(torch::bmm(weights, v), num_heads));
}
