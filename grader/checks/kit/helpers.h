// Small helpers the kit's files share (helpers.cpp); not for exercise code.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

#include "checks/kit/kit.h"

namespace grader::kit {

// A check option that is a comma-separated list ("dropout, layers.{L}.dropout"), each item trimmed.
std::vector<std::string> option_list(const CheckSpec& spec, const std::string& key, const std::string& fallback);
std::vector<std::string> split_lines(const std::string& text);
// Every constructor argument travels as a real; a whole number also as an
// integer, so drivers read each argument with the type the module takes.
void put_constructor_argument(wire::Record& record, const std::string& name, double value);
at::ScalarType dtype_of(const std::string& name);
// The mask of one case: undefined for "none"; else broadcastable to (B, H, Nq, Nk).
at::Tensor make_mask(const CaseSpec& spec, const TensorSpec& input, const Dims& d, at::Generator& generator);
std::string mask_text(const CaseSpec& spec, const TensorSpec& input);
std::vector<int64_t> shape_of(const TensorSpec& spec, const Dims& dims);
// Equal within a relative 1e-4: measured values are float64 and exact enough.
bool near(double a, double b);
// Four decimals where they show the value; significant digits where they
// would not (a fill of -1e-9 is not "-0.0000").
std::string number(double value);
// Evaluates "lhs op rhs" for a case: dims and traits by name, else literals.
bool feature_holds(const std::string& when, const CaseSpec& spec);
// A name with one "{X}" ("layers.{L}.linear1.weight"): what comes before and
// after it, and how many indices X stands for in `dims`; nothing for a plain name.
struct NameTemplate {
  std::string before, after;
  int64_t count = 0;
};
std::optional<NameTemplate> name_template(const std::string& name, const Dims& dims);
// The inputs the learner's call changed in place, named ("'x'", "'x' and
// 'mask'"), as the driver saw them (module_driver.h: InputsKept); nothing
// when none changed.
std::optional<std::string> modified_inputs(const CaseRun& run);

}  // namespace grader::kit
