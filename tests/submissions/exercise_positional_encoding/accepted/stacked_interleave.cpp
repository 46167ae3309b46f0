// Accepted: sines and cosines stacked on a new last axis and flattened, which
// interleaves them; positions as a float64 column times a row of frequencies.
#include "positional_encoding.h"

#include <cmath>

SinusoidalPositionalEncodingImpl::SinusoidalPositionalEncodingImpl(int64_t d_model, int64_t max_len)
    : d_model(d_model), max_len(max_len) {
  TORCH_CHECK(d_model > 0 && d_model % 2 == 0, "SinusoidalPositionalEncoding needs an even d_model, got ", d_model);
  auto options = torch::TensorOptions().dtype(torch::kDouble);
  auto frequencies = torch::pow(10000.0, -torch::arange(0, d_model, 2, options) / static_cast<double>(d_model));
  auto angles = torch::outer(torch::arange(max_len, options), frequencies);  // (max_len, d_model / 2)
  pe = register_buffer("pe", torch::stack({angles.sin(), angles.cos()}, -1).flatten(1));
}

torch::Tensor SinusoidalPositionalEncodingImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 3 && x.size(2) == d_model, "expected (B, N, ", d_model, ")");
  TORCH_CHECK(x.size(1) <= max_len, "max_len exceeded: ", x.size(1), " > ", max_len);
  return x + pe.slice(0, 0, x.size(1)).to(x.dtype());
}
