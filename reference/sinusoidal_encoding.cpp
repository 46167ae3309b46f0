#include "sinusoidal_encoding.h"

#include <ATen/ATen.h>

#include <cmath>

namespace reference {

at::Tensor sinusoidal_table(int64_t length, int64_t d_model, const PositionalEncodingVariant& variant) {
  TORCH_CHECK(length >= 0 && d_model > 0, "sinusoidal_table: bad length or d_model");
  const auto options = at::TensorOptions().dtype(at::kDouble);
  auto position = (at::arange(length, options) + static_cast<double>(variant.first_position)).unsqueeze(1);
  const int64_t sines = (d_model + 1) / 2, cosines = d_model / 2;
  auto pair = at::arange(sines, options);  // k
  const double log_base = variant.log10_base ? std::log10(10000.0) : std::log(10000.0);
  auto exponent = variant.exponent_without_2 ? pair : pair * 2;
  auto frequency = at::exp(exponent * (-log_base / static_cast<double>(d_model)));  // w_k
  auto angle = position * frequency;                                                // (length, sines)
  auto first = variant.sin_cos_swapped ? at::cos(angle) : at::sin(angle);
  auto second = (variant.sin_cos_swapped ? at::sin(angle) : at::cos(angle)).narrow(1, 0, cosines);
  if (variant.halves) return at::cat({first, second}, 1);
  auto table = at::zeros({length, d_model}, options);
  table.slice(1, 0, d_model, 2).copy_(first);
  table.slice(1, 1, d_model, 2).copy_(second);
  return table;
}

at::Tensor add_positional_encoding(const at::Tensor& x, const PositionalEncodingVariant& variant) {
  TORCH_CHECK(x.dim() == 3, "add_positional_encoding: x must be (B, N, d_model)");
  auto table = sinusoidal_table(x.size(1), x.size(2), variant).to(x.scalar_type());
  auto input = variant.input_scaled ? x * std::sqrt(static_cast<double>(x.size(2))) : x;
  return input + table.unsqueeze(0);
}

}  // namespace reference
