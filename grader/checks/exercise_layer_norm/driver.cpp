// Child side of exercise_layer_norm: the kit's driver calling the learner's
// Functions (grader/runner/module_driver.h). The arguments: rms (1: RMSNorm,
// 0: LayerNorm) and eps_exponent (eps = 10^-eps_exponent).
#include <cmath>

#include "layer_norm.h"
#include "runner/module_driver.h"

extern "C" void grader_run_case(const grader::wire::Record& request, grader::wire::Record& response) {
  grader::driver::run_function_case(request, response, [](const grader::driver::Inputs& in) {
    const double eps = std::pow(10.0, -static_cast<double>(in.argument("eps_exponent")));
    if (in.argument("rms") != 0) return RMSNormFunction::apply(in("x"), in("weight"), eps);
    return LayerNormFunction::apply(in("x"), in("weight"), in("bias"), eps);
  }, /*learners_backward=*/true);
}
