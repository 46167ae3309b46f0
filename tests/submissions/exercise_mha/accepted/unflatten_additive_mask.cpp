// unflatten/flatten for the head split and merge, and the mask turned into an
// additive bias (0 where allowed, -inf where not) that broadcasts onto the scores.
#include <cmath>
#include <limits>

#include "mha.h"

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t d_model, int64_t num_heads)
    : d_model(d_model), num_heads(num_heads), d_k(num_heads > 0 ? d_model / num_heads : 0) {
  if (num_heads <= 0 || d_model % num_heads != 0) {
    TORCH_CHECK(false, "cannot split d_model = ", d_model, " into ", num_heads, " equal heads");
  }
  q_linear = register_module("q_linear", torch::nn::Linear(d_model, d_model));
  k_linear = register_module("k_linear", torch::nn::Linear(d_model, d_model));
  v_linear = register_module("v_linear", torch::nn::Linear(d_model, d_model));
  out_linear = register_module("out_linear", torch::nn::Linear(d_model, d_model));
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& key,
                                              const torch::Tensor& value, const torch::Tensor& mask) {
  auto split = [this](const torch::Tensor& x) { return x.unflatten(-1, {num_heads, d_k}).transpose(1, 2); };
  auto q = split(q_linear(query));
  auto k = split(k_linear(key));
  auto v = split(v_linear(value));

  auto scores = q.matmul(k.transpose(-2, -1)) / std::sqrt(double(d_k));
  if (mask.defined()) {
    auto bias = torch::zeros(mask.sizes(), scores.options())
                    .masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
    scores = scores + bias;
  }
  auto out = scores.softmax(-1).matmul(v);         // (B, H, Nq, d_k)
  return out_linear(out.transpose(1, 2).flatten(2));  // (B, Nq, H*d_k)
}
