// Child side of exercise_kv_cache: a multi-step case (grader/runner/
// module_driver.h). It feeds `previous` and calls reset_cache() when the case
// has R > 0 tokens of it, then feeds x in calls of `first` and then `step`
// tokens; after every call it notes the cache's shapes ("cache_shapes", one
// line per call, in the order of "calls"), and at the end it returns the
// calls' outputs joined along the tokens and the final cache.
//
// A case with `near` > 0 times the work of one-token calls against the cache
// (work_per_call): a second module with the same weights is fed the first
// `near` tokens, and before each one-token call of the first module it is fed
// one token too ("near <begin> 1"): two calls next to each other in time, one
// with `first - near` tokens more cached, so that what slows the machine for
// a while slows both.
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
                      step = request.integer(grader::wire::key::dim("step")), tokens = x.size(1),
                      near = request.integer_or(grader::wire::key::dim("near"), 0);
        // The second module of a timed case: built and loaded as the first.
        CachedSelfAttention other{nullptr};
        if (near > 0) {
          other = CachedSelfAttention(request.integer(grader::wire::key::ctor("dim")), request.integer(grader::wire::key::ctor("num_heads")));
          other->to(x.device(), x.scalar_type());
          torch::NoGradGuard no_grad;
          auto theirs = other->named_parameters();
          for (const auto& item : module->named_parameters()) {
            if (auto* target = theirs.find(item.key())) target->copy_(item.value());
          }
        }
        int64_t near_next = near;  // the next token the second module is fed
        auto call_near = [&](int64_t begin, int64_t count) {
          const auto label = "near " + std::to_string(begin) + " " + std::to_string(count);
          try {
            steps.step(label, [&] { return other->forward(x.narrow(1, begin, count)); });
          } catch (...) {
            response.strings["cache_shapes"] += label + " k=" + shape_of(other->k_cache) + " v=" + shape_of(other->v_cache) + " threw\n";
            throw;
          }
          response.strings["cache_shapes"] += label + " k=" + shape_of(other->k_cache) + " v=" + shape_of(other->v_cache) + '\n';
        };
        if (near > 0) call_near(0, near);
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
          if (near > 0 && begin > 0 && count == 1 && near_next < first) call_near(near_next++, 1);
          const auto label = "x " + std::to_string(begin) + " " + std::to_string(count);
          auto output = call(label, [&] { return module->forward(x.narrow(1, begin, count)); });
          TORCH_CHECK(output.defined() && output.dim() == 3 && output.size(0) == x.size(0),
                      "forward returned ", output.defined() ? output.sizes() : at::IntArrayRef{},
                      " for a call of ", count, " tokens (x of shape ", x.narrow(1, begin, count).sizes(),
                      "): each call must return (B, T, D) for its T tokens");
          // Fewer outputs than the call's tokens (the last one's alone, say):
          // said apart, for exercise.yaml's error rule.
          TORCH_CHECK(output.size(1) >= count, "forward returned outputs for only ", output.size(1),
                      " of the call's ", count, " tokens (", output.sizes(), " for x of shape ",
                      x.narrow(1, begin, count).sizes(), "): each call must return (B, T, D) for its T tokens");
          TORCH_CHECK(output.size(1) == count, "forward returned ", output.sizes(), " for a call of ", count,
                      " tokens (x of shape ", x.narrow(1, begin, count).sizes(),
                      "): each call must return (B, T, D) for its T tokens");
          outputs.push_back(output);
          begin += count;
        }
        grader::driver::put_tensor(response, "k_cache", module->k_cache);
        grader::driver::put_tensor(response, "v_cache", module->v_cache);
        return torch::cat(outputs, 1);
      });
}
