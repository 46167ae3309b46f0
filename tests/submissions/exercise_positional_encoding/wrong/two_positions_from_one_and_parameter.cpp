// WRONG twice: positions are counted from 1, and the table is registered as a
// (frozen) parameter instead of a buffer.
#include "positional_encoding.h"

#include <cmath>

SinusoidalPositionalEncodingImpl::SinusoidalPositionalEncodingImpl(int64_t d_model, int64_t max_len)
    : d_model(d_model), max_len(max_len) {
  TORCH_CHECK(d_model % 2 == 0, "d_model must be even, got ", d_model);
  auto position = torch::arange(1, max_len + 1, torch::kFloat).unsqueeze(1);
  auto div_term = torch::exp(torch::arange(0, d_model, 2, torch::kFloat) * (-std::log(10000.0) / d_model));
  auto table = torch::zeros({max_len, d_model});
  table.slice(1, 0, d_model, 2) = torch::sin(position * div_term);
  table.slice(1, 1, d_model, 2) = torch::cos(position * div_term);
  pe = register_parameter("pe", table, /*requires_grad=*/false);
}

torch::Tensor SinusoidalPositionalEncodingImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.size(1) <= max_len, "sequence length ", x.size(1), " exceeds max_len ", max_len);
  return x + pe.narrow(0, 0, x.size(1));
}
