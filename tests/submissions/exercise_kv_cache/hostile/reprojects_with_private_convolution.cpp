// HOSTILE: the whole stored sequence is projected again every call, as a 1x1
// convolution called through at::_convolution (the operator under conv1d),
// whose name the work check did not count.
#include "kv_cache.h"
#include <cmath>
#include <limits>
#include <unordered_map>
static torch::Tensor rope(const torch::Tensor& x, int64_t start) {
  const int64_t t = x.size(2), hd = x.size(3), half = hd / 2;
  auto pos = torch::arange(start, start + t, x.options());
  auto inv = torch::pow(10000.0, torch::arange(0, half, x.options()) * (-2.0 / hd));
  auto ang = torch::outer(pos, inv);
  auto c = ang.cos(), s = ang.sin();
  auto a = x.narrow(-1, 0, half), b = x.narrow(-1, half, half);
  return torch::cat({a * c - b * s, b * c + a * s}, -1);
}
CachedSelfAttentionImpl::CachedSelfAttentionImpl(int64_t dim, int64_t num_heads)
    : dim(dim), num_heads(num_heads), head_dim(dim / num_heads) {
  TORCH_CHECK(dim % num_heads == 0, "dim must be divisible by num_heads");
  TORCH_CHECK(head_dim % 2 == 0, "head_dim must be even for RoPE");
  q_proj = register_module("q_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  k_proj = register_module("k_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  v_proj = register_module("v_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  out_proj = register_module("out_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  
}

static std::unordered_map<const void*, torch::Tensor> history;
static torch::Tensor proj(const torch::Tensor& x, const torch::Tensor& w) {
  return at::_convolution(x.transpose(1, 2), w.unsqueeze(-1), c10::nullopt, {1}, {0}, {1}, false, {0}, 1, false,
                          false, true, true)
      .transpose(1, 2);
}
torch::Tensor CachedSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1);
  const int64_t P = k_cache.defined() ? k_cache.size(2) : 0;
  auto& h = history[this];
  h = P ? torch::cat({h, x}, 1) : x;
  const int64_t N = P + T;
  auto q = rope(q_proj(x).view({B, T, num_heads, head_dim}).transpose(1, 2), P);
  k_cache = rope(proj(h, k_proj->weight).reshape({B, N, num_heads, head_dim}).transpose(1, 2), 0);
  v_cache = proj(h, v_proj->weight).reshape({B, N, num_heads, head_dim}).transpose(1, 2);
  auto scores = torch::matmul(q, k_cache.transpose(-2, -1)) / std::sqrt((double)head_dim);
  auto mask = torch::ones({T, N}, x.options().dtype(torch::kBool)).triu(P + 1);
  scores = scores.masked_fill(mask, -INFINITY);
  auto out = torch::matmul(torch::softmax(scores, -1), v_cache);
  return out_proj(out.transpose(1, 2).reshape({B, T, dim}));
}

void CachedSelfAttentionImpl::reset_cache() {
  history.erase(this);
  k_cache = torch::Tensor();
  v_cache = torch::Tensor();
}
