// WRONG (outside the known mistakes): forward follows the PyTorch tutorial,
// which expects seq-first input (N, B, d_model) and adds pe[:x.size(0)] laid
// out (rows, 1, d_model). On this interface's batch-first x (B, N, d_model)
// x.size(0) is the batch: batch element b gets row b at every token, and the
// sequence gets no positions at all. The buffer itself is right.
#include "positional_encoding.h"

#include <cmath>

using torch::indexing::None;
using torch::indexing::Slice;

SinusoidalPositionalEncodingImpl::SinusoidalPositionalEncodingImpl(int64_t d_model, int64_t max_len)
    : d_model(d_model), max_len(max_len) {
  TORCH_CHECK(d_model % 2 == 0, "d_model must be even (got ", d_model, ")");
  auto position = torch::arange(0, max_len, torch::kFloat).unsqueeze(1);
  auto div_term = torch::exp(torch::arange(0, d_model, 2, torch::kFloat) * (-std::log(10000.0f) / d_model));
  auto table = torch::zeros({max_len, d_model});
  table.index_put_({Slice(), Slice(0, None, 2)}, torch::sin(position * div_term));
  table.index_put_({Slice(), Slice(1, None, 2)}, torch::cos(position * div_term));
  pe = register_buffer("pe", table);
}

torch::Tensor SinusoidalPositionalEncodingImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.size(1) <= max_len, "input length ", x.size(1), " is longer than max_len ", max_len);
  // tutorial: x = x + self.pe[:x.size(0)]   (pe laid out (max_len, 1, d_model))
  return x + pe.index({Slice(None, x.size(0)), None}).to(x.dtype());
}
