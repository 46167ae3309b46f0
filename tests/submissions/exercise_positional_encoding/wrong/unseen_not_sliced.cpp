// Wrong (not in the mistake list): the whole table is added, whatever the
// input's length: it only works when N == max_len.
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
  pe = register_buffer("pe", table);
}

torch::Tensor SinusoidalPositionalEncodingImpl::forward(const torch::Tensor& x) {
  return x + pe;
}
