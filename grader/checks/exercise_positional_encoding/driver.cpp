// Child side of exercise_positional_encoding: the kit's module driver, told
// how to build the learner's module and how to call its forward.
#include "positional_encoding.h"
#include "runner/module_driver.h"

extern "C" void grader_run_case(const grader::wire::Record& request, grader::wire::Record& response) {
  grader::driver::run_module_case(
      request, response,
      [&] { return SinusoidalPositionalEncoding(request.integer(grader::wire::key::ctor("d_model")), request.integer(grader::wire::key::ctor("max_len"))); },
      [](SinusoidalPositionalEncoding& module, const grader::driver::Inputs& in) { return module->forward(in("x")); });
}
