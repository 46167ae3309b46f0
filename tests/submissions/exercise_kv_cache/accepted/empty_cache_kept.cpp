// Accepted: the cache is never undefined after the first call: reset_cache()
// leaves it with zero tokens, (B, H, 0, head_dim), so the position is always
// k_cache.size(2) and appending needs no special first case. The mask is a
// where() over additive -inf.
#include "kv_cache.h"

#include <cmath>
#include <limits>

namespace {

torch::Tensor rope_at(const torch::Tensor& x, int64_t offset) {
  const int64_t d = x.size(3), n = x.size(2);
  auto i = torch::arange(d / 2, x.options());
  auto inv_freq = 1.0 / torch::pow(10000.0, 2.0 * i / d);
  auto phase = (torch::arange(n, x.options()) + offset).unsqueeze(-1) * inv_freq;
  auto x1 = x.narrow(3, 0, d / 2), x2 = x.narrow(3, d / 2, d / 2);
  return torch::cat({x1 * phase.cos() - x2 * phase.sin(), x2 * phase.cos() + x1 * phase.sin()}, 3);
}

}  // namespace

CachedSelfAttentionImpl::CachedSelfAttentionImpl(int64_t dim, int64_t num_heads)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim ", dim, " is not a multiple of num_heads ", num_heads);
  TORCH_CHECK(head_dim % 2 == 0, "odd head_dim ", head_dim, ": rotary pairs need an even width");
  q_proj = register_module("q_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  k_proj = register_module("k_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  v_proj = register_module("v_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  out_proj = register_module("out_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
}

torch::Tensor CachedSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1);
  auto to_heads = [&](const torch::Tensor& y) { return y.unflatten(2, {num_heads, head_dim}).transpose(1, 2); };
  if (!k_cache.defined()) {
    k_cache = torch::zeros({B, num_heads, 0, head_dim}, x.options());
    v_cache = torch::zeros({B, num_heads, 0, head_dim}, x.options());
  }
  const int64_t P = k_cache.size(2);
  auto q = rope_at(to_heads(q_proj(x)), P);
  k_cache = torch::cat({k_cache, rope_at(to_heads(k_proj(x)), P)}, 2);
  v_cache = torch::cat({v_cache, to_heads(v_proj(x))}, 2);
  auto scores = q.matmul(k_cache.transpose(-1, -2)).div(std::sqrt(static_cast<double>(head_dim)));
  auto row = torch::arange(P, P + T, x.options().dtype(torch::kLong)).unsqueeze(1);
  auto col = torch::arange(P + T, x.options().dtype(torch::kLong)).unsqueeze(0);
  auto penalty = torch::where(col <= row, torch::zeros({}, x.options()),
                              torch::full({}, -std::numeric_limits<double>::infinity(), x.options()));
  auto attended = torch::softmax(scores + penalty, -1).matmul(v_cache);
  return out_proj(attended.transpose(1, 2).flatten(2));
}

void CachedSelfAttentionImpl::reset_cache() {
  if (k_cache.defined()) {
    k_cache = k_cache.narrow(2, 0, 0);
    v_cache = v_cache.narrow(2, 0, 0);
  }
}
