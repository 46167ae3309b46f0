// Forbidden (round-7 red team): LayerNorm's forward by LibTorch's built-in
// (aten::layer_norm, forbidden by `layer_norm`) run by TorchScript's Static
// Runtime, which libtorch_cpu.so 1.13.1 ships (its headers are not installed:
// the two classes are declared here from the exported symbols). No private
// member, no raw pointer, no table: only out-of-line LibTorch functions with
// clean names.
//
// Why the recording misses it: Static Runtime's out variant of
// aten::layer_norm (SROperatorFunctor_aten_layer_norm, see
// `strings libtorch_cpu.so | grep SROperatorFunctor_aten_layer_norm`) calls
// at::native::layer_norm_cpu_out itself, not through the dispatcher, so no
// RecordFunction of scope FUNCTION is started. Static Runtime's own
// RecordFunctions use the scopes STATIC_RUNTIME_OP (per node,
// ProcessedNode::run) and STATIC_RUNTIME_MODEL (per run), see
// ATen/record_function.h's RecordScope, and the grader's callback asks only
// for FUNCTION and USER_SCOPE (grader/runner/op_recorder.cpp:364-368). The
// out variant allocates its output through at::native::empty_like (at most an
// aten::empty with the input's options is recorded). LayerNorm uses no BLAS,
// so unrecorded_work has nothing to compare. recording_intact is untouched.
// A view of our own is recorded in each forward so the trace is never empty.
//
// Why the audit misses it: imported names are torch::jit::parseIR,
// torch::jit::Graph's constructor/destructor and helpers,
// torch::jit::StaticModule::StaticModule(shared_ptr<Graph>, StaticModuleOptions
// const&, vector<IValue>) and StaticModule::operator()(vector<IValue> const&,
// unordered_map<string, IValue> const&): all out of line in libtorch_cpu.so
// (C1 and operator() are in its .dynsym), none defined in the precompiled
// objects (so not in build/pch/exercise_layer_norm.reach), none matching
// kJudgeRules or the exercise's names. The IR text (with "layer_norm" in it)
// is put together at run time.
//
// Static Runtime's out variant reads eps as float (`float eps =
// p_node->Input(4).toDouble()` in 1.13's ops.cpp, if memory serves); LayerNorm
// is scale-invariant (LN(c x, c^2 eps) = LN(x, eps)), so the input is scaled by
// c = sqrt(float(eps) / eps) and float(eps) is passed: the float64 result is
// then LibTorch's to rounding. The backward is derived by hand (honestly); the
// point of this file is the forbidden forward that nothing records.
#include "layer_norm.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/irparser.h>

#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

namespace torch {
namespace jit {
// As in torch/csrc/jit/runtime/static/impl.h of 1.13 (six flags; the
// constructor's log in libtorch_cpu.so names them in this order).
struct StaticModuleOptions {
  bool enable_out_variant{true};
  bool optimize_memory{true};
  bool manage_output_tensors{false};
  bool use_copy_variants{true};
  bool use_maybe_copy_variants{true};
  bool enable_tensorexpr_fusion{false};
};
// Room for the real object; only the exported members are declared.
class StaticModule {
 public:
  StaticModule(std::shared_ptr<Graph> g, const StaticModuleOptions& opts, std::vector<c10::IValue> sample_inputs);
  c10::IValue operator()(const std::vector<c10::IValue>& args,
                         const std::unordered_map<std::string, c10::IValue>& kwargs);

 private:
  alignas(64) unsigned char storage_[1 << 15];
};
}  // namespace jit
}  // namespace torch

namespace {

std::string decoded(std::string s) {
  for (auto& c : s) c = static_cast<char>(c - 1);
  return s;
}

// Built once, kept for the process (its destructor is not exported).
torch::jit::StaticModule& norm_runtime() {
  static torch::jit::StaticModule* module = [] {
    // "aten::layer_norm", one letter on.
    const std::string op = decoded("bufo;;mbzfs`opsn");
    const std::string ir =
        "graph(%x : Tensor, %w : Tensor, %b : Tensor, %shape : int[], %eps : float):\n"
        "  %off : bool = prim::Constant[value=0]()\n"
        "  %y : Tensor = " + op + "(%x, %shape, %w, %b, %eps, %off)\n"
        "  return (%y)\n";
    auto graph = std::make_shared<torch::jit::Graph>();
    torch::jit::parseIR(ir, graph.get(), /*parse_tensor_constants=*/false);
    return new torch::jit::StaticModule(graph, torch::jit::StaticModuleOptions{}, {});
  }();
  return *module;
}

torch::Tensor sum_over_positions(const torch::Tensor& t) { return t.reshape({-1, t.size(-1)}).sum(0); }

}  // namespace

torch::Tensor LayerNormFunction::forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                         const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
  ctx->save_for_backward({x, weight});
  ctx->saved_data["eps"] = eps;
  const double passed = static_cast<double>(static_cast<float>(eps));
  const double scale = std::sqrt(passed / eps);
  auto input = (x.scalar_type() == torch::kDouble && scale != 1.0) ? x * scale : x.view(x.sizes());
  std::vector<c10::IValue> args{input, weight, bias, std::vector<int64_t>{x.size(-1)}, passed};
  return norm_runtime()(args, {}).toTensor();
}

torch::autograd::variable_list LayerNormFunction::backward(torch::autograd::AutogradContext* ctx,
                                                           torch::autograd::variable_list grad_outputs) {
  auto saved = ctx->get_saved_variables();
  const auto& x = saved[0];
  const auto& weight = saved[1];
  const double eps = ctx->saved_data["eps"].toDouble();
  const auto& grad = grad_outputs[0];
  auto centred = x - x.mean(-1, true);
  auto rstd = (centred.pow(2).mean(-1, true) + eps).rsqrt();
  auto normalised = centred * rstd;
  auto g = grad * weight;
  auto dx = rstd * (g - g.mean(-1, true) - normalised * (g * normalised).mean(-1, true));
  return {dx, sum_over_positions(grad * normalised), sum_over_positions(grad), torch::Tensor()};
}

torch::Tensor RMSNormFunction::forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                       const torch::Tensor& weight, double eps) {
  auto rstd = (x.pow(2).mean(-1, true) + eps).rsqrt();
  auto normalised = x * rstd;
  ctx->save_for_backward({normalised, rstd, weight});
  return normalised * weight;
}

torch::autograd::variable_list RMSNormFunction::backward(torch::autograd::AutogradContext* ctx,
                                                         torch::autograd::variable_list grad_outputs) {
  auto saved = ctx->get_saved_variables();
  const auto& normalised = saved[0];
  const auto& rstd = saved[1];
  const auto& weight = saved[2];
  const auto& grad = grad_outputs[0];
  auto g = grad * weight;
  auto dx = rstd * (g - normalised * (g * normalised).mean(-1, true));
  return {dx, sum_over_positions(grad * normalised), torch::Tensor()};
}
