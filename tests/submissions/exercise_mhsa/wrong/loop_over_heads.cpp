// WRONG: one head at a time in a for loop, results concatenated: right values, but H times the work.
#include "mhsa.h"

#include <cmath>
#include <vector>

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim (", dim, ") must be divisible by num_heads (", num_heads,
              ")");
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  auto q = q_proj(x);  // (B, N, D)
  auto k = k_proj(x);
  auto v = v_proj(x);

  std::vector<torch::Tensor> heads;
  for (int64_t h = 0; h < num_heads; ++h) {
    // head h owns features h*hd .. (h+1)*hd - 1
    auto qh = q.narrow(/*dim=*/-1, h * head_dim, head_dim);  // (B, N, hd)
    auto kh = k.narrow(/*dim=*/-1, h * head_dim, head_dim);
    auto vh = v.narrow(/*dim=*/-1, h * head_dim, head_dim);

    auto scores = torch::matmul(qh, kh.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));  // (B, N, N)
    auto attn = torch::softmax(scores, /*dim=*/-1);
    attn = dropout(attn);
    heads.push_back(torch::matmul(attn, vh));  // (B, N, hd)
  }
  auto out = torch::cat(heads, /*dim=*/-1);  // (B, N, D)
  return out_proj(out);
}
