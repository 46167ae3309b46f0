// The trusted reference of exercise_softmax_cuda: a float64 softmax over each
// row, and the replayable mistakes of a CUDA kernel, as variants of it.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace reference {

struct SoftmaxCudaVariant {
  bool no_max_subtraction = false;  // exp(x) / sum exp(x), evaluated in float32
  // Columns from the last multiple of this block size on are never written
  // (NaN, the grader's poison) and take no part in the max and the sum; 0: off.
  int64_t partial_block_skipped = 0;
  // Only the first `first_block_only` columns of a row are computed; the
  // rest are never written (NaN); 0: off.
  int64_t first_block_only = 0;
};

// x: (R, C) in any floating dtype (its values are used as they are, in
// float64). Returns (R, C) float64.
at::Tensor softmax_rows(const at::Tensor& x, const SoftmaxCudaVariant& variant = {});

}  // namespace reference
