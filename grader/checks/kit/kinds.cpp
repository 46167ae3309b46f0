// The kit's check kinds: the one list of them, with what each checks. A check
// in exercise.yaml names one by `kind:` (default: its id); an exercise's own
// kinds (Kit::custom, Kit::measurement) are looked up before these.
#include "checks/kit/kit.h"

#include <algorithm>

namespace grader::kit {

const std::vector<KindInfo>& kinds() {
  static const std::vector<KindInfo> table = {
      {"parameters", &Kit::parameters, false,
       "every signature parameter was loaded by name (exact: true: and nothing else is registered, "
       "no bias the signature lacks)"},
      {"rejects", &Kit::rejects, false, "constructing with `constructor:` arguments must throw"},
      {"refuses", &Kit::refuses, false,
       "forward on `cases` (each with the trait expect: error) must throw, the message naming one of the "
       "comma-separated words of `mentions`"},
      {"shapes", &Kit::shapes, false, "every output has its signature shape on `cases` (default all)"},
      {"numerics", &Kit::numerics, false, "outputs match the reference on `cases`, in the case's dtype"},
      {"gradients", &Kit::gradients, false, "gradients of every floating input and parameter on `cases`"},
      {"deterministic", &Kit::deterministic, false, "two runs of `cases` on identical inputs agree (eval mode)"},
      {"masked_values", &Kit::masked_values, false, "values at fully masked keys (option `input`) do not matter"},
      {"work_growth", &Kit::work_growth, false,
       "the operators the learner's forward calls itself (any name) and its matmul/softmax/mul/div counts do "
       "not grow from cases[0] to cases[1]"},
      {"dependence", &Kit::dependence, true,
       "redrawing each input, each parameter, and batch elements 1.. moves the output of cases[0] exactly "
       "where it moves the reference's (option focus.<input or parameter prefix>: its focus point)"},
      {"causal_outputs", &Kit::causal_outputs, true,
       "cases[0] run again with the later half of an input (option `input`, default the first) redrawn along "
       "its positions: every output at an earlier position must stay exactly as it was (`says`: the advice "
       "when one moves); measured only where the model repeats itself and its outputs are finite"},
      {"dropouts", &Kit::dropouts, false,
       "on cases[0], a Dropout is registered at each of `names` (comma-separated, {X} templates as "
       "parameters) with the p the constructor's argument `argument` (default dropout) was given"},
      {"dropout_in_training", &Kit::dropout_in_training, false,
       "cases[0] (eval) run twice in training mode: the two runs differ from each other and from eval mode"},
      {"dropout_sites", &Kit::dropout_sites, false,
       "where each Dropout of `names` acts: cases[0] in training mode with that one at p = 1 and the others "
       "at 0 must give the reference with its place zeroed (Kit::dropout_sites), and with all at 0 the eval "
       "result (no dropout the statement lacks); names: \"\" for a module with no dropout at all; silence: "
       "Dropouts (or MultiheadAttentions) held at 0 in every twin, with {X} templates "
       "(\"layers.{L}.dropout\"). The same twins localise an unexplained difference (point.<name>: the "
       "focus point of what that Dropout drops)"},
      {"device_placement", &Kit::device_placement, false,
       "from the operator trace of every case (or of `cases`): no tensor made inside forward on a fixed device (a factory "
       "given no device) meets the input's data, nothing is read back to the host (.item()) or moved to "
       "the CPU; on a GPU also no device-mismatch error and every output on the GPU"},
      {"fill_fits", &Kit::fill_fits, false,
       "from the operator trace of every case: the finite value masked scores are filled with fits `dtype` "
       "(float16 or bfloat16), judged where that dtype cannot run: a constant the same in every dtype's "
       "cases fails when larger; a value that follows the dtype is not assessed"},
      {"gpu_execution", &Kit::gpu_execution, false,
       "the cases ran on the GPU with outputs there; skipped with the reason where the grade runs on the "
       "CPU (never passed)"},
      {"attention_scale", &Kit::attention_scale, true,
       "the factor the scores are scaled by, measured by the attention probe"},
      {"attention_axis", &Kit::attention_axis, true,
       "the axis the softmax normalises over, measured by the attention probe"},
      {"attention_mask", &Kit::attention_mask, true,
       "masked keys get exactly zero weight, measured by the attention probe"},
      {kNoBuiltinsCheck, &Kit::no_builtins, false,
       "no forbidden operator ran and no forbidden symbol is linked; with no_graph: \"true\", none of the learner's "
       "own operators built an autograd graph (grad mode on, an input requiring grad)"},
  };
  return table;
}

const KindInfo* find_kind(const std::string& name) {
  const auto& table = kinds();
  auto found = std::find_if(table.begin(), table.end(), [&](const KindInfo& kind) { return kind.name == name; });
  return found == table.end() ? nullptr : &*found;
}

}  // namespace grader::kit
