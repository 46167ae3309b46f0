// Wrong (written blind, not in the mistake list): the table is cut with the
// batch size x.size(0) instead of the length x.size(1); it only works when
// B == N, and otherwise the rows do not line up with the positions.
#include "positional_encoding.h"

#include <cmath>

SinusoidalPositionalEncodingImpl::SinusoidalPositionalEncodingImpl(int64_t d_model, int64_t max_len)
    : d_model(d_model), max_len(max_len) {
  TORCH_CHECK(d_model > 0 && max_len > 0, "SinusoidalPositionalEncoding: d_model and max_len must be positive, got ",
              d_model, " and ", max_len);
  const auto options = torch::TensorOptions().dtype(torch::kDouble);

  auto two_i = torch::arange(0, d_model, 2, options);  // ceil(d_model / 2) values
  auto frequency = torch::exp(two_i * (-std::log(10000.0) / static_cast<double>(d_model)));

  auto position = torch::arange(max_len, options).unsqueeze(1);  // (max_len, 1)
  auto angle = position * frequency;                              // (max_len, ceil(d_model / 2))

  auto table = torch::zeros({max_len, d_model}, options);
  table.slice(/*dim=*/1, /*start=*/0, /*end=*/d_model, /*step=*/2).copy_(angle.sin());
  table.slice(1, 1, d_model, 2).copy_(angle.narrow(1, 0, d_model / 2).cos());

  pe = register_buffer("pe", table);
}

torch::Tensor SinusoidalPositionalEncodingImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 3 && x.size(2) == d_model, "SinusoidalPositionalEncoding: expected x of shape (B, N, ",
              d_model, "), got ", x.sizes());
  const int64_t n = x.size(0);  // the number of rows to add
  TORCH_CHECK(n <= max_len, "SinusoidalPositionalEncoding: the input has ", n, " positions, more than max_len = ",
              max_len);

  return x + pe.narrow(0, 0, n).to(x.scalar_type());
}
