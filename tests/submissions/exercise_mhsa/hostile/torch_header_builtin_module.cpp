// Forbidden: with all of <torch/torch.h> at hand, hands the work to LibTorch's
// own MultiheadAttention module, kept beside the required layers.
#include <torch/torch.h>

#include "mhsa.h"

namespace {
torch::nn::MultiheadAttention& shared_attention(int64_t dim, int64_t heads) {
  static torch::nn::MultiheadAttention attention{nullptr};
  if (!attention) attention = torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(dim, heads));
  return attention;
}
}  // namespace

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(dim / num_heads) {
  TORCH_CHECK(dim % num_heads == 0, "dim must be divisible by num_heads");
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  auto& attention = shared_attention(dim, num_heads);
  auto seq_first = x.transpose(0, 1);
  auto out = std::get<0>(attention->forward(seq_first, seq_first, seq_first));
  return out.transpose(0, 1);
}
