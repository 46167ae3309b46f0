// Accepted: heads flattened into the batch for bmm, a hand-written stable
// softmax, the mask only when a call brings more than one token, RoPE from
// explicit cos/sin tables.
#include "kv_cache.h"

#include <cmath>

CachedSelfAttentionImpl::CachedSelfAttentionImpl(int64_t dim, int64_t num_heads)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0 && head_dim % 2 == 0,
              "dim must split into num_heads heads of even width; got dim ", dim, ", num_heads ", num_heads);
  auto make = [&](const std::string& name) {
    return register_module(name, torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  };
  q_proj = make("q_proj");
  k_proj = make("k_proj");
  v_proj = make("v_proj");
  out_proj = make("out_proj");
}

torch::Tensor CachedSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t batch = x.size(0), count = x.size(1), half = head_dim / 2;
  const int64_t start = k_cache.defined() ? k_cache.size(2) : 0, total = start + count;

  auto theta = torch::exp(torch::arange(half, x.options()) * (-std::log(10000.0) * 2.0 / head_dim));
  auto angle = torch::arange(start, total, x.options()).unsqueeze(1) * theta.unsqueeze(0);  // (count, half)
  auto cos = angle.cos(), sin = angle.sin();
  auto turn = [&](const torch::Tensor& h) {  // h (B, H, count, hd)
    auto lo = h.slice(3, 0, half), hi = h.slice(3, half, head_dim);
    return torch::cat({lo * cos - hi * sin, lo * sin + hi * cos}, 3);
  };
  auto heads = [&](torch::nn::Linear& proj) {
    return proj(x).view({batch, count, num_heads, head_dim}).transpose(1, 2);
  };
  auto q = turn(heads(q_proj));
  auto k = turn(heads(k_proj));
  auto v = heads(v_proj);
  if (start == 0) {
    k_cache = k.contiguous();
    v_cache = v.contiguous();
  } else {
    k_cache = torch::cat({k_cache, k}, 2);
    v_cache = torch::cat({v_cache, v}, 2);
  }

  const int64_t bh = batch * num_heads;
  auto qf = q.reshape({bh, count, head_dim});
  auto kf = k_cache.reshape({bh, total, head_dim});
  auto vf = v_cache.reshape({bh, total, head_dim});
  auto scores = torch::bmm(qf, kf.transpose(1, 2)) / std::sqrt(static_cast<double>(head_dim));
  if (count > 1) {
    auto query_at = torch::arange(start, total, x.options().dtype(torch::kLong)).unsqueeze(1);
    auto key_at = torch::arange(total, x.options().dtype(torch::kLong)).unsqueeze(0);
    scores = scores.masked_fill(key_at > query_at, -INFINITY);
  }
  auto shifted = scores - std::get<0>(scores.max(-1, true));
  auto e = shifted.exp();
  auto weights = e / e.sum(-1, true);
  auto out = torch::bmm(weights, vf).view({batch, num_heads, count, head_dim});
  return out_proj(out.transpose(1, 2).contiguous().view({batch, count, dim}));
}

void CachedSelfAttentionImpl::reset_cache() {
  k_cache.reset();
  v_cache.reset();
}
