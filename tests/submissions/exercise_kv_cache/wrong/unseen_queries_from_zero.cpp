// Wrong (positions): the keys are rotated at their place in the cache, but the
// queries of every call from position 0, as if each call began the sequence.
#include "kv_cache.h"

#include <cmath>
#include <limits>

namespace {

torch::Tensor rotate_half(const torch::Tensor& x) {
  auto halves = x.chunk(2, -1);
  return torch::cat({-halves[1], halves[0]}, -1);
}

torch::Tensor apply_rotary(const torch::Tensor& x, int64_t first_position) {
  const int64_t hd = x.size(-1);
  auto positions = torch::arange(first_position, first_position + x.size(-2), x.options());
  auto frequencies = torch::pow(10000.0, -torch::arange(0, hd, 2, x.options()) / static_cast<double>(hd));
  auto angles = torch::outer(positions, frequencies);
  auto full = torch::cat({angles, angles}, -1);  // (T, hd): each angle for both members of its pair
  return x * full.cos() + rotate_half(x) * full.sin();
}

}  // namespace

CachedSelfAttentionImpl::CachedSelfAttentionImpl(int64_t dim, int64_t num_heads)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "num_heads must divide dim");
  TORCH_CHECK(head_dim % 2 == 0, "RoPE needs an even head_dim, got ", head_dim);
  torch::nn::LinearOptions options(dim, dim);
  options.bias(false);
  q_proj = register_module("q_proj", torch::nn::Linear(options));
  k_proj = register_module("k_proj", torch::nn::Linear(options));
  v_proj = register_module("v_proj", torch::nn::Linear(options));
  out_proj = register_module("out_proj", torch::nn::Linear(options));
}

torch::Tensor CachedSelfAttentionImpl::forward(const torch::Tensor& x) {
  const auto b = x.size(0), t = x.size(1);
  const int64_t p = k_cache.defined() ? k_cache.size(2) : 0;
  auto split = [&](const torch::Tensor& y) { return y.reshape({b, t, num_heads, head_dim}).permute({0, 2, 1, 3}); };
  auto q = apply_rotary(split(q_proj(x)), 0) * (1.0 / std::sqrt(static_cast<double>(head_dim)));
  auto k = apply_rotary(split(k_proj(x)), p);
  auto v = split(v_proj(x));
  k_cache = k_cache.defined() ? torch::cat({k_cache, k}, 2) : k;
  v_cache = v_cache.defined() ? torch::cat({v_cache, v}, 2) : v;
  auto scores = torch::einsum("bhtd,bhsd->bhts", {q, k_cache});
  auto allowed = torch::ones({t, p + t}, x.options().dtype(torch::kBool)).tril(p);
  scores = scores.masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity());
  auto mixed = torch::einsum("bhts,bhsd->bthd", {torch::softmax(scores, -1), v_cache});
  return out_proj(mixed.reshape({b, t, dim}));
}

void CachedSelfAttentionImpl::reset_cache() {
  const torch::Tensor none;
  k_cache = none;
  v_cache = none;
}
