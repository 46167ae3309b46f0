// Model solution for exercise_mha: multi-head attention over separate query,
// key and value inputs (self- or cross-attention) with an optional mask.
#include <cmath>
#include <limits>

#include "mha.h"

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t d_model, int64_t num_heads)
    : d_model(d_model), num_heads(num_heads), d_k(num_heads > 0 ? d_model / num_heads : 0) {
  // Each head gets an equal slice of the features: refuse what does not split evenly.
  TORCH_CHECK(num_heads > 0 && d_model % num_heads == 0, "d_model (", d_model, ") must be divisible by num_heads (",
              num_heads, ")");
  // One Linear per role covers every head at once; registered by name so that
  // parameters(), to() and state dicts find them.
  q_linear = register_module("q_linear", torch::nn::Linear(d_model, d_model));
  k_linear = register_module("k_linear", torch::nn::Linear(d_model, d_model));
  v_linear = register_module("v_linear", torch::nn::Linear(d_model, d_model));
  out_linear = register_module("out_linear", torch::nn::Linear(d_model, d_model));
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& key,
                                              const torch::Tensor& value, const torch::Tensor& mask) {
  const auto batch = query.size(0);
  // Cross-attention: the keys and values may be longer or shorter than the
  // queries, so each is split with its own length.
  const auto q_len = query.size(1), kv_len = key.size(1);

  // (B, N, d_model) -> (B, N, H, d_k) -> (B, H, N, d_k): one batched matmul
  // then treats batch and heads as independent problems.
  auto split = [&](const torch::Tensor& t, int64_t length) {
    return t.view({batch, length, num_heads, d_k}).transpose(1, 2);
  };
  auto q = split(q_linear(query), q_len);
  auto k = split(k_linear(key), kv_len);
  auto v = split(v_linear(value), kv_len);

  // (B, H, Nq, Nk) scores, scaled by sqrt(d_k): the dot products run over d_k
  // features, and unscaled they push the softmax into saturation.
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_k));
  // mask == 0 means "do not attend": -inf there gives exactly zero weight.
  // The mask broadcasts ((B, 1, 1, Nk), (Nq, Nk), ...); undefined means none.
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, /*dim=*/-1);  // over the keys

  // Back to (B, Nq, H, d_k); transpose only swaps strides, so the memory must
  // be made contiguous before view() can merge the heads into d_model.
  auto heads = torch::matmul(weights, v).transpose(1, 2).contiguous().view({batch, q_len, d_model});
  return out_linear(heads);  // mixes the heads' results
}
