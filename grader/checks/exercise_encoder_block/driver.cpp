// Child side of exercise_encoder_block: the kit's module driver, told how to
// build the learner's block and how to call its forward.
#include "encoder_block.h"
#include "runner/module_driver.h"

extern "C" void grader_run_case(const grader::wire::Record& request, grader::wire::Record& response) {
  grader::driver::run_module_case(
      request, response,
      [&] {
        return EncoderBlock(request.integer(grader::wire::key::ctor("d_model")), request.integer(grader::wire::key::ctor("num_heads")),
                            request.integer(grader::wire::key::ctor("d_ff")), request.real(grader::wire::key::ctor("dropout")));
      },
      [](EncoderBlock& module, const grader::driver::Inputs& in) { return module->forward(in("x"), in("mask")); });
}
