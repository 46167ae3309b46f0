// Wrong (positions: the table added as it is): the PyTorch tutorial's encoding, dropout included (p 0.1,
// functional); the statement has none, so training mode must add only the table.
#include "positional_encoding.h"

#include <cmath>

SinusoidalPositionalEncodingImpl::SinusoidalPositionalEncodingImpl(int64_t d_model, int64_t max_len)
    : d_model(d_model), max_len(max_len) {
  TORCH_CHECK(d_model % 2 == 0, "d_model must be even, got ", d_model);
  auto position = torch::arange(max_len, torch::kFloat).unsqueeze(1);
  auto div_term = torch::exp(torch::arange(0, d_model, 2, torch::kFloat) * (-std::log(10000.0) / d_model));
  auto table = torch::zeros({max_len, d_model});
  table.slice(1, 0, d_model, 2) = torch::sin(position * div_term);
  table.slice(1, 1, d_model, 2) = torch::cos(position * div_term);
  pe = register_buffer("pe", table.unsqueeze(0));
}

torch::Tensor SinusoidalPositionalEncodingImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.size(1) <= max_len, "input of length ", x.size(1), " is longer than max_len = ", max_len);
  return torch::dropout(x + pe.slice(1, 0, x.size(1)), 0.1, is_training());
}
