// WRONG: the causal bias hides each token's own key too (triu with diagonal 0,
// shifted by the cache); the first token of a sequence would then see nothing,
// so its own key is let back in, and only there.
#include "kv_cache.h"

#include <cmath>
#include <limits>

namespace {

torch::Tensor rotate(const torch::Tensor& t, int64_t first_position) {
  const int64_t n = t.size(2), hd = t.size(3), half = hd / 2;
  auto freq = torch::exp(torch::arange(half, t.options()) * (-std::log(10000.0) * 2.0 / hd));
  auto angle = torch::arange(first_position, first_position + n, t.options()).unsqueeze(1) * freq.unsqueeze(0);
  auto cosv = torch::cat({angle.cos(), angle.cos()}, -1), sinv = torch::cat({angle.sin(), angle.sin()}, -1);
  auto swapped = torch::cat({-t.narrow(-1, half, half), t.narrow(-1, 0, half)}, -1);
  return t * cosv + swapped * sinv;
}

}  // namespace

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
  const int64_t cached = (k_cache.defined() && k_cache.dim() == 4) ? k_cache.size(2) : 0;
  auto heads = [&](const torch::Tensor& t) { return t.reshape({B, T, num_heads, head_dim}).permute({0, 2, 1, 3}); };
  auto q = rotate(heads(q_proj(x)), cached);
  auto k = rotate(heads(k_proj(x)), cached);
  auto v = heads(v_proj(x));
  k_cache = cached == 0 ? k : torch::cat({k_cache, k}, 2);
  v_cache = cached == 0 ? v : torch::cat({v_cache, v}, 2);
  const int64_t total = cached + T;
  // Hide key j from new token t when j >= cached + t ...
  auto bias = torch::full({T, total}, -std::numeric_limits<double>::infinity(), x.options()).triu(cached);
  // ... but the sequence's first token keeps its own key, or its row would be empty.
  if (cached == 0) bias.index_put_({0, 0}, 0.0);
  auto scores = torch::matmul(q, k_cache.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(head_dim))) + bias;
  auto mixed = torch::matmul(torch::softmax(scores, -1), v_cache);
  return out_proj(mixed.permute({0, 2, 1, 3}).reshape({B, T, dim}));
}

void CachedSelfAttentionImpl::reset_cache() {
  k_cache = torch::Tensor();
  v_cache = torch::Tensor();
}
