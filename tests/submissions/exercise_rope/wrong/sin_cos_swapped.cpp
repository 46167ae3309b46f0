// Wrong: the helper returns {cos, sin} but the caller unpacks it as
// [sin, cos], so the sine multiplies x and the cosine the rotated copy.
#include "rope.h"

#include <cmath>
#include <utility>

namespace {

torch::Tensor rotate_half(const torch::Tensor& x) {
  auto parts = x.chunk(2, -1);
  return torch::cat({-parts[1], parts[0]}, -1);
}

// returns {cos, sin}, each (N, d)
std::pair<torch::Tensor, torch::Tensor> rope_tables(int64_t n, int64_t d, int64_t offset,
                                                    const torch::TensorOptions& options) {
  auto theta = torch::pow(10000.0, torch::arange(0, d, 2, options) * (-1.0 / d));
  auto pos = torch::arange(offset, offset + n, options);
  auto angles = torch::outer(pos, theta);
  angles = torch::cat({angles, angles}, -1);
  return {torch::cos(angles), torch::sin(angles)};
}

}  // namespace

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  auto [sin, cos] = rope_tables(x.size(-2), x.size(-1), offset, x.options());
  return x * cos + rotate_half(x) * sin;
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  auto q = apply_rope(query, query_offset);
  auto k = apply_rope(key, key_offset);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
