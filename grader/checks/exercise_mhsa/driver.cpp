// Child side of exercise_mhsa: the kit's module driver, told how to build the
// learner's module and how to call its forward.
#include "mhsa.h"
#include "runner/module_driver.h"

extern "C" void grader_run_case(const grader::wire::Record& request, grader::wire::Record& response) {
  grader::driver::run_module_case(
      request, response,
      [&] {
        return MultiHeadSelfAttention(request.integer(grader::wire::key::ctor("dim")), request.integer(grader::wire::key::ctor("num_heads")),
                                      request.real(grader::wire::key::ctor("dropout")));
      },
      [](MultiHeadSelfAttention& module, const grader::driver::Inputs& in) { return module->forward(in("x")); });
}
