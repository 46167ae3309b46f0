// Accepted: the kv heads are expanded without repeat_interleave, the way
// LLaMA's repeat_kv does it: a new group axis after the kv axis, expand, and
// fold (KV, G) into H. Scale as a float constant.
#include "gqa.h"

#include <cmath>

using namespace torch;

GroupedQueryAttentionImpl::GroupedQueryAttentionImpl(int64_t dim, int64_t num_heads, int64_t num_kv_heads)
    : dim(dim), num_heads(num_heads), num_kv_heads(num_kv_heads), head_dim(0) {
  TORCH_CHECK(num_heads > 0 && num_kv_heads > 0, "head counts must be positive");
  TORCH_CHECK(dim % num_heads == 0, "dim ", dim, " not divisible by num_heads ", num_heads);
  TORCH_CHECK(num_heads % num_kv_heads == 0, "num_heads ", num_heads, " not divisible by num_kv_heads ", num_kv_heads);
  head_dim = dim / num_heads;
  auto no_bias = [](int64_t in, int64_t out) { return nn::LinearOptions(in, out).bias(false); };
  q_proj = register_module("q_proj", nn::Linear(no_bias(dim, dim)));
  k_proj = register_module("k_proj", nn::Linear(no_bias(dim, num_kv_heads * head_dim)));
  v_proj = register_module("v_proj", nn::Linear(no_bias(dim, num_kv_heads * head_dim)));
  out_proj = register_module("out_proj", nn::Linear(no_bias(dim, dim)));
}

static Tensor repeat_kv(const Tensor& t, int64_t n_rep) {
  if (n_rep == 1) return t;
  const auto b = t.size(0), kv = t.size(1), n = t.size(2), hd = t.size(3);
  return t.unsqueeze(2).expand({b, kv, n_rep, n, hd}).reshape({b, kv * n_rep, n, hd});
}

Tensor GroupedQueryAttentionImpl::forward(const Tensor& x) {
  const auto b = x.size(0), n = x.size(1);
  auto xq = q_proj->forward(x).reshape({b, n, num_heads, head_dim}).permute({0, 2, 1, 3});
  auto xk = k_proj->forward(x).reshape({b, n, num_kv_heads, head_dim}).permute({0, 2, 1, 3});
  auto xv = v_proj->forward(x).reshape({b, n, num_kv_heads, head_dim}).permute({0, 2, 1, 3});
  xk = repeat_kv(xk, num_heads / num_kv_heads);
  xv = repeat_kv(xv, num_heads / num_kv_heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  auto scores = torch::matmul(xq, xk.transpose(2, 3)) * scale;
  auto probs = scores.softmax(-1);
  auto out = torch::matmul(probs, xv).permute({0, 2, 1, 3}).reshape({b, n, dim});
  return out_proj->forward(out);
}
