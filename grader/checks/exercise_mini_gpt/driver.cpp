// Child side of exercise_mini_gpt (grader/runner/module_driver.h). A case is
// one of three tasks, by its "task" field:
//   (none)    exercise.yaml's cases: the logits of `tokens`, from forward
//             (first = 0) or from forward_cached fed `first` tokens and then
//             `step` at a time after reset_cache(), joined along the tokens;
//             before that, previous_mode 1 feeds `previous` through
//             forward_cached (then the reset), 2 feeds it through forward
//             (after the reset);
//   probs     next_token_probs on input "logits" with the reals temperature
//             and top_p and the integer top_k;
//   generate  generate on input "prompt", once per line of "generations"
//             ("max_new_tokens temperature top_k top_p seed"), each call a
//             step of its own (its work traced apart); the i-th result is
//             "tokens.<i>", the last one also "tokens"; a call after the
//             first that throws stops the case there ("stopped").
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "mini_gpt.h"
#include "runner/module_driver.h"

namespace {

namespace key = grader::wire::key;
using grader::driver::Inputs;

MiniGPT make(const grader::wire::Record& request) {
  return MiniGPT(request.integer(key::ctor("vocab_size")), request.integer(key::ctor("max_len")),
                 request.integer(key::ctor("dim")), request.integer(key::ctor("num_heads")),
                 request.integer(key::ctor("num_layers")));
}

torch::Tensor logits_of(MiniGPT& model, const Inputs& in, grader::driver::Steps& steps) {
  const auto& tokens = in("tokens");
  const int64_t first = in.argument("first"), step = in.argument("step"), count = tokens.size(1);
  if (first <= 0) return steps.step("forward", [&] { return model->forward(tokens); });
  auto reset = [&] {
    steps.step("reset", [&] {
      model->reset_cache();
      return 0;
    });
  };
  const auto& previous = in("previous");
  const int64_t previous_mode = in.argument("previous_mode");
  if (previous_mode == 1) {
    steps.step("previous cached", [&] { return model->forward_cached(previous); });
  }
  reset();
  if (previous_mode == 2) steps.step("previous forward", [&] { return model->forward(previous); });
  std::vector<torch::Tensor> outputs;
  for (int64_t begin = 0; begin < count;) {
    const int64_t size = std::min(begin == 0 ? first : step, count - begin);
    auto part = tokens.narrow(1, begin, size);
    auto logits = steps.step("cached " + std::to_string(begin) + " " + std::to_string(size),
                             [&] { return model->forward_cached(part); });
    TORCH_CHECK(logits.defined() && logits.dim() == 3 && logits.size(1) == size, "forward_cached returned ",
                logits.defined() ? logits.sizes() : at::IntArrayRef{}, " for a call of ", size,
                " tokens: each call must return (B, T, V) for its T tokens");
    outputs.push_back(logits);
    begin += size;
  }
  return torch::cat(outputs, 1);
}

torch::Tensor generations(MiniGPT& model, const Inputs& in, grader::driver::Steps& steps,
                          const grader::wire::Record& request, grader::wire::Record& response) {
  std::istringstream lines(request.string("generations"));
  torch::Tensor last;
  int index = 0;
  int64_t max_new = 0, top_k = 0;
  double temperature = 0, top_p = 1;
  uint64_t seed = 0;
  while (lines >> max_new >> temperature >> top_k >> top_p >> seed) {
    // A later call that throws ends the case with the earlier calls' results
    // kept ("stopped" says where and why): they show what changed between calls.
    try {
      last = steps.step("generate " + std::to_string(index),
                        [&] { return model->generate(in("prompt"), max_new, temperature, top_k, top_p, seed); });
    } catch (const std::exception& error) {
      if (index == 0) throw;
      response.strings["stopped"] = "call " + std::to_string(index + 1) + " threw: " + error.what();
      break;
    }
    grader::driver::put_tensor(response, "tokens." + std::to_string(index++), last);
  }
  return last;
}

}  // namespace

extern "C" void grader_run_case(const grader::wire::Record& request, grader::wire::Record& response) {
  const auto task = request.string_or("task", "");
  if (task == "probs") {
    grader::driver::run_function_case(request, response, [&](const Inputs& in) {
      return next_token_probs(in("logits"), request.real("temperature"), request.integer("top_k"),
                              request.real("top_p"));
    });
    return;
  }
  grader::driver::run_module_steps(request, response, [&] { return make(request); },
                                   [&](MiniGPT& model, const Inputs& in, grader::driver::Steps& steps) {
                                     if (task == "generate") return generations(model, in, steps, request, response);
                                     return logits_of(model, in, steps);
                                   });
}
