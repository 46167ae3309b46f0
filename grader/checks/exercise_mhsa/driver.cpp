// Child side of exercise_mhsa: builds the learner's module, loads the parent's
// weights into it by parameter name, runs forward (and backward) and returns
// what it produced.
//
// Request:  dim, num_heads, dropout, kind ("construct" | "forward"), and for
//           forward: x, dtype, train, param.<name> tensors, [grad_output]
// Response: parameters (names and shapes), dropout.p, missing_parameters,
//           output, [grad.x, grad.param.<name>]
#include <torch/csrc/autograd/grad_mode.h>

#include <sstream>

#include "mhsa.h"
#include "runner/driver_api.h"

namespace {

std::string describe_parameters(MultiHeadSelfAttention& module) {
  std::ostringstream out;
  for (const auto& item : module->named_parameters()) {
    out << item.key();
    for (auto size : item.value().sizes()) out << ' ' << size;
    out << '\n';
  }
  return out.str();
}

}  // namespace

extern "C" void grader_run_case(const grader::wire::Record& request, grader::wire::Record& response) {
  using grader::driver::put_tensor;
  const auto kind = request.string("kind");
  MultiHeadSelfAttention module(request.integer("dim"), request.integer("num_heads"), request.real("dropout"));
  response.ints["constructed"] = 1;
  if (kind == "construct") return;

  response.strings["parameters"] = describe_parameters(module);
  for (const auto& child : module->named_children()) {
    if (child.key() != "dropout") continue;
    if (auto dropout = std::dynamic_pointer_cast<torch::nn::DropoutImpl>(child.value())) {
      response.reals["dropout.p"] = dropout->options.p();
    }
  }

  const auto dtype = request.string("dtype") == "float32" ? at::kFloat : at::kDouble;
  module->to(dtype);
  std::string missing;
  auto parameters = module->named_parameters();
  for (const auto& [key, tensor] : request.tensors) {
    if (key.rfind("param.", 0) != 0) continue;
    auto name = key.substr(6);
    auto* target = parameters.find(name);
    if (!target || target->sizes() != tensor.sizes()) {
      missing += name + '\n';
      continue;
    }
    torch::NoGradGuard no_grad;
    target->copy_(tensor);
  }
  if (!missing.empty()) {
    response.strings["missing_parameters"] = missing;
    return;
  }

  module->train(request.integer("train") != 0);
  const bool want_grad = request.has_tensor("grad_output");
  auto x = request.tensor("x").to(dtype).clone().requires_grad_(want_grad);
  auto output = module->forward(x);
  put_tensor(response, "output", output);
  if (!want_grad) return;

  TORCH_CHECK(output.defined() && output.requires_grad(),
              "the output is not connected to the input in the autograd graph");
  TORCH_CHECK(output.sizes() == x.sizes(), "the output has shape ", output.sizes(), ", expected ", x.sizes());
  output.backward(request.tensor("grad_output").to(output.scalar_type()));
  put_tensor(response, "grad.x", x.grad());
  for (const auto& item : module->named_parameters())
    put_tensor(response, "grad.param." + item.key(), item.value().grad());
}
