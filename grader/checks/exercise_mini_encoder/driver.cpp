// Child side of exercise_mini_encoder: the kit's module driver (and its fit
// driver, for "it learns"), told how to build the learner's model and how to
// call its forward.
#include "mini_encoder.h"
#include "runner/fit_driver.h"
#include "runner/module_driver.h"

extern "C" void grader_run_case(const grader::wire::Record& request, grader::wire::Record& response) {
  auto make = [&] {
    return MiniEncoder(request.integer(grader::wire::key::ctor("vocab_size")), request.integer(grader::wire::key::ctor("d_model")),
                       request.integer(grader::wire::key::ctor("n_heads")), request.integer(grader::wire::key::ctor("d_ff")), request.integer(grader::wire::key::ctor("n_layers")),
                       request.integer(grader::wire::key::ctor("n_classes")), request.real(grader::wire::key::ctor("dropout")));
  };
  auto forward = [](MiniEncoder& model, const grader::driver::Inputs& in) {
    return model->forward(in("tokens"), in("mask"));
  };
  if (grader::driver::run_fit_case(request, response, make, forward)) return;
  grader::driver::run_module_case(request, response, make, forward);
}
