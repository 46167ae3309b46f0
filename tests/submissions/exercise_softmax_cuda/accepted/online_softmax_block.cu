// Online softmax: one pass computes the running maximum and the sum rescaled
// to it, (m, d) pairs combined across a block of 128 threads; a second pass writes.
#include "softmax_kernel.h"

namespace {
constexpr int kThreads = 128;

struct MD {
  float m, d;
};
__device__ MD combine(MD a, MD b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.f};
  return {m, a.d * __expf(a.m - m) + b.d * __expf(b.m - m)};
}
__device__ float as_float(float v) { return v; }
__device__ float as_float(__half v) { return __half2float(v); }
__device__ float as_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ void put(float& p, float v) { p = v; }
__device__ void put(__half& p, float v) { p = __float2half(v); }
__device__ void put(__nv_bfloat16& p, float v) { p = __float2bfloat16(v); }

template <typename T>
__global__ void online_softmax(const T* in, T* out, int64_t rows, int64_t cols) {
  __shared__ MD partial[kThreads / 32];
  __shared__ MD total;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    MD md{-INFINITY, 0.f};
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) md = combine(md, MD{as_float(in[row * cols + c]), 1.f});
    for (int o = 16; o; o >>= 1) {
      MD other{__shfl_xor_sync(0xffffffff, md.m, o), __shfl_xor_sync(0xffffffff, md.d, o)};
      md = combine(md, other);
    }
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = md;
    __syncthreads();
    if (threadIdx.x == 0) {
      MD all = partial[0];
      for (int w = 1; w < kThreads / 32; ++w) all = combine(all, partial[w]);
      total = all;
    }
    __syncthreads();
    const MD row_md = total;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads)
      put(out[row * cols + c], __expf(as_float(in[row * cols + c]) - row_md.m) / row_md.d);
    __syncthreads();
  }
}

template <typename T>
void start(const T* in, T* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  online_softmax<<<static_cast<unsigned>(rows < 32768 ? rows : 32768), kThreads, 0, stream>>>(in, out, rows, cols);
}
}  // namespace

void softmax_rows_f32(const float* in, float* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  start(in, out, rows, cols, stream);
}
void softmax_rows_f16(const __half* in, __half* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  start(in, out, rows, cols, stream);
}
void softmax_rows_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  start(in, out, rows, cols, stream);
}
