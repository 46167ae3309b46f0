// Parent side of exercise_decoder_block: the reference with its replayable
// mistakes (reference/decoder_block_reference.h), and the causal mask
// measured: a later token redrawn must leave every earlier output unchanged.
// Everything else is exercise.yaml and the kit.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include <functional>
#include <map>

#include "checks/kit/kit.h"
#include "decoder_block_reference.h"

namespace grader::exercise_decoder_block {
namespace {

using reference::DecoderBlockVariant;
using Bend = std::function<void(DecoderBlockVariant&)>;

const std::map<std::string, Bend>& bends() {
  static const std::map<std::string, Bend> table = {
      {"no_causal_mask", [](auto& v) { v.causal = false; }},
      {"causal_mask_inverted", [](auto& v) { v.causal_inverted = true; }},
      {"causal_bool_mask_added", [](auto& v) { v.causal_bool_added = true; }},
      {"causal_on_cross", [](auto& v) { v.causal_on_cross = true; }},
      {"cross_from_self", [](auto& v) { v.cross_from_self = true; }},
      {"memory_mask_ignored", [](auto& v) { v.memory_mask_stage = reference::MaskStage::ignored; }},
      {"memory_mask_inverted", [](auto& v) { v.memory_mask_stage = reference::MaskStage::inverted; }},
      {"pre_ln", [](auto& v) { v.pre_ln = true; }},
      {"no_cross_residual", [](auto& v) { v.cross_residual = false; }},
  };
  return table;
}

kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  // Dropout is random in training mode, unless each p is 0 or 1 (a dropout_sites case).
  if (data.train && !data.dropped) return {};
  DecoderBlockVariant variant;
  for (const auto& mistake : mistakes) bends().at(mistake)(variant);
  if (data.dropped) {
    variant.drop_self_output = data.dropped->count("dropout1") > 0;
    variant.drop_cross_output = data.dropped->count("dropout2") > 0;
    variant.drop_ffn_hidden = data.dropped->count("dropout") > 0;
    variant.drop_ffn_output = data.dropped->count("dropout3") > 0;
  }
  auto mask = data.inputs.count("memory_mask") ? data.inputs.at("memory_mask") : at::Tensor();
  return {{"output", reference::decoder_block(data.inputs.at("x"), data.inputs.at("memory"), mask, data.params,
                                              data.dims.at("H"), variant)}};
}

// The causal twin of shape_0: x with its later half redrawn. Every output at
// an earlier position must stay exactly as it was (the reference's does); a
// block whose self-attention sees the future moves them.
const char* const kLaterRedrawn = "shape_0~later_tokens_redrawn";

void add_causality_twin(kit::Kit&, std::vector<wire::Record>& cases, at::Generator& generator) {
  auto twin = kit::planned_case(cases, "shape_0", "exercise_decoder_block");
  twin.tensors.erase("grad_output");
  twin.strings["case"] = kLaterRedrawn;
  auto x = twin.tensor(wire::key::input("x")).clone();
  const auto n = x.size(1), t = n / 2;
  x.narrow(1, t, n - t).copy_(at::randn({x.size(0), n - t, x.size(2)}, generator, at::kDouble).to(x.scalar_type()));
  twin.tensors[wire::key::input("x")] = x;
  twin.strings["describe"] += fmt::format(", tokens {}..{} of x redrawn", t, n - 1);
  twin.ints["seed"] += 700000;
  cases.push_back(std::move(twin));
}

CheckResult earlier_outputs_unchanged(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& base = kit.input().at("shape_0");
  const auto& changed = kit.input().at(kLaterRedrawn);
  for (const auto* run : {&base, &changed}) {
    if (kit.not_runnable(*run)) return results.skip(spec.id, "not measured: " + *kit.not_runnable(*run));
  }
  std::string why;
  auto before = learner_tensor(base, "output", why), after = learner_tensor(changed, "output", why);
  if (!before || !after) return results.skip(spec.id, "not measured: " + why);
  const auto n = base.request.tensor(wire::key::input("x")).size(1), t = n / 2;
  if (before->dim() != 3 || before->sizes() != after->sizes() || before->size(1) != n) {
    return results.skip(spec.id, "not measured: the output has the wrong shape");
  }
  if (!at::isfinite(*before).all().item<bool>() || !at::isfinite(*after).all().item<bool>()) {
    return results.skip(spec.id, "not measured: your output has NaN or infinite values");
  }
  // Only a block that gives the same output twice can show what moved it.
  const auto& again = kit.input().at(kit::repeat_case("shape_0"));
  auto repeated = kit.not_runnable(again) ? std::nullopt : learner_tensor(again, "output", why);
  if (!repeated || repeated->sizes() != before->sizes() || !at::equal(*repeated, *before)) {
    return results.skip(spec.id, "not measured: your output changes between two runs on the same input (in eval "
                                 "mode), so what moves it cannot be told");
  }
  auto moved = (before->narrow(1, 0, t).to(at::kDouble) - after->narrow(1, 0, t).to(at::kDouble)).abs();
  const double most = at::nan_to_num(moved, std::numeric_limits<double>::infinity()).max().item<double>();
  if (most == 0) {
    return results.pass(spec.id, fmt::format("redrawing tokens {}..{} leaves the outputs at 0..{} exactly as they were",
                                             t, n - 1, t - 1));
  }
  return results.fail(spec.id,
                      "your block sees the future: redrawing later tokens moves the outputs at earlier positions. "
                      "Self-attention must hide every key after the query (a float (N, N) attn_mask, -inf above "
                      "the diagonal and 0 elsewhere: LibTorch's C++ attention adds it to the scores); a reshape "
                      "that mixes positions (splitting heads with view on (B, N, D)) leaks them too",
                      {"input: " + changed.describe(),
                       fmt::format("the outputs at positions 0..{} moved by up to {:.3g} (0 expected)", t - 1, most),
                       kit.input().replay_hint()});
}

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, keys_of(bends()));
  suite->dropout_sites({"dropout1", "dropout2", "dropout", "dropout3"});
  suite->extra_cases(add_causality_twin);
  suite->measurement("earlier_outputs_unchanged", earlier_outputs_unchanged);
  return suite;
}

}  // namespace grader::exercise_decoder_block
