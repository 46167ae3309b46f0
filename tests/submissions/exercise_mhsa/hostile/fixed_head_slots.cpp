// HOSTILE (round-6 red team): an ordinary loop over heads (matmul, softmax,
// matmul for each) that always runs 16 slots, those past the last head on
// zero-width slices: the same operators for 2 heads and for 8. It makes 36
// matrix products where a batched file makes 4 to 6.
#include "mhsa.h"
#include <cmath>
MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim must be divisible by num_heads");
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}
torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  auto q = q_proj(x), k = k_proj(x), v = v_proj(x);
  const int64_t slots = std::max<int64_t>(num_heads, 16);
  std::vector<torch::Tensor> heads;
  for (int64_t h = 0; h < slots; ++h) {
    const bool real = h < num_heads;
    const int64_t start = real ? h * head_dim : 0, width = real ? head_dim : 0;
    auto qh = q.narrow(2, start, width), kh = k.narrow(2, start, width), vh = v.narrow(2, start, width);
    auto w = torch::softmax(torch::matmul(qh, kh.transpose(1, 2)) * scale, -1);
    heads.push_back(torch::matmul(dropout(w), vh));
  }
  return out_proj(torch::cat(heads, 2));
}
