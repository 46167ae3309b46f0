// WRONG twice: reset_cache() does nothing (a new sequence still sees the old
// one), and the scores are never divided by sqrt(head_dim).
#include "kv_cache.h"

#include <cmath>

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

torch::Tensor CachedSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1);
  const int64_t past = k_cache.defined() ? k_cache.size(2) : 0;
  auto q = q_proj(x).view({B, T, num_heads, head_dim}).transpose(1, 2);
  auto k = k_proj(x).view({B, T, num_heads, head_dim}).transpose(1, 2);
  auto v = v_proj(x).view({B, T, num_heads, head_dim}).transpose(1, 2);
  q = rope(q, past);
  k = rope(k, past);
  k_cache = past > 0 ? torch::cat({k_cache, k}, 2) : k;
  v_cache = past > 0 ? torch::cat({v_cache, v}, 2) : v;
  auto scores = torch::matmul(q, k_cache.transpose(2, 3));
  auto i = torch::arange(T, x.options().dtype(torch::kLong)).view({T, 1});
  auto j = torch::arange(past + T, x.options().dtype(torch::kLong)).view({1, past + T});
  scores = scores.masked_fill(j > i + past, -INFINITY);
  auto out = torch::matmul(torch::softmax(scores, -1), v_cache);
  return out_proj(out.transpose(1, 2).reshape({B, T, dim}));
}

void CachedSelfAttentionImpl::reset_cache() {}
