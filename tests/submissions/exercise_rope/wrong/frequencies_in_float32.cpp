// Wrong: the inverse frequencies are computed the way much published Python
// does, in float32, and only the angles follow x's dtype: a float64 call gets
// angles off by float32's rounding (more at later positions).
#include "rope.h"

#include <cmath>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t n = x.size(-2), d = x.size(-1), half = d / 2;
  TORCH_CHECK(d % 2 == 0, "apply_rope needs an even head dimension");
  auto inv_freq = 1.0 / torch::pow(10000.0, torch::arange(0, d, 2, torch::kFloat) / static_cast<double>(d));
  auto t = torch::arange(offset, offset + n, x.options());
  auto angles = torch::outer(t, inv_freq.to(x.options()));
  auto c = angles.cos(), s = angles.sin();
  auto a = x.slice(-1, 0, half), b = x.slice(-1, half, d);
  return torch::cat({a * c - b * s, b * c + a * s}, -1);
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  auto q = apply_rope(query, query_offset), k = apply_rope(key, key_offset);
  auto w = torch::softmax(torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(query.size(-1))), -1);
  return {torch::matmul(w, value), w};
}
