#include "rotary.h"

#include <ATen/ATen.h>

#include <cmath>

namespace reference {

at::Tensor apply_rope(const at::Tensor& x, int64_t offset, const RopeVariant& variant) {
  TORCH_CHECK(x.dim() == 4, "apply_rope: x must be (B, H, N, d), got ", x.sizes());
  const int64_t n = x.size(-2), d = x.size(-1), half = d / 2;
  TORCH_CHECK(d % 2 == 0, "apply_rope: the head dimension d must be even, got ", d);
  const auto f64 = at::TensorOptions().dtype(at::kDouble).device(x.device());
  const int64_t start = (variant.offset_ignored ? 0 : offset) + variant.position_shift;
  auto positions = at::arange(start, start + n, f64);                                    // (N)
  auto theta = at::pow(variant.base, at::arange(half, f64) * (-variant.exponent / d));  // (d/2)
  auto angles = at::outer(positions, theta);                                             // (N, d/2)
  if (variant.reversed) angles = -angles;
  auto cos = angles.cos(), sin = angles.sin();
  if (variant.sin_cos_swapped) std::swap(cos, sin);
  auto xd = x.to(at::kDouble);
  at::Tensor first, second;  // the two members of each pair, (B, H, N, d/2)
  if (variant.interleaved) {
    first = xd.slice(-1, 0, d, 2);
    second = xd.slice(-1, 1, d, 2);
  } else {
    first = xd.slice(-1, 0, half);
    second = xd.slice(-1, half, d);
  }
  auto new_first = first * cos - second * sin;
  auto new_second = second * cos + first * sin;
  at::Tensor out;
  if (variant.interleaved) {
    out = at::stack({new_first, new_second}, -1).flatten(-2);
  } else {
    out = at::cat({new_first, new_second}, -1);
  }
  return out.to(x.scalar_type());
}

std::tuple<at::Tensor, at::Tensor> rope_attention(const at::Tensor& query, const at::Tensor& key,
                                                  const at::Tensor& value, int64_t query_offset, int64_t key_offset,
                                                  const RopeAttentionVariant& variant) {
  const int64_t keys_at = variant.query_offset_for_keys ? query_offset : key_offset;
  auto q = variant.not_rotated ? query : apply_rope(query, query_offset, variant.rope);
  auto k = variant.not_rotated ? key : apply_rope(key, keys_at, variant.rope);
  auto v = variant.value_rotated ? apply_rope(value, keys_at, variant.rope) : value;
  return scaled_dot_product_attention(q, k, v, {}, variant.sdpa);
}

}  // namespace reference
