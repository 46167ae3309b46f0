// 2048 threads per block: the launch fails (at most 1024), and nothing checks it.
#include <cfloat>

#include "softmax_kernel.h"

namespace {

constexpr int kThreads = 2048;  // more than a block may have
constexpr int kWarps = kThreads / 32;

// Storage type <-> float.
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16(x); }

struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
};

template <typename Op>
__device__ __forceinline__ float warp_reduce(float value, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// Every thread of the block gets the reduction of `value` over the block.
template <typename Op>
__device__ float block_reduce(float value, Op op, float identity, float* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  value = warp_reduce(value, op);
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < kWarps ? shared[lane] : identity;
    value = warp_reduce(value, op);
    if (lane == 0) shared[kWarps] = value;
  }
  __syncthreads();
  float result = shared[kWarps];
  __syncthreads();  // everyone has read it before the buffer is reused
  return result;
}

template <typename T>
__global__ void softmax_rows_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int64_t cols) {
  __shared__ float shared[kWarps + 1];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = in + row * cols;
    T* y = out + row * cols;
    float local_max = -INFINITY;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) local_max = fmaxf(local_max, to_float(x[c]));
    const float row_max = block_reduce(local_max, Max{}, -INFINITY, shared);
    float local_sum = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) local_sum += expf(to_float(x[c]) - row_max);
    const float inverse = 1.f / block_reduce(local_sum, Sum{}, 0.f, shared);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      y[c] = from_float<T>(expf(to_float(x[c]) - row_max) * inverse);
  }
}

template <typename T>
void launch(const T* in, T* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  // One block per row, up to a grid of 65535 blocks; the kernel loops over the rest.
  const unsigned blocks = static_cast<unsigned>(rows < 65535 ? rows : 65535);
  softmax_rows_kernel<T><<<blocks, kThreads, 0, stream>>>(in, out, rows, cols);
}

}  // namespace

void softmax_rows_f32(const float* in, float* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  launch(in, out, rows, cols, stream);
}

void softmax_rows_f16(const __half* in, __half* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  launch(in, out, rows, cols, stream);
}

void softmax_rows_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int64_t rows, int64_t cols,
                       cudaStream_t stream) {
  launch(in, out, rows, cols, stream);
}
