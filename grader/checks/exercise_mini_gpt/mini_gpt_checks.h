// What the parent-side files of exercise_mini_gpt share: checks.cpp (the
// model's reference and make_suite), sampler.cpp (next_token_probs judged on
// crafted logits) and generation.cpp (generate, token for token, and its work).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "checks/kit/kit.h"
#include "mini_gpt_reference.h"

namespace grader::exercise_mini_gpt {

// What a case asks of the sampler.
struct Setting {
  double temperature = 1;
  int64_t top_k = 0;
  double top_p = 1;
};
std::string setting_text(const Setting& s);

reference::GptShape shape_of(const kit::Dims& dims);

// ---- sampler.cpp ----
// The sampler's known mistakes (exercise.yaml's ids), and their replay.
std::vector<std::string> sampler_mistakes();
reference::SamplerVariant sampler_variant(const std::string& mistake);
std::string probs_case(const std::string& feature);
void plan_sampler_cases(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator& generator);
// Whether the learner's next_token_probs gives the reference's distribution
// on the case of `feature` (false too where it did not run).
bool probs_match(const kit::Kit& kit, const std::string& feature);
// Whether the sampler with `mistake` gives the learner's probabilities on
// every sampler case that returned some (and on one at least).
bool explains_every_probs_case(const kit::Kit& kit, const std::string& mistake);
CheckResult sampler_probs(const kit::Kit& kit, const CheckSpec& spec);

// ---- generation.cpp ----
std::vector<std::string> draw_mistakes();
void plan_generation_cases(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator& generator);
CheckResult generation(const kit::Kit& kit, const CheckSpec& spec);
CheckResult work_per_token(const kit::Kit& kit, const CheckSpec& spec);

// Whether exercise.yaml lists the mistake `id`.
bool lists_mistake(const kit::Kit& kit, const std::string& id);

}  // namespace grader::exercise_mini_gpt
