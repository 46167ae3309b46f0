// Child side of exercise_rope: both of the learner's functions on the parent's
// tensors (grader/runner/module_driver.h). rope_attention runs first, so its
// output leads (the gradients flow back from it); then apply_rope on query and
// key at their offsets, which the parent measures on its own.
#include "rope.h"
#include "runner/module_driver.h"

extern "C" void grader_run_case(const grader::wire::Record& request, grader::wire::Record& response) {
  grader::driver::run_function_case(request, response, [](const grader::driver::Inputs& in) {
    const auto query_offset = in.argument("query_offset"), key_offset = in.argument("key_offset");
    auto [output, weights] = rope_attention(in("query"), in("key"), in("value"), query_offset, key_offset);
    return std::make_tuple(output, weights, apply_rope(in("query"), query_offset), apply_rope(in("key"), key_offset));
  });
}
