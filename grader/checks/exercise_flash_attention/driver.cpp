// Child side of exercise_flash_attention: the learner's function on the
// parent's tensors (grader/runner/module_driver.h); the runner's operator
// trace records the largest tensor made during the call.
#include "flash_attention.h"
#include "runner/module_driver.h"

extern "C" void grader_run_case(const grader::wire::Record& request, grader::wire::Record& response) {
  grader::driver::run_function_case(request, response, [](const grader::driver::Inputs& in) {
    return flash_attention(in("query"), in("key"), in("value"), in.argument("causal") != 0,
                           in.argument("block_size"));
  });
}
