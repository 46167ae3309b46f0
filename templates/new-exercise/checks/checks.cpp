// Parent side of @ID@: the trusted reference (float64) with its known
// mistakes, on the shared kit. The checks are exercise.yaml's kit kinds.
#include <ATen/ATen.h>

#include "checks/kit/kit.h"

namespace grader::@ID@ {
namespace {

// TODO the reference: the correct computation, and each mistake of
// exercise.yaml's `mistakes:` made on request.
kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  auto output = data.inputs.at("x").clone();
  for (const auto& mistake : mistakes) {
    if (mistake == "doubled") output = output * 2;
  }
  return {{"output", output}};
}

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  return std::make_unique<kit::Kit>(exercise, reference_of, std::vector<std::string>{"doubled"});
}

}  // namespace grader::@ID@
