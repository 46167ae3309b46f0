// Child side of exercise_mini_encoder: the kit's module driver (and its fit
// driver, for "it learns"), told how to build the learner's model and how to
// call its forward.
#include "mini_encoder.h"
#include "runner/fit_driver.h"
#include "runner/module_driver.h"

extern "C" void grader_run_case(const grader::wire::Record& request, grader::wire::Record& response) {
  auto make = [&] {
    return MiniEncoder(request.integer("ctor.vocab_size"), request.integer("ctor.d_model"),
                       request.integer("ctor.n_heads"), request.integer("ctor.d_ff"), request.integer("ctor.n_layers"),
                       request.integer("ctor.n_classes"), request.real("ctor.dropout"));
  };
  auto forward = [](MiniEncoder& model, const grader::driver::Inputs& in) {
    return model->forward(in("tokens"), in("mask"));
  };
  if (grader::driver::run_fit_case(request, response, make, forward)) return;
  grader::driver::run_module_case(request, response, make, forward);
}
