// The child side of the speed run (grader/report/speed.h plans it, only on a GPU):
// times the learner's forward against the same attention written in plain
// LibTorch operations ("unfused", what the reference computes) and against
// LibTorch's fused scaled_dot_product_attention, at each planned size.
//
// Each trial gets fresh random inputs (a cached output cannot win) and runs
// after a 256 MB write that evicts the GPU's L2 cache; the first trials are
// warm-up; CUDA events time each trial where this LibTorch's c10::Event can
// (else the host clock around a stream synchronisation: the response says
// which). The same run measures the device's copy bandwidth and matmul rate,
// the yardsticks the parent uses to call a result physically impossible.
// Nothing here judges: the response carries numbers and facts only.
//
// Request: kind "speed", device, speed.baseline ("attention": inputs query,
//   key, value (B, H, N, d); "self_attention": input x (B, N, D), heads
//   speed.heads), speed.causal, speed.sizes, speed.<i>.shape.<input>
//   ("1 16 8192 64"), speed.warmup, speed.trials
// Response: speed.device_name, speed.method, speed.copy_gb_s,
//   speed.matmul_tflops, and per size speed.<i>.{learner,unfused,fused}_ms
//   (medians), .{learner,unfused,fused}_peak_mb (memory allocated beyond the
//   inputs during one forward), .input_bytes, .output_bytes (what the learner
//   returned), .same_output (two trials on different inputs returned equal
//   outputs), .max_error (the learner's first output against the fused one,
//   relative to its largest value; attention baseline only), .error (the
//   learner's code failed), .baseline_error (the grader's baselines failed)
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "wire/wire.h"

#if defined(GRADER_WITH_CUDA)
#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/version.h>
#if __has_include(<cuda_runtime_api.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#define GRADER_SPEED_CUDA_API 1
#endif
#endif

namespace grader::driver::speed {

using Tensors = std::vector<std::pair<std::string, at::Tensor>>;
// The learner's forward on the given inputs, returning its outputs in order.
using Forward = std::function<std::vector<at::Tensor>(const Tensors&)>;

#if defined(GRADER_WITH_CUDA)

// elapsedTime arrived in c10::Event after LibTorch 2.0: used where it exists.
template <typename E>
auto event_ms(const E& start, const E& stop, int) -> decltype(start.elapsedTime(stop)) {
  return start.elapsedTime(stop);
}
template <typename E>
double event_ms(const E&, const E&, long) {
  return -1;  // no event timing in this LibTorch
}
template <typename E>
constexpr auto has_event_timing(int) -> decltype(std::declval<const E&>().elapsedTime(std::declval<const E&>()), true) {
  return true;
}
template <typename E>
constexpr bool has_event_timing(long) {
  return false;
}

class Timer {
 public:
  explicit Timer(const at::Device& device)
      : device_(device), stream_(c10::impl::VirtualGuardImpl(device.type()).getStream(device)) {}

  // Milliseconds of one call of `work`.
  template <typename Work>
  double time(Work&& work) {
    if constexpr (has_event_timing<c10::Event>(0)) {
      c10::Event start(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
      c10::Event stop(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
      start.record(stream_);
      work();
      stop.record(stream_);
      stream_.synchronize();
      return event_ms(start, stop, 0);
    } else {
      stream_.synchronize();
      const auto begin = std::chrono::steady_clock::now();
      work();
      stream_.synchronize();
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
    }
  }
  static const char* method() {
    return has_event_timing<c10::Event>(0) ? "CUDA events" : "host clock around a stream synchronisation";
  }
  void synchronize() { stream_.synchronize(); }

 private:
  at::Device device_;
  c10::Stream stream_;
};

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

// Memory the caching allocator handed out beyond what was allocated before
// `work` ran (peak during it), in MB; -1 where this build cannot tell.
template <typename Work>
double peak_extra_mb(const at::Device& device, Timer& timer, Work&& work) {
#if defined(GRADER_SPEED_CUDA_API)
  namespace alloc = c10::cuda::CUDACachingAllocator;
  const auto index = static_cast<c10::DeviceIndex>(device.index() < 0 ? 0 : device.index());
  constexpr size_t all = 0;  // StatType::AGGREGATE (where the enum lives moved between versions)
  timer.synchronize();
  const auto before = alloc::getDeviceStats(index).allocated_bytes[all].current;
  alloc::resetPeakStats(index);
  work();
  timer.synchronize();
  const auto peak = alloc::getDeviceStats(index).allocated_bytes[all].peak;
  return static_cast<double>(peak - before) / (1024.0 * 1024.0);
#else
  (void)device;
  timer.synchronize();
  work();
  timer.synchronize();
  return -1;
#endif
}

inline std::string device_name(const at::Device& device) {
#if defined(GRADER_SPEED_CUDA_API)
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, device.index() < 0 ? 0 : device.index()) == cudaSuccess)
    return properties.name;
#endif
  return device.str();
}

inline std::vector<int64_t> shape_of(const std::string& text) {
  std::vector<int64_t> shape;
  size_t at = 0;
  while (at < text.size()) {
    size_t used = 0;
    shape.push_back(std::stoll(text.substr(at), &used));
    at += used;
  }
  return shape;
}

// The attention the reference computes, in plain operations; `fused` uses
// LibTorch's scaled_dot_product_attention instead (LibTorch 2.x).
inline std::vector<at::Tensor> attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal,
                                         bool fused) {
  if (fused) {
#if TORCH_VERSION_MAJOR >= 2
    return {at::scaled_dot_product_attention(q, k, v, {}, 0.0, causal)};
#else
    throw std::runtime_error("this LibTorch has no scaled_dot_product_attention");
#endif
  }
  auto scores = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (causal) {
    auto later = at::ones({q.size(-2), k.size(-2)}, q.options().dtype(at::kBool)).triu(1);
    scores = scores.masked_fill(later, -std::numeric_limits<double>::infinity());
  }
  auto weights = at::softmax(scores, -1);
  return {at::matmul(weights, v), weights};
}

// Multi-head self-attention on x (B, N, D) with `heads` heads and the given
// projection weights (w_in (3D, D), b_in, w_out (D, D), b_out).
inline std::vector<at::Tensor> self_attention(const at::Tensor& x, int64_t heads, const Tensors& weights, bool causal,
                                              bool fused) {
  const auto B = x.size(0), N = x.size(1), D = x.size(2);
  auto qkv = at::linear(x, weights[0].second, weights[1].second).chunk(3, -1);
  auto split = [&](const at::Tensor& t) { return t.view({B, N, heads, D / heads}).transpose(1, 2); };
  auto out = attention(split(qkv[0]), split(qkv[1]), split(qkv[2]), causal, fused);
  auto merged = out[0].transpose(1, 2).reshape({B, N, D});
  return {at::linear(merged, weights[2].second, weights[3].second)};
}

inline double bytes_of(const std::vector<at::Tensor>& tensors) {
  double bytes = 0;
  for (const auto& t : tensors) {
    if (t.defined()) bytes += static_cast<double>(t.numel()) * static_cast<double>(t.element_size());
  }
  return bytes;
}

inline void time_forward(const wire::Record& request, wire::Record& response, const Forward& learner) {
  const at::Device device(request.string_or("device", "cpu"));
  if (!device.is_cuda()) throw std::runtime_error("not run: the speed run times the GPU only");
  torch::NoGradGuard no_grad;
  Timer timer(device);
  const auto options = at::TensorOptions().device(device).dtype(at::kFloat);
  const int warmup = static_cast<int>(request.integer_or("speed.warmup", 2));
  const int trials = static_cast<int>(request.integer_or("speed.trials", 7));
  const auto baseline = request.string("speed.baseline");
  const bool causal = request.integer_or("speed.causal", 0) != 0;
  response.strings["speed.device_name"] = device_name(device);
  response.strings["speed.method"] = Timer::method();

  // 256 MB written between trials: larger than any GPU's L2 cache.
  auto flush = at::empty({64 << 20}, options);
  auto repeat = [&](int times, auto&& prepare, auto&& work) {
    std::vector<double> ms;
    for (int i = 0; i < warmup + times; ++i) {
      prepare(i);
      flush.fill_(static_cast<double>(i));
      const double t = timer.time(work);
      if (i >= warmup) ms.push_back(t);
    }
    return median(ms);
  };
  // Yardsticks: a device copy of 1 GB (read and write) and a large matmul, in
  // true float32 whatever learner code (a static initialiser) switched on.
  at::globalContext().setAllowTF32CuBLAS(false);
  {
    auto from = at::randn({256 << 20}, options), to = at::empty_like(from);
    const double ms = repeat(
        5, [](int) {}, [&] { to.copy_(from); });
    response.reals["speed.copy_gb_s"] = 2.0 * bytes_of({from}) / (ms * 1e-3) / 1e9;
    auto a = at::randn({8192, 8192}, options), b = at::randn({8192, 8192}, options);
    const double mm = repeat(
        3, [](int) {}, [&] { (void)at::matmul(a, b); });
    response.reals["speed.matmul_tflops"] = 2.0 * 8192.0 * 8192.0 * 8192.0 / (mm * 1e-3) / 1e12;
  }

  const auto sizes = request.integer("speed.sizes");
  for (int64_t s = 0; s < sizes; ++s) {
    const auto key = "speed." + std::to_string(s) + ".";
    std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
    for (const auto& [name, text] : request.strings) {
      if (name.rfind(key + "shape.", 0) == 0) shapes.emplace_back(name.substr(key.size() + 6), shape_of(text));
    }
    Tensors weights;  // the self-attention baseline's projections
    if (baseline == "self_attention") {
      const auto D = shapes.front().second.back();
      const double bound = 1.0 / std::sqrt(static_cast<double>(D));
      weights = {{"w_in", at::empty({3 * D, D}, options).uniform_(-bound, bound)},
                 {"b_in", at::zeros({3 * D}, options)},
                 {"w_out", at::empty({D, D}, options).uniform_(-bound, bound)},
                 {"b_out", at::zeros({D}, options)}};
    }
    try {
      // The learner's forward gets `inputs` (and may change them in place);
      // the baselines and the comparison read `pristine`, copies made before.
      Tensors inputs, pristine;
      std::vector<at::Tensor> out;
      at::Tensor previous;  // the first output of the trial before, copied
      auto fresh = [&](int) {
        previous = out.empty() || !out[0].defined() ? at::Tensor() : out[0].clone();
        out.clear();
        inputs.clear();
        pristine.clear();
        for (const auto& [name, shape] : shapes) {
          inputs.emplace_back(name, at::randn(shape, options));
          pristine.emplace_back(name, inputs.back().second.clone());
        }
      };
      auto input = [&](const std::string& name) {
        for (const auto& [n, t] : pristine) {
          if (n == name) return t;
        }
        throw std::runtime_error("the speed run has no input " + name);
      };
      auto ours = [&](bool fused) {
        if (baseline == "self_attention")
          return self_attention(input(shapes.front().first), request.integer("speed.heads"), weights, causal, fused);
        return attention(input("query"), input("key"), input("value"), causal, fused);
      };

      bool same_output = false;
      response.reals[key + "learner_ms"] = repeat(trials, fresh, [&] { out = learner(inputs); });
      // A forward that gives back what it gave for other inputs is no forward.
      timer.synchronize();
      if (!out.empty() && out[0].defined() && previous.defined() && out[0].sizes() == previous.sizes())
        same_output = at::equal(out[0], previous.to(out[0].device()));
      response.ints[key + "same_output"] = same_output ? 1 : 0;
      double input_bytes = 0;
      for (const auto& [name, tensor] : inputs) input_bytes += bytes_of({tensor});
      response.reals[key + "input_bytes"] = input_bytes;
      response.reals[key + "output_bytes"] = bytes_of(out);
      if (baseline == "attention" && !out.empty() && out[0].defined()) {
        auto expected = ours(TORCH_VERSION_MAJOR >= 2)[0];
        if (out[0].sizes() == expected.sizes()) {
          const double scale = std::max(expected.abs().max().item<double>(), 1e-30);
          response.reals[key + "max_error"] = (out[0].to(at::kFloat) - expected).abs().max().item<double>() / scale;
        }
      }
      out.clear();
      previous = at::Tensor();
      response.reals[key + "learner_peak_mb"] = peak_extra_mb(device, timer, [&] { (void)learner(inputs); });
    } catch (const c10::Error& error) {
      response.strings[key + "error"] = error.what_without_backtrace();
      continue;
    } catch (const std::exception& error) {
      response.strings[key + "error"] = error.what();
      continue;
    }
    // The baselines: their failures are the grader's, reported as such.
    try {
      Tensors pristine;
      for (const auto& [name, shape] : shapes) pristine.emplace_back(name, at::randn(shape, options));
      auto fresh = [&](int) {
        for (auto& entry : pristine) entry.second.normal_();
      };
      auto input = [&](const std::string& name) {
        for (const auto& [n, t] : pristine) {
          if (n == name) return t;
        }
        throw std::runtime_error("the speed run has no input " + name);
      };
      auto ours = [&](bool fused) {
        if (baseline == "self_attention")
          return self_attention(input(shapes.front().first), request.integer("speed.heads"), weights, causal, fused);
        return attention(input("query"), input("key"), input("value"), causal, fused);
      };
      response.reals[key + "unfused_ms"] = repeat(trials, fresh, [&] { (void)ours(false); });
      response.reals[key + "unfused_peak_mb"] = peak_extra_mb(device, timer, [&] { (void)ours(false); });
#if TORCH_VERSION_MAJOR >= 2
      response.reals[key + "fused_ms"] = repeat(trials, fresh, [&] { (void)ours(true); });
      response.reals[key + "fused_peak_mb"] = peak_extra_mb(device, timer, [&] { (void)ours(true); });
#endif
    } catch (const c10::Error& error) {
      response.strings[key + "baseline_error"] = error.what_without_backtrace();
    } catch (const std::exception& error) {
      response.strings[key + "baseline_error"] = error.what();
    }
  }
}

#else  // no CUDA in this LibTorch

inline void time_forward(const wire::Record&, wire::Record&, const Forward&) {
  throw std::runtime_error("not run: this LibTorch is built without CUDA, and the speed run times the GPU only");
}

#endif

}  // namespace grader::driver::speed
