// Fixed interface for exercise_softmax_cuda. Do not edit: the grader compiles
// your softmax.cu with nvcc against this header and calls these launchers.
//
// Each launcher computes, for every row r < rows of a row-major, contiguous
// (rows, cols) matrix on the GPU, the softmax of the row:
//
//   out[r][c] = exp(in[r][c]) / sum_j exp(in[r][j])
//
// correct to the rounding of the element type, for every allowed input.
// `in` and `out` are device pointers to rows * cols elements (distinct
// buffers); rows >= 1, cols >= 1, rows * cols < 2^31. Entries are finite or
// -inf, and a row is never all -inf. Launch your kernel(s) on `stream` and
// return without synchronising: the grader checks cudaGetLastError() and
// synchronises after the call. A non-contiguous tensor never reaches you: the
// grader passes a contiguous copy.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#else
// Declared as the CUDA headers declare them, so that C++ code built without
// the CUDA Toolkit (the grader's driver) can name the launchers.
typedef struct CUstream_st* cudaStream_t;
struct __half;
struct __nv_bfloat16;
#endif

void softmax_rows_f32(const float* in, float* out, int64_t rows, int64_t cols, cudaStream_t stream);
void softmax_rows_f16(const __half* in, __half* out, int64_t rows, int64_t cols, cudaStream_t stream);
void softmax_rows_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int64_t rows, int64_t cols, cudaStream_t stream);
