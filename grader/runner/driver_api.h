// The contract between the runner (grader/runner/main.cpp) and an exercise's
// driver (grader/checks/<exercise>/driver.cpp). The driver is linked with the
// learner's object file into one shared object, which the runner loads in the
// child process; the driver turns one request record into calls of the
// learner's code and fills the response record with what came back.
#pragma once

#include <ATen/record_function.h>

#include <string>

#include "wire/keys.h"
#include "wire/wire.h"

namespace grader::driver {

// Puts a learner-produced tensor into the response under `name`, with its dtype
// and device noted as "<name>.dtype" / "<name>.device". An undefined tensor is
// noted as such rather than sent, so the parent can say so.
inline void put_tensor(wire::Record& response, const std::string& name, const at::Tensor& tensor) {
  if (!tensor.defined()) {
    response.strings[name + ".dtype"] = "undefined";
    return;
  }
  response.strings[name + ".dtype"] = c10::toString(tensor.scalar_type());
  response.strings[name + ".device"] = tensor.device().str();
  auto plain = tensor.detach().to(at::kCPU);
  if (!wire::is_wire_dtype(plain.scalar_type())) plain = plain.to(at::kDouble);
  response.tensors[name] = plain.contiguous();
}

// Opened by a driver around each call of learner code (construction excluded):
// the runner's device watch looks at the operators called inside it. Its name
// comes with the request and is drawn afresh by each runner.
class ForwardScope {
 public:
  explicit ForwardScope(const wire::Record& request)
      : name_(request.string_or("forward_scope", "")), guard_(at::RecordScope::USER_SCOPE) {
    if (!name_.empty() && guard_.isActive()) guard_.before(name_.c_str());
  }
  ForwardScope(const ForwardScope&) = delete;
  ForwardScope& operator=(const ForwardScope&) = delete;

 private:
  std::string name_;
  at::RecordFunction guard_;
};

// The device a case runs on ("device" of the request; default the CPU).
inline at::Device case_device(const wire::Record& request) { return at::Device(request.string_or("device", "cpu")); }

}  // namespace grader::driver

// Exported by the driver. Exceptions propagate to the runner, which records
// them as the case's error.
extern "C" void grader_run_case(const grader::wire::Record& request, grader::wire::Record& response);
