// Accepted: reshape + permute for the heads, the queries scaled before the
// matmul, the functional softmax, and torch::dropout with the module's p and
// the module's training flag.
#include "mhsa.h"

#include <torch/nn/functional/activation.h>

#include <cmath>

namespace F = torch::nn::functional;

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0, "num_heads must be positive");
  TORCH_CHECK(head_dim * num_heads == dim, "dim must be divisible by num_heads, got dim=", dim,
              " num_heads=", num_heads);
  q_proj = register_module("q_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(true)));
  k_proj = register_module("k_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(true)));
  v_proj = register_module("v_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(true)));
  out_proj = register_module("out_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(true)));
  this->dropout = register_module("dropout", torch::nn::Dropout(torch::nn::DropoutOptions().p(dropout)));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  const auto B = x.size(0);
  const auto N = x.size(1);
  const auto split = [&](const torch::Tensor& t) {
    return t.reshape({B, N, num_heads, head_dim}).permute({0, 2, 1, 3});  // (B, H, N, hd)
  };

  // Scaling q first is the same as scaling the scores: (q / s) k^T = (q k^T) / s.
  auto q = split(q_proj(x)) * (1.0 / std::sqrt(static_cast<double>(head_dim)));
  auto k = split(k_proj(x));
  auto v = split(v_proj(x));

  auto scores = q.matmul(k.permute({0, 1, 3, 2}));  // (B, H, N, N)
  auto attn = F::softmax(scores, F::SoftmaxFuncOptions(-1));
  attn = torch::dropout(attn, dropout->options.p(), is_training());

  auto out = attn.matmul(v).permute({0, 2, 1, 3}).reshape({B, N, dim});
  return out_proj->forward(out);
}
