// WRONG: the rotation's cos and sin are computed for the call's positions,
// but the queries use only the first row of them (broadcast over the call's
// tokens): every query sits at P, the call's first position; keys are right.
#include "kv_cache.h"

#include <cmath>
#include <limits>

static torch::Tensor apply_rope(const torch::Tensor& x, int64_t start) {
  const int64_t hd = x.size(-1), half = hd / 2;
  auto pos = torch::arange(start, start + x.size(-2), x.options()).unsqueeze(-1);
  auto inv = torch::pow(10000.0, torch::arange(0, half, x.options()) * (-2.0 / static_cast<double>(hd)));
  auto ang = pos * inv;
  auto lo = x.narrow(-1, 0, half), hi = x.narrow(-1, half, half);
  return torch::cat({lo * ang.cos() - hi * ang.sin(), hi * ang.cos() + lo * ang.sin()}, -1);
}

CachedSelfAttentionImpl::CachedSelfAttentionImpl(int64_t dim, int64_t num_heads)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim must be divisible by num_heads");
  TORCH_CHECK(head_dim % 2 == 0, "head_dim must be even for RoPE");
  q_proj = register_module("q_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  k_proj = register_module("k_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  v_proj = register_module("v_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  out_proj = register_module("out_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
}

torch::Tensor CachedSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1);
  const int64_t P = k_cache.defined() ? k_cache.size(2) : 0;
  const int64_t half = head_dim / 2;
  auto pos = torch::arange(P, P + T, x.options()).unsqueeze(-1);
  auto ang = pos * torch::pow(10000.0, torch::arange(0, half, x.options()) * (-2.0 / static_cast<double>(head_dim)));
  auto c = ang.cos(), s = ang.sin();  // (T, half)
  auto turn = [&](const torch::Tensor& t, const torch::Tensor& cc, const torch::Tensor& ss) {
    auto lo = t.narrow(-1, 0, half), hi = t.narrow(-1, half, half);
    return torch::cat({lo * cc - hi * ss, hi * cc + lo * ss}, -1);
  };
  auto q = turn(q_proj(x).view({B, T, num_heads, head_dim}).transpose(1, 2), c[0], s[0]);
  auto k = turn(k_proj(x).view({B, T, num_heads, head_dim}).transpose(1, 2), c, s);
  auto v = v_proj(x).view({B, T, num_heads, head_dim}).transpose(1, 2);
  k_cache = k_cache.defined() ? torch::cat({k_cache, k}, 2) : k;
  v_cache = v_cache.defined() ? torch::cat({v_cache, v}, 2) : v;
  auto idx = x.options().dtype(torch::kLong);
  auto hidden = torch::arange(P + T, idx).view({1, P + T}) > torch::arange(P, P + T, idx).view({T, 1});
  auto att = torch::matmul(q, k_cache.transpose(2, 3)).div(std::sqrt(static_cast<double>(head_dim)));
  att = att.masked_fill(hidden, -std::numeric_limits<double>::infinity()).softmax(-1);
  return out_proj(torch::matmul(att, v_cache).transpose(1, 2).reshape({B, T, dim}));
}

void CachedSelfAttentionImpl::reset_cache() {
  k_cache = torch::Tensor();
  v_cache = torch::Tensor();
}
