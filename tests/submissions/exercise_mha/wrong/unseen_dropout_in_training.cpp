// Wrong (numerics): attention-weight dropout copied from a textbook layer,
// functional and with a fixed p; the statement has no dropout, so training
// mode must compute what eval mode does.
#include <cmath>

#include "mha.h"

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t d_model_, int64_t num_heads_)
    : d_model(d_model_), num_heads(num_heads_), d_k(0) {
  TORCH_CHECK(num_heads_ >= 1, "num_heads must be at least 1");
  TORCH_CHECK(d_model_ % num_heads_ == 0, "num_heads must divide d_model");
  d_k = d_model_ / num_heads_;
  q_linear = register_module("q_linear", torch::nn::Linear(torch::nn::LinearOptions(d_model_, d_model_).bias(true)));
  k_linear = register_module("k_linear", torch::nn::Linear(torch::nn::LinearOptions(d_model_, d_model_).bias(true)));
  v_linear = register_module("v_linear", torch::nn::Linear(torch::nn::LinearOptions(d_model_, d_model_).bias(true)));
  out_linear =
      register_module("out_linear", torch::nn::Linear(torch::nn::LinearOptions(d_model_, d_model_).bias(true)));
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& key,
                                              const torch::Tensor& value, const torch::Tensor& mask) {
  const int64_t b = query.size(0);
  auto heads = [&](const torch::Tensor& x) {
    // (b, n, D) -> (b, n, H, d_k) -> (b, H, n, d_k)
    return x.reshape({b, x.size(1), num_heads, d_k}).permute({0, 2, 1, 3});
  };
  torch::Tensor q = heads(q_linear->forward(query));
  torch::Tensor k = heads(k_linear->forward(key));
  torch::Tensor v = heads(v_linear->forward(value));

  torch::Tensor logits = q.matmul(k.permute({0, 1, 3, 2})).div(std::sqrt(static_cast<double>(d_k)));
  if (mask.defined()) logits = logits.masked_fill(mask.eq(0), -INFINITY);
  torch::Tensor probs = torch::dropout(logits.softmax(/*dim=*/3), 0.1, is_training());
  torch::Tensor ctx = probs.matmul(v);                                           // (b, H, Nq, d_k)
  return out_linear->forward(ctx.permute({0, 2, 1, 3}).reshape({b, query.size(1), d_model}));
}
