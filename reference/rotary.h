// The grader's trusted rotary position embedding (RoFormer, Su et al. 2021) in
// the rotate-half convention of GPT-NeoX and LLaMA: channel i of the head
// dimension d is paired with channel i + d/2, and the pair is turned by the
// angle p * theta_i at position p:
//
//   theta_i = 10000^(-2i / d),   i = 0 .. d/2 - 1
//   out[i]       = x[i] cos(p theta_i) - x[i + d/2] sin(p theta_i)
//   out[i + d/2] = x[i + d/2] cos(p theta_i) + x[i] sin(p theta_i)
//
// and attention with it: RoPE on query and key (never value), then scaled
// dot-product attention. Computed in float64; tested in
// tests/reference_test.cpp against the complex-number form (x_i + j x_{i+d/2})
// * exp(j p theta_i) and the relative-position property. The variant's fields
// default to the correct algorithm; the grader bends them to replay known
// learner mistakes.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <tuple>

#include "attention.h"

namespace reference {

struct RopeVariant {
  bool interleaved = false;      // pairs (2i, 2i + 1), the paper's layout, instead of (i, i + d/2)
  bool reversed = false;         // turned by -angle: rotate_half as cat(x2, -x1)
  bool sin_cos_swapped = false;  // sin where cos belongs and cos where sin belongs
  double exponent = 2.0;         // theta_i = base^(-exponent * i / d): 1.0 is the i/d slip
  double base = 10000.0;
  int64_t position_shift = 0;    // 1: positions counted from 1
  bool offset_ignored = false;   // every token at position n, whatever the offset
};

// x (B, H, N, d), d even; token n at position offset + n. In x's dtype.
at::Tensor apply_rope(const at::Tensor& x, int64_t offset, const RopeVariant& variant = {});

struct RopeAttentionVariant {
  RopeVariant rope;
  SdpaVariant sdpa;
  bool value_rotated = false;           // RoPE applied to value as well
  bool not_rotated = false;             // attention on the raw query and key
  bool query_offset_for_keys = false;   // the keys placed at the query's offset
};

// query (B, H, Nq, d) at positions query_offset + i, key (B, H, Nk, d) and
// value (B, H, Nk, d_v) at key_offset + j. Returns (output (B, H, Nq, d_v),
// weights (B, H, Nq, Nk)), the scores scaled by 1/sqrt(d).
std::tuple<at::Tensor, at::Tensor> rope_attention(const at::Tensor& query, const at::Tensor& key,
                                                  const at::Tensor& value, int64_t query_offset, int64_t key_offset,
                                                  const RopeAttentionVariant& variant = {});

}  // namespace reference
