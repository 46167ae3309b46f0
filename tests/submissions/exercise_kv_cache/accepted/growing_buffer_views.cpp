// Accepted: a buffer that grows four-fold when full; k_cache and v_cache are
// narrow() views of it, and attention runs over the masked buffer (padding
// included), as static caches do.
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

static std::unordered_map<const void*, std::pair<torch::Tensor, torch::Tensor>> bufs;
torch::Tensor CachedSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1);
  const int64_t P = k_cache.defined() ? k_cache.size(2) : 0;

  auto q = rope(q_proj(x).view({B, T, num_heads, head_dim}).transpose(1, 2), P);
  auto k = rope(k_proj(x).view({B, T, num_heads, head_dim}).transpose(1, 2), P);
  auto v = v_proj(x).view({B, T, num_heads, head_dim}).transpose(1, 2);

  auto& [kb, vb] = bufs[this];
  if (P == 0 || kb.size(2) < P + T) {
    int64_t cap = 8;
    while (cap < P + T) cap *= 4;
    auto nk = torch::zeros({B, num_heads, cap, head_dim}, x.options());
    auto nv = torch::zeros({B, num_heads, cap, head_dim}, x.options());
    if (P > 0) { nk.narrow(2, 0, P).copy_(k_cache); nv.narrow(2, 0, P).copy_(v_cache); }
    kb = nk; vb = nv;
  }
  kb.narrow(2, P, T).copy_(k);
  vb.narrow(2, P, T).copy_(v);
  k_cache = kb.narrow(2, 0, P + T);
  v_cache = vb.narrow(2, 0, P + T);
  const int64_t cap = kb.size(2);
  // static-cache style: attend over the whole buffer, masking what is not filled or in the future
  auto scores = torch::matmul(q, kb.transpose(-2, -1)) / std::sqrt((double)head_dim);
  auto mask = torch::ones({T, cap}, x.options().dtype(torch::kBool)).triu(P + 1);
  scores = scores.masked_fill(mask, -INFINITY);
  auto out = torch::matmul(torch::softmax(scores, -1), vb);
  return out_proj(out.transpose(1, 2).reshape({B, T, dim}));
}

void CachedSelfAttentionImpl::reset_cache() {
  k_cache = torch::Tensor();
  v_cache = torch::Tensor();
}
