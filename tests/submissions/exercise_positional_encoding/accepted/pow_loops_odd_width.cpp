// Accepted: the formula written out with pow in two loops (slow to build, built
// once); an odd d_model simply ends with a sine.
#include "positional_encoding.h"

#include <cmath>

SinusoidalPositionalEncodingImpl::SinusoidalPositionalEncodingImpl(int64_t d_model, int64_t max_len)
    : d_model(d_model), max_len(max_len) {
  auto table = torch::zeros({max_len, d_model}, torch::kDouble);
  auto a = table.accessor<double, 2>();
  for (int64_t pos = 0; pos < max_len; ++pos) {
    for (int64_t c = 0; c < d_model; ++c) {
      const int64_t i = c / 2;
      const double angle = pos / std::pow(10000.0, 2.0 * i / d_model);
      a[pos][c] = c % 2 == 0 ? std::sin(angle) : std::cos(angle);
    }
  }
  pe = register_buffer("pe", table);
}

torch::Tensor SinusoidalPositionalEncodingImpl::forward(const torch::Tensor& x) {
  const auto n = x.size(-2);
  TORCH_CHECK(n <= max_len, "SinusoidalPositionalEncoding: ", n, " positions, but max_len is ", max_len);
  return x + pe.narrow(0, 0, n).to(x.scalar_type()).unsqueeze(0);
}
