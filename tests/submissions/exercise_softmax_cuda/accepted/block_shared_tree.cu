// One block of 512 threads per row; classic shared-memory tree reductions.
#include "softmax_kernel.h"

namespace {
constexpr int kThreads = 512;

__device__ float load(const float* p, int64_t i) { return p[i]; }
__device__ float load(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ float load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ void store(__half* p, int64_t i, float v) { p[i] = __float2half(v); }
__device__ void store(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16(v); }

template <typename T>
__global__ void softmax_kernel(const T* in, T* out, int64_t rows, int64_t cols) {
  __shared__ float buffer[kThreads];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row * cols;
    float m = -INFINITY;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) m = fmaxf(m, load(in, base + c));
    buffer[threadIdx.x] = m;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) buffer[threadIdx.x] = fmaxf(buffer[threadIdx.x], buffer[threadIdx.x + half]);
      __syncthreads();
    }
    const float row_max = buffer[0];
    __syncthreads();
    float s = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) s += __expf(load(in, base + c) - row_max);
    buffer[threadIdx.x] = s;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) buffer[threadIdx.x] += buffer[threadIdx.x + half];
      __syncthreads();
    }
    const float row_sum = buffer[0];
    __syncthreads();
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) store(out, base + c, __expf(load(in, base + c) - row_max) / row_sum);
  }
}

template <typename T>
void run(const T* in, T* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  const int blocks = static_cast<int>(rows < 4096 ? rows : 4096);
  softmax_kernel<<<blocks, kThreads, 0, stream>>>(in, out, rows, cols);
}
}  // namespace

void softmax_rows_f32(const float* in, float* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  run(in, out, rows, cols, stream);
}
void softmax_rows_f16(const __half* in, __half* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  run(in, out, rows, cols, stream);
}
void softmax_rows_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  run(in, out, rows, cols, stream);
}
