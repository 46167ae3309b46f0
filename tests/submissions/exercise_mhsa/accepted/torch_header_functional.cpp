// Accepted: the style of most LibTorch code found in the wild: all of the C++
// API through <torch/torch.h>, the functional namespace for the softmax, the
// head split with reshape/permute, and contiguous() before the merge.
#include <torch/torch.h>

#include <cmath>

#include "mhsa.h"

namespace F = torch::nn::functional;

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim (", dim, ") must be a multiple of num_heads (",
              num_heads, ")");
  q_proj = register_module("q_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(true)));
  k_proj = register_module("k_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(true)));
  v_proj = register_module("v_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(true)));
  out_proj = register_module("out_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(true)));
  this->dropout = register_module("dropout", torch::nn::Dropout(torch::nn::DropoutOptions(dropout)));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  const auto batch = x.size(0);
  const auto tokens = x.size(1);
  auto heads = [&](const torch::Tensor& t) {
    return t.reshape({batch, tokens, num_heads, head_dim}).permute({0, 2, 1, 3});
  };
  auto q = heads(q_proj->forward(x));
  auto k = heads(k_proj->forward(x));
  auto v = heads(v_proj->forward(x));
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));
  auto weights = dropout->forward(F::softmax(scores, F::SoftmaxFuncOptions(-1)));
  auto context = torch::matmul(weights, v).permute({0, 2, 1, 3}).contiguous().reshape({batch, tokens, dim});
  return out_proj->forward(context);
}
