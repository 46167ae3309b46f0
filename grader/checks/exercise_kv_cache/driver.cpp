// Child side of exercise_kv_cache: a multi-step case (grader/runner/
// module_driver.h). It feeds `previous` and calls reset_cache() when the case
// has R > 0 tokens of it, then feeds x in calls of `first` and then `step`
// tokens; after every call it notes the cache's shapes ("cache_shapes", one
// line per call, in the order of "calls"), and at the end it returns the
// calls' outputs joined along the tokens and the final cache.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "kv_cache.h"
#include "runner/module_driver.h"

namespace {

std::string shape_of(const torch::Tensor& t) {
  if (!t.defined()) return "undefined";
  std::string text;
  for (auto size : t.sizes()) text += (text.empty() ? "" : ",") + std::to_string(size);
  return "(" + text + ")";
}

}  // namespace

extern "C" void grader_run_case(const grader::wire::Record& request, grader::wire::Record& response) {
  grader::driver::run_module_steps(
      request, response,
      [&] { return CachedSelfAttention(request.integer(grader::wire::key::ctor("dim")), request.integer(grader::wire::key::ctor("num_heads"))); },
      [&](CachedSelfAttention& module, const grader::driver::Inputs& in, grader::driver::Steps& steps) {
        auto note = [&](const std::string& label, bool threw = false) {
          response.strings["cache_shapes"] += label + " k=" + shape_of(module->k_cache) +
                                              " v=" + shape_of(module->v_cache) + (threw ? " threw" : "") + '\n';
        };
        // A learner call through steps, its cache noted even when it throws.
        auto call = [&](const std::string& label, auto learner) {
          try {
            auto result = steps.step(label, learner);
            note(label);
            return result;
          } catch (...) {
            note(label, true);
            throw;
          }
        };
        const auto& x = in("x");
        const int64_t previous = request.integer(grader::wire::key::dim("R")), first = request.integer(grader::wire::key::dim("first")),
                      step = request.integer(grader::wire::key::dim("step")), tokens = x.size(1);
        if (previous > 0) {
          call("previous", [&] { return module->forward(in("previous")); });
          call("reset", [&] {
            module->reset_cache();
            return 0;
          });
        }
        std::vector<torch::Tensor> outputs;
        for (int64_t begin = 0; begin < tokens;) {
          const int64_t count = std::min(begin == 0 ? first : step, tokens - begin);
          const auto label = "x " + std::to_string(begin) + " " + std::to_string(count);
          auto output = call(label, [&] { return module->forward(x.narrow(1, begin, count)); });
          TORCH_CHECK(output.defined() && output.dim() == 3 && output.size(0) == x.size(0) && output.size(1) == count,
                      "forward returned ", output.defined() ? output.sizes() : at::IntArrayRef{},
                      " for a call of ", count, " tokens (x of shape ", x.narrow(1, begin, count).sizes(),
                      "): each call must return (B, T, D) for its T tokens");
          outputs.push_back(output);
          begin += count;
        }
        grader::driver::put_tensor(response, "k_cache", module->k_cache);
        grader::driver::put_tensor(response, "v_cache", module->v_cache);
        return torch::cat(outputs, 1);
      });
}
