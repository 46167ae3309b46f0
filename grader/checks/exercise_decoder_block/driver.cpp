// Child side of exercise_decoder_block: the kit's module driver, told how to
// build the learner's block and how to call its forward.
#include "decoder_block.h"
#include "runner/module_driver.h"

extern "C" void grader_run_case(const grader::wire::Record& request, grader::wire::Record& response) {
  namespace key = grader::wire::key;
  grader::driver::run_module_case(
      request, response,
      [&] {
        return DecoderBlock(request.integer(key::ctor("d_model")), request.integer(key::ctor("num_heads")),
                            request.integer(key::ctor("d_ff")), request.real(key::ctor("dropout")));
      },
      [](DecoderBlock& module, const grader::driver::Inputs& in) {
        return module->forward(in("x"), in("memory"), in("memory_mask"));
      });
}
