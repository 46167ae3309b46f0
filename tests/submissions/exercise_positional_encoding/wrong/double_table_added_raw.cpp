// Wrong: a float64 table filled element by element and added without a cast.
// After module->to(kFloat) the buffer is float32 and all is well; a module
// used as built turns every float32 input into a float64 result.
#include "positional_encoding.h"

#include <cmath>

SinusoidalPositionalEncodingImpl::SinusoidalPositionalEncodingImpl(int64_t d_model, int64_t max_len)
    : d_model(d_model), max_len(max_len) {
  auto table = torch::zeros({max_len, d_model}, torch::kFloat64);
  auto t = table.accessor<double, 2>();
  for (int64_t p = 0; p < max_len; ++p) {
    for (int64_t i = 0; i < d_model; ++i) {
      const double angle = p / std::pow(10000.0, static_cast<double>(i - i % 2) / d_model);
      t[p][i] = i % 2 == 0 ? std::sin(angle) : std::cos(angle);
    }
  }
  pe = register_buffer("pe", table);
}

torch::Tensor SinusoidalPositionalEncodingImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.size(1) <= max_len, "sequence longer than max_len = ", max_len);
  return x + pe.slice(0, 0, x.size(1));
}
