// Accepted: each pair (x_i, x_{i+d/2}) read as the complex number
// x_i + j x_{i+d/2} and multiplied by e^{j p theta_i} (torch::polar), then the
// real and imaginary parts put back as the two halves.
#include "rope.h"

#include <cmath>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const auto n = x.size(2);
  const auto d = x.size(3);
  const auto half = d / 2;

  // z = x1 + j*x2, shape (B, H, N, d/2)
  auto z = torch::complex(x.narrow(-1, 0, half), x.narrow(-1, half, half));

  // theta_i = exp(-ln(10000) * 2i / d)
  auto theta = torch::exp(torch::arange(0, d, 2, x.options()) * (-std::log(10000.0) / d));
  auto p = torch::arange(n, x.options()) + static_cast<double>(offset);
  auto angle = p.unsqueeze(1) * theta.unsqueeze(0);  // (N, d/2)

  // unit complex numbers e^{j angle}
  auto rotation = torch::polar(torch::ones_like(angle), angle);
  auto turned = z * rotation;
  return torch::cat({torch::real(turned), torch::imag(turned)}, -1);
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  auto q = apply_rope(query, query_offset);
  auto k = apply_rope(key, key_offset);
  auto scores = torch::einsum("bhqd,bhkd->bhqk", {q, k}) * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  auto attn = scores.softmax(-1);
  auto out = torch::einsum("bhqk,bhkv->bhqv", {attn, value});
  return {out, attn};
}
