// One warp per row, 8 rows per block of 256 threads; reductions with
// __shfl_xor_sync only (no shared memory, no __syncthreads).
#include "softmax_kernel.h"

namespace {
constexpr int kWarpsPerBlock = 8;

template <typename T> __device__ float to_f(T x);
template <> __device__ float to_f<float>(float x) { return x; }
template <> __device__ float to_f<__half>(__half x) { return __half2float(x); }
template <> __device__ float to_f<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ T from_f(float x);
template <> __device__ float from_f<float>(float x) { return x; }
template <> __device__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

template <typename T>
__global__ void warp_softmax(const T* in, T* out, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32; row < rows; row += warps) {
    const T* x = in + row * cols;
    T* y = out + row * cols;
    float m = -INFINITY;
    for (int64_t c = lane; c < cols; c += 32) m = fmaxf(m, to_f(x[c]));
    for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
    float s = 0.f;
    for (int64_t c = lane; c < cols; c += 32) s += expf(to_f(x[c]) - m);
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    for (int64_t c = lane; c < cols; c += 32) y[c] = from_f<T>(expf(to_f(x[c]) - m) / s);
  }
}

template <typename T>
void go(const T* in, T* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (blocks > 65535) blocks = 65535;
  warp_softmax<<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, stream>>>(in, out, rows, cols);
}
}  // namespace

void softmax_rows_f32(const float* in, float* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  go(in, out, rows, cols, stream);
}
void softmax_rows_f16(const __half* in, __half* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  go(in, out, rows, cols, stream);
}
void softmax_rows_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  go(in, out, rows, cols, stream);
}
