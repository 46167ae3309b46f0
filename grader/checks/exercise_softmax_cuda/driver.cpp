// Child side of exercise_softmax_cuda: makes the case's tensors on the GPU,
// calls the learner's launcher on the current CUDA stream, checks the launch
// and the run, and sends the result back. The learner's softmax.cu (compiled
// by nvcc) is linked beside this file; it includes no LibTorch header.
//
// Requests: kind "environment" (what was linked, whether a GPU can run),
// "forward" (input.x, dtype; output y), "bandwidth" (rows, cols, repeats:
// times the float32 launcher and a device copy of the same bytes).
// A case that cannot run on a GPU answers an error starting with "not run: ",
// which the checks report as skipped, never as the learner's failure.
#include <ATen/ATen.h>
#include <torch/version.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "runner/driver_api.h"
#include "softmax_kernel.h"

#if defined(GRADER_WITH_CUDA)
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>
#endif

// Weak: a launcher softmax.cu does not define (or a softmax.cu that was not
// compiled at all, where no nvcc was found) is a null address, reported per
// case, instead of a shared object that cannot be loaded.
__attribute__((weak)) void softmax_rows_f32(const float*, float*, int64_t, int64_t, cudaStream_t);
__attribute__((weak)) void softmax_rows_f16(const __half*, __half*, int64_t, int64_t, cudaStream_t);
__attribute__((weak)) void softmax_rows_bf16(const __nv_bfloat16*, __nv_bfloat16*, int64_t, int64_t, cudaStream_t);
// Defined by the link (grader/judge/compile.cpp) when softmax.cu was not compiled for want of nvcc.
extern "C" __attribute__((weak)) const char grader_learner_not_compiled;

namespace {

using grader::wire::Record;

int launchers_defined() {
  return (softmax_rows_f32 ? 1 : 0) | (softmax_rows_f16 ? 2 : 0) | (softmax_rows_bf16 ? 4 : 0);
}

// Why no GPU case can run here (empty: one can).
std::string no_gpu(const Record& request) {
  if (&grader_learner_not_compiled != nullptr) return "softmax.cu was not compiled (no nvcc)";
  if (request.string_or("device", "cpu") != "cuda") return "the grade runs on the CPU";
#if defined(GRADER_WITH_CUDA)
  if (!at::cuda::is_available()) return "no CUDA device is visible to the runner";
  return "";
#else
  return "this LibTorch (" TORCH_VERSION ") is built without CUDA";
#endif
}

#if defined(GRADER_WITH_CUDA)

void check_cuda(cudaError_t error, const std::string& what) {
  if (error != cudaSuccess) {
    (void)cudaGetLastError();  // clear a non-sticky error for the next case
    throw std::runtime_error(what + ": " + cudaGetErrorString(error) + " (" + cudaGetErrorName(error) + ")");
  }
}

// Launches the launcher of `dtype` on x (contiguous, on the GPU) into y.
void launch(const at::Tensor& x, at::Tensor& y, cudaStream_t stream) {
  const int64_t rows = x.size(0), cols = x.size(1);
  const auto dtype = x.scalar_type();
  std::string name = dtype == at::kFloat ? "softmax_rows_f32" : dtype == at::kHalf ? "softmax_rows_f16" : "softmax_rows_bf16";
  (void)cudaGetLastError();
  if (dtype == at::kFloat) {
    if (!softmax_rows_f32) throw std::runtime_error("softmax.cu does not define " + name);
    softmax_rows_f32(x.data_ptr<float>(), y.data_ptr<float>(), rows, cols, stream);
  } else if (dtype == at::kHalf) {
    if (!softmax_rows_f16) throw std::runtime_error("softmax.cu does not define " + name);
    softmax_rows_f16(reinterpret_cast<const __half*>(x.data_ptr()), reinterpret_cast<__half*>(y.data_ptr()), rows,
                     cols, stream);
  } else {
    if (!softmax_rows_bf16) throw std::runtime_error("softmax.cu does not define " + name);
    softmax_rows_bf16(reinterpret_cast<const __nv_bfloat16*>(x.data_ptr()),
                      reinterpret_cast<__nv_bfloat16*>(y.data_ptr()), rows, cols, stream);
  }
  check_cuda(cudaGetLastError(), "the kernel launch failed in " + name);
}

void forward(const Record& request, Record& response) {
  const auto dtype = grader::wire::floating_dtype(request.string_or("dtype", "float32"));
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16,
              "exercise_softmax_cuda runs float32, float16 and bfloat16 cases, not ", dtype);
  // The launcher's contract is a contiguous row-major matrix: a non-contiguous
  // tensor is copied here, never passed on.
  auto x = request.tensor(grader::wire::key::input("x")).to(at::TensorOptions().device(at::kCUDA).dtype(dtype)).contiguous();
  TORCH_CHECK(x.dim() == 2, "input x must be (rows, cols)");
  // Poisoned: an element the kernel never writes stays NaN and shows.
  auto y = at::full_like(x, std::numeric_limits<double>::quiet_NaN());
  check_cuda(cudaDeviceSynchronize(), "before the launch");
  launch(x, y, at::cuda::getCurrentCUDAStream().stream());
  check_cuda(cudaDeviceSynchronize(), "the kernel failed while running");
  grader::driver::put_tensor(response, "y", y);
}

// Median milliseconds of `repeats` runs of `work`, after warm-up runs, timed with CUDA events.
template <typename Work>
double median_ms(Work work, int repeats, cudaStream_t stream) {
  for (int i = 0; i < 3; ++i) work();
  check_cuda(cudaStreamSynchronize(stream), "warm-up");
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    check_cuda(cudaEventRecord(start, stream), "cudaEventRecord");
    work();
    check_cuda(cudaEventRecord(stop, stream), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(stop), "the timed run");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void bandwidth(const Record& request, Record& response) {
  const int64_t rows = request.integer("rows"), cols = request.integer("cols");
  const int repeats = static_cast<int>(request.integer_or("repeats", 20));
  auto x = at::randn({rows, cols}, at::TensorOptions().device(at::kCUDA).dtype(at::kFloat));
  auto y = at::empty_like(x);
  auto stream = at::cuda::getCurrentCUDAStream().stream();
  const double kernel_ms = median_ms([&] { launch(x, y, stream); }, repeats, stream);
  check_cuda(cudaDeviceSynchronize(), "the kernel failed while running");
  const double copy_ms = median_ms([&] { y.copy_(x); }, repeats, stream);
  const double bytes = 2.0 * static_cast<double>(x.numel()) * sizeof(float);  // read once, write once
  response.reals["kernel_ms"] = kernel_ms;
  response.reals["copy_ms"] = copy_ms;
  response.reals["kernel_gb_s"] = bytes / (kernel_ms * 1e-3) / 1e9;
  response.reals["copy_gb_s"] = bytes / (copy_ms * 1e-3) / 1e9;
  response.strings["device_name"] = at::cuda::getCurrentDeviceProperties()->name;
}

#endif  // GRADER_WITH_CUDA

}  // namespace

extern "C" void grader_run_case(const Record& request, Record& response) {
  const auto kind = request.string_or("kind", "forward");
  const auto why_not = no_gpu(request);
  if (kind == "environment") {
    response.ints["launchers"] = launchers_defined();
    response.ints["learner_compiled"] = &grader_learner_not_compiled == nullptr ? 1 : 0;
    response.strings["gpu"] = why_not;
#if defined(GRADER_WITH_CUDA)
    if (why_not.empty()) response.strings["device_name"] = at::cuda::getCurrentDeviceProperties()->name;
#endif
    return;
  }
  if (!why_not.empty()) throw std::runtime_error("not run: " + why_not);
#if defined(GRADER_WITH_CUDA)
  if (kind == "bandwidth") return bandwidth(request, response);
  return forward(request, response);
#endif
}
