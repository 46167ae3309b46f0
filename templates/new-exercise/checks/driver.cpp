// Child side of @ID@: the kit's driver calling the learner's function on
// the parent's tensors (grader/runner/module_driver.h).
#include "@NAME@.h"
#include "runner/module_driver.h"

extern "C" void grader_run_case(const grader::wire::Record& request, grader::wire::Record& response) {
  grader::driver::run_function_case(request, response,
                                    [](const grader::driver::Inputs& in) { return @NAME@(in("x")); });
}
