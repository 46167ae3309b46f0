// HOSTILE: right numbers, but the attention is computed one query of one head
// of one batch element at a time, with matrix-vector products (at::mv), a
// softmax written as exp(s - logsumexp(s)) and the scale applied once to the
// queries: none of the operators a count by name looks for, yet the number of
// operators the forward calls grows with the heads.
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
  const int64_t B = x.size(0), N = x.size(1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  auto q = q_proj(x) * scale, k = k_proj(x), v = v_proj(x);
  std::vector<torch::Tensor> rows;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<torch::Tensor> tokens;
    for (int64_t i = 0; i < N; ++i) {
      std::vector<torch::Tensor> heads;
      for (int64_t h = 0; h < num_heads; ++h) {
        auto kh = k[b].narrow(1, h * head_dim, head_dim);  // (N, hd)
        auto vh = v[b].narrow(1, h * head_dim, head_dim);
        auto s = at::mv(kh, q[b][i].narrow(0, h * head_dim, head_dim));
        auto w = dropout((s - s.logsumexp(0)).exp());
        heads.push_back(at::mv(vh.t(), w));
      }
      tokens.push_back(torch::cat(heads, 0));
    }
    rows.push_back(torch::stack(tokens, 0));
  }
  return out_proj(torch::stack(rows, 0));
}
