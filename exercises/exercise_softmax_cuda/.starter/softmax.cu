// exercise_softmax_cuda: a row-wise softmax CUDA kernel.
// Read README.md in this folder, then run:  ./grade exercise_softmax_cuda
#include <stdexcept>

#include "softmax_kernel.h"

// 1. One block (or one warp) per row; a grid that covers every row.
// 2. Each thread walks its row with a stride of blockDim.x (rows can be longer
//    than a block, and their length need not be a multiple of it).
// 3. Reduce the row's maximum, then the sum of exp(x - max), across the block.
// 4. Write exp(x - max) / sum. Accumulate in float, whatever the element type.
// 5. Each launcher launches on `stream`; the grader checks the launch.

void softmax_rows_f32(const float* in, float* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  throw std::runtime_error("not implemented yet: softmax_rows_f32 (edit exercises/exercise_softmax_cuda/softmax.cu)");
}

void softmax_rows_f16(const __half* in, __half* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  throw std::runtime_error("not implemented yet: softmax_rows_f16 (edit exercises/exercise_softmax_cuda/softmax.cu)");
}

void softmax_rows_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int64_t rows, int64_t cols,
                       cudaStream_t stream) {
  throw std::runtime_error("not implemented yet: softmax_rows_bf16 (edit exercises/exercise_softmax_cuda/softmax.cu)");
}
