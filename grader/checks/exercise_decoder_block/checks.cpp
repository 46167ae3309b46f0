// Parent side of exercise_decoder_block: the reference with its replayable
// mistakes (reference/decoder_block_reference.h). Everything else is
// exercise.yaml and the kit (the causal mask measured by causal_outputs).
#include <ATen/ATen.h>

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
      {"relu", [](auto& v) { v.activation = reference::Activation::relu; }},
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

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, keys_of(bends()));
  suite->dropout_sites({"dropout1", "dropout2", "dropout", "dropout3"});
  return suite;
}

}  // namespace grader::exercise_decoder_block
