// Parent side of exercise_mini_gpt: the model's reference
// (reference/mini_gpt_reference.h) with its replayable mistakes, which the
// kit's logits checks use, and the suite: the sampler's checks
// (sampler.cpp) and the generation's (generation.cpp) are kinds of its own,
// their cases planned beside exercise.yaml's.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include <functional>
#include <map>

#include "mini_gpt_checks.h"

namespace grader::exercise_mini_gpt {
namespace {

const std::map<std::string, std::function<void(reference::GptVariant&)>>& model_bends() {
  static const std::map<std::string, std::function<void(reference::GptVariant&)>> table = {
      {"no_positions", [](auto& v) { v.positions = false; }},
      {"no_causal_mask", [](auto& v) { v.causal = false; }},
      {"post_ln", [](auto& v) { v.pre_ln = false; }},
      {"gelu_tanh", [](auto& v) { v.gelu_tanh = true; }},
      {"scaled_by_dim", [](auto& v) { v.scale_by_dim = true; }},
      {"no_scaling", [](auto& v) { v.unscaled = true; }},
      {"float32_scale", [](auto& v) { v.float32_scale = 1; }},
      {"float32_sqrt", [](auto& v) { v.float32_scale = 2; }},
      {"no_final_norm", [](auto& v) { v.final_norm = false; }},
      {"positions_restart", [](auto& v) { v.positions_restart = true; }},
      {"cached_mask_top_left", [](auto& v) { v.cached_mask_top_left = true; }},
      {"diagonal_hidden", [](auto& v) { v.diagonal_hidden = true; }},
  };
  return table;
}

kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  // The sampler's and the generation's cases are judged by their own checks.
  if (!data.inputs.count("tokens") || !data.dims.count("F")) return {};
  reference::GptVariant variant;
  variant.first = data.dims.at("F");
  variant.step = data.dims.at("S");
  for (const auto& mistake : mistakes) model_bends().at(mistake)(variant);
  return {{"logits", reference::gpt_logits(data.inputs.at("tokens"), data.params, shape_of(data.dims), variant)}};
}

// How a case fed its tokens, in words (exercise.yaml's dimensions F, S, R, Y).
void describe_feeding(kit::Kit&, std::vector<wire::Record>& cases, at::Generator&) {
  for (auto& record : cases) {
    const auto first = record.integer_or(wire::key::dim("F"), -1), step = record.integer_or(wire::key::dim("S"), -1),
               previous = record.integer_or(wire::key::dim("R"), 0), mode = record.integer_or(wire::key::dim("Y"), 0);
    if (first < 0 || record.strings.count("task")) continue;
    auto& describe = record.strings["describe"];
    if (first == 0) {
      describe += ", through forward";
      continue;
    }
    if (mode == 1) describe += fmt::format(", after {} other tokens through forward_cached and reset_cache()", previous);
    if (mode == 2) describe += fmt::format(", after reset_cache() and {} other tokens through forward", previous);
    describe += first == step ? fmt::format(", through forward_cached in calls of {} tokens", first)
                              : fmt::format(", through forward_cached: {} token(s), then {} at a time", first, step);
  }
}

}  // namespace

std::string setting_text(const Setting& s) {
  if (s.temperature == 0) return "temperature 0 (greedy)";
  return fmt::format("temperature {}, top_k {}, top_p {}", s.temperature, s.top_k, s.top_p);
}

reference::GptShape shape_of(const kit::Dims& dims) { return {dims.at("H"), dims.at("L")}; }

bool lists_mistake(const kit::Kit& kit, const std::string& id) {
  const auto& mistakes = kit.exercise().mistakes;
  return std::any_of(mistakes.begin(), mistakes.end(), [&](const Mistake& m) { return m.id == id; });
}

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, keys_of(model_bends()));
  suite->extra_cases(describe_feeding);
  suite->extra_cases(plan_sampler_cases);
  suite->extra_cases(plan_generation_cases);
  suite->custom("sampler_probs", sampler_probs);
  suite->custom("generation", generation);
  suite->custom("work_per_token", work_per_token);
  auto named = sampler_mistakes();
  for (const auto& id : draw_mistakes()) named.push_back(id);
  suite->names_mistakes(named);
  return suite;
}

}  // namespace grader::exercise_mini_gpt
