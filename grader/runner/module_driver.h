// The child side of a kit exercise (grader/checks/kit/): one function runs a
// case for any module or function, so an exercise's driver.cpp is a few lines
// that say how to construct the learner's module and how to call forward.
//
// Request (planned by kit::ModuleKit): kind ("construct" | "forward" |
//   "speed": grader/runner/speed_timer.h, planned by grader/report/speed.h),
//   ctor.<argument> (ints or reals), arg.<argument> (a function's ints), dtype, train, input.<name>,
//   param.<name>, [grad_output.<output>], [dropout_p: "<path> <p>" lines]
// Response: constructed, parameters (names and shapes), shared_parameters
//   (one line "name other" for each parameter that is the very tensor of an
//   earlier one: one module registered twice), missing_parameters,
//   inputs_modified (the inputs a learner call changed in place, a line each),
//   dropouts (path and p of every Dropout), dropout_p_missing, buffers (name, dtype after the
//   module's .to(dtype), requires_grad, shape), <output> tensors,
//   [grad.input.<name>, grad.param.<name>]
#pragma once

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/dropout.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "runner/driver_api.h"
#include "wire/fields.h"
#include "runner/speed_timer.h"

namespace grader::driver {

// The case's inputs, as the learner's forward receives them: private copies in
// the case's dtype (masks keep theirs), requiring gradients when asked. An
// input the case leaves out is an undefined tensor (e.g. "no mask").
class Inputs {
 public:
  Inputs(const wire::Record& request, at::ScalarType dtype, bool want_grad) {
    const auto device = case_device(request);
    for (const auto& [key, value] : request.ints) {
      if (auto name = wire::key::arg_name(key)) arguments_.emplace_back(std::move(*name), value);
    }
    for (const auto& [key, tensor] : request.tensors) {
      const auto name = wire::key::input_name(key);
      if (!name) continue;
      auto copy = tensor.to(device, /*non_blocking=*/false, /*copy=*/true);
      if (copy.is_floating_point()) {
        copy = copy.to(dtype);
        if (want_grad) copy.requires_grad_(true);
      }
      tensors_.emplace_back(*name, copy);
    }
  }
  // Tensors used as they are (the speed run's fresh inputs, already on the device).
  explicit Inputs(std::vector<std::pair<std::string, at::Tensor>> tensors) : tensors_(std::move(tensors)) {}
  const at::Tensor& operator()(const std::string& name) const {
    for (const auto& [key, tensor] : tensors_) {
      if (key == name) return tensor;
    }
    return undefined_;
  }
  const std::vector<std::pair<std::string, at::Tensor>>& all() const { return tensors_; }
  // An integer argument of the signature's `arguments:` (a position offset, say).
  int64_t argument(const std::string& name) const {
    for (const auto& [key, value] : arguments_) {
      if (key == name) return value;
    }
    TORCH_CHECK(false, "the grader sent no argument '", name, "' (exercise.yaml's signature.arguments)");
  }

 private:
  std::vector<std::pair<std::string, at::Tensor>> tensors_;
  std::vector<std::pair<std::string, int64_t>> arguments_;
  at::Tensor undefined_;
};

// What the inputs held before a learner call, to tell whether the call
// changed one in place (x.sub_(mean) on the caller's tensor): the caller's
// data must come back as it went in.
class InputsKept {
 public:
  explicit InputsKept(const Inputs& inputs) {
    for (const auto& [name, tensor] : inputs.all()) {
      if (tensor.defined()) kept_.emplace_back(name, tensor.detach().clone());
    }
  }
  // Writes the names of the inputs whose values changed ("inputs_modified",
  // one per line), if any did.
  void report_changes(const Inputs& inputs, wire::Record& response) const {
    std::string changed;
    for (const auto& [name, before] : kept_) {
      const auto now = inputs(name).defined() ? inputs(name).detach() : at::Tensor();
      // Equal element by element, a NaN kept where it was counting as equal.
      const bool same = now.defined() && now.sizes() == before.sizes() && now.scalar_type() == before.scalar_type() &&
                        (at::equal(now, before) ||
                         (before.is_floating_point() &&
                          ((now == before) | (at::isnan(now) & at::isnan(before))).all().item<bool>()));
      if (!same) changed += name + '\n';
    }
    if (!changed.empty()) response.strings["inputs_modified"] = changed;
  }

 private:
  std::vector<std::pair<std::string, at::Tensor>> kept_;
};

inline at::ScalarType case_dtype(const wire::Record& request) {
  return wire::floating_dtype(request.string_or("dtype", "float64"));
}

// The outputs a forward returned, in the order of the exercise's signature.
using Outputs = std::vector<std::pair<std::string, at::Tensor>>;
inline Outputs outputs_of(const std::vector<std::string>& names, const at::Tensor& tensor) {
  return {{names.at(0), tensor}};
}
template <typename... T>
Outputs outputs_of(const std::vector<std::string>& names, const std::tuple<T...>& tuple) {
  Outputs out;
  std::apply([&](const auto&... tensors) { (out.emplace_back(names.at(out.size()), tensors), ...); }, tuple);
  return out;
}

// What a forward returned, as a list (the speed run's view).
inline std::vector<at::Tensor> tensors_of(const at::Tensor& tensor) { return {tensor}; }
template <typename... T>
std::vector<at::Tensor> tensors_of(const std::tuple<T...>& tuple) {
  std::vector<at::Tensor> out;
  std::apply([&](const auto&... tensors) { (out.push_back(tensors), ...); }, tuple);
  return out;
}

inline std::vector<std::string> output_names(const wire::Record& request) {
  std::vector<std::string> names;
  std::istringstream lines(request.string("outputs"));
  for (std::string name; std::getline(lines, name);) names.push_back(name);
  return names;
}

// Backward through the first output with the parent's grad_output, then the
// gradients of every floating input and of `parameters` (none when the output
// is not connected to the autograd graph).
inline void backward_and_report(const wire::Record& request, wire::Record& response, const Outputs& outputs,
                                const Inputs& inputs,
                                const std::vector<std::pair<std::string, at::Tensor>>& parameters,
                                bool learners_backward = false) {
  const auto& [name, output] = outputs.front();
  const auto& grad_output = request.tensor("grad_output");
  // An output cut from the graph (a NoGradGuard in forward) has no gradients:
  // the parent says so; the forward results stand.
  if (!output.defined() || !output.requires_grad()) return;
  TORCH_CHECK(output.sizes() == grad_output.sizes(), "the ", name, " has shape ", output.sizes(), ", expected ",
              grad_output.sizes());
  if (learners_backward) {
    // A backward the learner wrote (a custom autograd Function) is traced like
    // forward: what it makes on a fixed device, reads back or calls is theirs.
    // (torch::autograd::backward, not Tensor::backward: the latter is the
    // operator aten::_backward, under which the learner's calls would sit a
    // level deeper than the trace watches.)
    const auto grad = grad_output.to(output.device(), output.scalar_type());
    ForwardScope scope(request);
    torch::autograd::backward({output}, {grad});
  } else {
    output.backward(grad_output.to(output.device(), output.scalar_type()));
  }
  for (const auto& [key, tensor] : inputs.all()) {
    if (tensor.is_floating_point()) put_tensor(response, wire::key::grad_input(key), tensor.grad());
  }
  for (const auto& [key, tensor] : parameters) put_tensor(response, wire::key::grad_param(key), tensor.grad());
}

// A dropout-site case (kit kind dropout_sites) fixes the p of registered
// Dropout modules (or a MultiheadAttention's own dropout): "dropout_p" holds
// lines of fields "<path> <p>" (wire/fields.h: a path is the learner's text).
// A path that is neither is reported in "dropout_p_missing", one line each.
inline void set_dropouts(const wire::Record& request, wire::Record& response, torch::nn::Module& module) {
  std::string missing;
  auto modules = module.named_modules();
  for (const auto& line : wire::field_lines(request.string_or("dropout_p", ""))) {
    const auto p = line.size() == 2 ? wire::number_field(line[1]) : std::nullopt;
    if (!p) continue;
    const auto& path = line[0];
    auto* found = modules.find(path);
    auto dropout = found ? std::dynamic_pointer_cast<torch::nn::DropoutImpl>(*found) : nullptr;
    auto attention = found ? std::dynamic_pointer_cast<torch::nn::MultiheadAttentionImpl>(*found) : nullptr;
    if (dropout) {
      dropout->options.p(*p);
    } else if (attention) {
      attention->options.dropout(*p);  // its own dropout on the attention weights
    } else {
      missing += wire::fields_line({path});
    }
  }
  if (!missing.empty()) response.strings["dropout_p_missing"] = missing;
}

// Reports what the constructed module registered (parameters, shared ones,
// dropouts), moves it to the case's device and dtype, loads the case's
// parameters by name and sets the mode. False when a parameter could not be
// loaded (reported as missing_parameters): the case goes no further.
// The names are the learner's text: every list below is lines of fields
// (wire/fields.h), names escaped, so no name reads as another field.
template <typename Module>
bool prepare_module(const wire::Record& request, wire::Record& response, Module& module) {
  std::string names, dropouts, shared;
  std::vector<std::pair<const void*, std::string>> seen;
  for (const auto& item : module->named_parameters()) {
    std::vector<std::string> fields = {item.key()};
    for (auto size : item.value().sizes()) fields.push_back(std::to_string(size));
    names += wire::fields_line(fields);
    const void* impl = item.value().unsafeGetTensorImpl();
    for (const auto& [other, name] : seen) {
      if (other == impl) {
        shared += wire::fields_line({item.key(), name});
        break;
      }
    }
    seen.emplace_back(impl, item.key());
  }
  response.strings["parameters"] = names;
  response.strings["shared_parameters"] = shared;
  for (const auto& item : module->named_modules()) {
    if (auto dropout = std::dynamic_pointer_cast<torch::nn::DropoutImpl>(item.value())) {
      char p[32];
      std::snprintf(p, sizeof p, "%.17g", dropout->options.p());
      dropouts += wire::fields_line({item.key().empty() ? "(the module itself)" : item.key(), p});
    }
  }
  response.strings["dropouts"] = dropouts;

  // A case of the module as built (as_built) moves it to the device only: the
  // dtypes its constructor chose stay, as in a user's code.
  if (request.integer_or("as_built", 0) != 0) {
    module->to(case_device(request));
  } else {
    module->to(case_device(request), case_dtype(request));
  }
  std::string missing;
  auto parameters = module->named_parameters();
  for (const auto& [key, tensor] : request.tensors) {
    const auto found = wire::key::param_name(key);
    if (!found) continue;
    const auto& name = *found;
    auto* target = parameters.find(name);
    if (!target || target->sizes() != tensor.sizes()) {
      missing += wire::fields_line({name});
      continue;
    }
    torch::NoGradGuard no_grad;
    target->copy_(tensor);
  }
  if (!missing.empty()) {
    response.strings["missing_parameters"] = missing;
    return false;
  }
  // Registered buffers as .to(dtype) left them: "name dtype requires_grad size...".
  std::string buffers;
  for (const auto& item : module->named_buffers()) {
    std::vector<std::string> fields = {item.key(), c10::toString(item.value().scalar_type()),
                                       item.value().requires_grad() ? "1" : "0"};
    for (auto size : item.value().sizes()) fields.push_back(std::to_string(size));
    buffers += wire::fields_line(fields);
  }
  response.strings["buffers"] = buffers;
  module->train(request.integer_or("train", 0) != 0);
  set_dropouts(request, response, *module);
  return true;
}

// Runs one case against a module: `make()` constructs it from the request's
// ctor.* values, `forward(module, inputs)` calls it and returns a tensor or a
// tuple of tensors.
template <typename Make, typename Forward>
void run_module_case(const wire::Record& request, wire::Record& response, Make make, Forward forward) {
  auto module = make();
  response.ints["constructed"] = 1;
  if (request.string("kind") == "construct") return;
  if (request.string("kind") == "speed") {
    module->to(case_device(request), at::kFloat);
    module->eval();
    return speed::time_forward(
        request, response, [&](const speed::Tensors& tensors) { return tensors_of(forward(module, Inputs(tensors))); });
  }
  if (!prepare_module(request, response, module)) return;
  const bool want_grad = request.has_tensor("grad_output");
  Inputs inputs(request, case_dtype(request), want_grad);
  const InputsKept kept(inputs);
  Outputs outputs;
  {
    ForwardScope scope(request);
    outputs = outputs_of(output_names(request), forward(module, inputs));
  }
  kept.report_changes(inputs, response);
  for (const auto& [name, tensor] : outputs) put_tensor(response, name, tensor);
  if (!want_grad) return;
  // The gradients of the parameters the case loaded, by the grader's names:
  // one the learner added beyond them has a name of the learner's, of any
  // length, which no reply key may carry (wire.cpp's limits).
  std::vector<std::pair<std::string, at::Tensor>> params;
  auto named = module->named_parameters();
  for (const auto& [key, tensor] : request.tensors) {
    const auto name = wire::key::param_name(key);
    if (!name) continue;
    if (auto* found = named.find(*name)) params.emplace_back(*name, *found);
  }
  backward_and_report(request, response, outputs, inputs, params);
}

// A multi-step case (a decoder fed its tokens over several calls): each call
// of learner code goes through step(), which opens the forward scope around it
// alone, so the runner's trace counts the work of every call separately
// (scope_macs), and notes the call's label in the response's "calls", one
// line per call in the same order.
class Steps {
 public:
  Steps(const wire::Record& request, wire::Record& response) : request_(request), response_(response) {}
  template <typename Call>
  auto step(const std::string& label, Call call) {
    response_.strings["calls"] += label + '\n';
    ForwardScope scope(request_);
    return call();
  }

 private:
  const wire::Record& request_;
  wire::Record& response_;
};

// Runs a multi-step case: `make()` as above; `steps(module, inputs, Steps&)`
// makes its learner calls through Steps::step and returns the case's outputs
// (a tensor or a tuple), assembled from the calls. No gradients are taken.
template <typename Make, typename Run>
void run_module_steps(const wire::Record& request, wire::Record& response, Make make, Run run) {
  auto module = make();
  response.ints["constructed"] = 1;
  if (request.string("kind") == "construct") return;
  TORCH_CHECK(request.string("kind") == "forward", "a multi-step case has no '", request.string("kind"), "' run");
  if (!prepare_module(request, response, module)) return;
  Inputs inputs(request, case_dtype(request), /*want_grad=*/false);
  const InputsKept kept(inputs);
  Steps steps(request, response);
  const auto outputs = outputs_of(output_names(request), run(module, inputs, steps));
  kept.report_changes(inputs, response);
  for (const auto& [name, tensor] : outputs) put_tensor(response, name, tensor);
}

// The same for a free function: `call(inputs)` returns a tensor or a tuple.
template <typename Call>
void run_function_case(const wire::Record& request, wire::Record& response, Call call, bool learners_backward = false) {
  response.ints["constructed"] = 1;
  if (request.string("kind") == "speed") {
    return speed::time_forward(request, response,
                               [&](const speed::Tensors& tensors) { return tensors_of(call(Inputs(tensors))); });
  }
  const bool want_grad = request.has_tensor("grad_output");
  Inputs inputs(request, case_dtype(request), want_grad);
  const InputsKept kept(inputs);
  Outputs outputs;
  {
    ForwardScope scope(request);
    outputs = outputs_of(output_names(request), call(inputs));
  }
  kept.report_changes(inputs, response);
  for (const auto& [name, tensor] : outputs) put_tensor(response, name, tensor);
  if (want_grad) backward_and_report(request, response, outputs, inputs, {}, learners_backward);
}

}  // namespace grader::driver
