// The grader's trusted sinusoidal positional encoding (Vaswani et al., 2017):
//
//   PE[pos][2k]     = sin(pos * w_k)
//   PE[pos][2k + 1] = cos(pos * w_k),   w_k = exp(-ln(10000) * 2k / d_model)
//
// An odd d_model has one more sine channel than cosine ones. Computed in
// float64; tested in tests/reference_test.cpp against the formula written with
// pow(). The variant's fields default to the correct encoding; the grader
// bends one at a time to replay a known learner mistake.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace reference {

struct PositionalEncodingVariant {
  bool sin_cos_swapped = false;     // cos on the even channels, sin on the odd ones
  bool exponent_without_2 = false;  // w_k = 10000^(-k / d_model): the pair index without its factor 2
  bool log10_base = false;          // w_k = exp(-log10(10000) * 2k / d_model)
  bool halves = false;              // sines in the first half of the channels, cosines in the second
  int64_t first_position = 0;       // 1: positions counted from 1
  bool input_scaled = false;        // x * sqrt(d_model) + PE (the embedding scale belongs elsewhere)
};

// The table for positions 0..length-1: (length, d_model), float64.
at::Tensor sinusoidal_table(int64_t length, int64_t d_model, const PositionalEncodingVariant& variant = {});

// x (B, N, d_model) plus the table's first N rows, broadcast over the batch, in x's dtype.
at::Tensor add_positional_encoding(const at::Tensor& x, const PositionalEncodingVariant& variant = {});

}  // namespace reference
