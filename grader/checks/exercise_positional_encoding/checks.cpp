// Parent side of exercise_positional_encoding: the reference with its
// replayable mistakes, and three checks of the module's own: the table
// measured channel by channel on a zero input, the registered buffer, and an
// odd d_model. Everything else is exercise.yaml and the kit.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <functional>
#include <map>
#include <sstream>

#include "checks/kit/kit.h"
#include "base/errors.h"
#include "report/report.h"
#include "sinusoidal_encoding.h"

namespace grader::exercise_positional_encoding {
namespace {

using reference::PositionalEncodingVariant;
using Bend = std::function<void(PositionalEncodingVariant&)>;

const std::map<std::string, Bend>& bends() {
  static const std::map<std::string, Bend> table = {
      {"sin_cos_swapped", [](auto& v) { v.sin_cos_swapped = true; }},
      {"halves", [](auto& v) { v.halves = true; }},
      {"exponent_without_2", [](auto& v) { v.exponent_without_2 = true; }},
      {"log10_base", [](auto& v) { v.log10_base = true; }},
      {"positions_from_one", [](auto& v) { v.first_position = 1; }},
      {"input_scaled", [](auto& v) { v.input_scaled = true; }},
  };
  return table;
}

kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  PositionalEncodingVariant variant;
  for (const auto& mistake : mistakes) bends().at(mistake)(variant);
  return {{"output", reference::add_positional_encoding(data.inputs.at("x"), variant)}};
}

// The probe: a zero input, so the output is the table itself.
constexpr int64_t kN = 64, kD = 16;
const char* const kProbe = "encoding_probe";

void add_probe(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator& generator) {
  CaseSpec spec{kProbe, {{"B", 2}, {"N", kN}, {"D", kD}, {"L", 128}}, {}};
  auto record = kit.make_case(spec, generator, 700001);
  record.tensors[wire::key::input("x")] = at::zeros({2, kN, kD}, at::kDouble);
  record.strings["describe"] += ", x = 0 (the output is the table)";
  cases.push_back(std::move(record));
}

double frequency(int64_t pair, bool without_2 = false, bool log10 = false) {
  const double base = log10 ? std::log10(10000.0) : std::log(10000.0);
  return std::exp(-base * static_cast<double>(without_2 ? pair : 2 * pair) / static_cast<double>(kD));
}

// Where each batch element of the probe's output holds one row at every
// token, the row of the reference table it is (one row, clearly closer than
// any other); nothing where the tokens differ or a row is no row of the table.
std::optional<std::vector<int64_t>> rows_per_batch_element(const kit::Kit& kit, const CaseRun& run,
                                                           const at::Tensor& output) {
  const auto want = kit.expected(run).at("output")[0];  // (kN, kD): the table, x being 0
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < output.size(0); ++b) {
    const auto& element = output[b];
    if (!at::allclose(element, element[0].unsqueeze(0).expand_as(element), 0, 1e-9)) return std::nullopt;
    std::vector<std::pair<double, int64_t>> errors;
    for (int64_t r = 0; r < kN; ++r) errors.emplace_back((element[0] - want[r]).abs().max().item<double>(), r);
    const auto reading = kit::read_probe(std::move(errors), 1e-4);
    if (reading.kind != kit::ProbeReading::Kind::one) return std::nullopt;
    rows.push_back(reading.value);
  }
  return rows;
}

// Each channel of the table read as sin(pos * w + phase): at position 0 a
// sine is 0 and a cosine 1; w from position 1 (all w <= 1 < pi / 2 here).
CheckResult encoding_pattern(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at(kProbe);
  if (auto why = kit.not_runnable(run)) return results.skip(spec.id, "not assessed: " + *why);
  std::string why;
  auto output = learner_tensor(run, "output", why);
  if (!output) return results.skip(spec.id, "not assessed: " + why);
  if (output->sizes() != at::IntArrayRef({2, kN, kD})) {
    return results.skip(spec.id, "not assessed: the output has shape " + shape_string(output->sizes()) +
                                     " on the probe (see the shape check)");
  }
  auto table = output->to(at::kDouble)[0];
  std::vector<std::string> evidence = {"input: " + run.describe()};
  auto fail = [&](const std::string& focus, const std::string& message) {
    auto result = results.fail(spec.id, message, evidence);
    result.focus_point = focus;
    return result;
  };
  if (!at::isfinite(table).all().item<bool>()) return fail("channels", "the table has values that are not finite");
  // Every token of a batch element given one and the same row of the right
  // table (the table sliced by the batch size x.size(0) and broadcast over
  // the tokens, or one row for all): the rows are right, token n does not
  // get row n. Read before the channels, which would take the unchanging
  // rows for frequencies of 0.
  if (auto rows = rows_per_batch_element(kit, run, output->to(at::kDouble))) {
    const bool by_batch = (*rows)[0] == 0 && (*rows)[1] == 1;
    evidence.push_back(fmt::format("every token of batch element 0 gets row {} of the table, every token of batch "
                                   "element 1 row {}; token n needs row n",
                                   (*rows)[0], (*rows)[1]));
    return fail("positions",
                by_batch ? "batch element b gets row b of the table at every token: the table is sliced with the "
                           "batch size x.size(0) and broadcast over the tokens. x is (B, N, d_model): take the first "
                           "N = x.size(1) rows and broadcast them over the batch (token n gets row n)"
                         : fmt::format("every token gets the same row of the table ({}{}): the table's rows must run "
                                       "along the tokens of x (B, N, d_model), token n getting row n",
                                       (*rows)[0] == (*rows)[1] ? "row " : "rows ",
                                       (*rows)[0] == (*rows)[1] ? std::to_string((*rows)[0])
                                                                : fmt::format("{} and {}", (*rows)[0], (*rows)[1])));
  }
  auto first = table[0];
  std::string kinds;  // per channel: s (0 at position 0), c (1 at position 0), ? (neither)
  for (int64_t c = 0; c < kD; ++c) {
    const double v = first[c].item<double>();
    kinds += std::abs(v) < 1e-6 ? 's' : std::abs(v - 1) < 1e-6 ? 'c' : '?';
  }
  evidence.push_back("channels at position 0 (s: 0, a sine; c: 1, a cosine): " + kinds);
  if (kinds.find('?') != std::string::npos) {
    // sin(w) and cos(w) of the first frequency at "position 0": the positions start at 1.
    if (std::abs(first[0].item<double>() - std::sin(1.0)) < 1e-4 &&
        std::abs(first[1].item<double>() - std::cos(1.0)) < 1e-4) {
      return fail("positions",
                  "the first token's encoding is that of position 1: positions must start at 0 "
                  "(sin(0) = 0 on the even channels, cos(0) = 1 on the odd ones)");
    }
    return fail("channels",
                "at position 0 every channel must be sin(0) = 0 or cos(0) = 1; some of yours are "
                "neither: the table is not sines and cosines of pos * w");
  }
  std::string interleaved, swapped, halves;
  for (int64_t c = 0; c < kD; ++c) {
    interleaved += c % 2 == 0 ? 's' : 'c';
    swapped += c % 2 == 0 ? 'c' : 's';
    halves += c < kD / 2 ? 's' : 'c';
  }
  if (kinds == swapped) {
    return fail("channels",
                "the even channels hold cosines and the odd ones sines: swap them (channel 2i is "
                "sin(pos * w_i), channel 2i + 1 is cos(pos * w_i))");
  }
  if (kinds == halves) {
    return fail("channels",
                "sines fill the first half of the channels and cosines the second: interleave them "
                "(channel 2i sin, channel 2i + 1 cos of the same angle)");
  }
  if (kinds != interleaved) return fail("channels", "sines must be on the even channels and cosines on the odd ones");
  // Frequencies per pair, from position 1: w = asin(PE[1][2i]) (the cosine must agree).
  std::vector<double> measured;
  for (int64_t i = 0; i < kD / 2; ++i) {
    const double s = table[1][2 * i].item<double>(), c = table[1][2 * i + 1].item<double>();
    const double w = std::atan2(s, c);
    measured.push_back(w);
    auto want = at::arange(kN, at::kDouble) * w;
    const bool fits = at::allclose(table.select(1, 2 * i), want.sin(), 0, 1e-4) &&
                      at::allclose(table.select(1, 2 * i + 1), want.cos(), 0, 1e-4);
    if (!fits) {
      evidence.push_back(
          fmt::format("channels {} and {} are not sin and cos of pos * {:.6g} at every position", 2 * i, 2 * i + 1, w));
      return fail("frequencies",
                  "each channel pair must be sin(pos * w_i) and cos(pos * w_i) with one frequency w_i per pair");
    }
  }
  auto matches = [&](bool without_2, bool log10) {
    for (int64_t i = 0; i < kD / 2; ++i) {
      if (std::abs(measured[i] - frequency(i, without_2, log10)) > 1e-4 * frequency(i, without_2, log10)) return false;
    }
    return true;
  };
  evidence.push_back(fmt::format("measured frequencies w_0..w_{}: {:.4g}", kD / 2 - 1, fmt::join(measured, ", ")));
  // (fmt::join only refers to the values: they must outlive the format call.)
  std::vector<double> expected_frequencies;
  for (int64_t i = 0; i < kD / 2; ++i) expected_frequencies.push_back(frequency(i));
  evidence.push_back(fmt::format("expected (10000^(-2i/{})): {:.4g}", kD, fmt::join(expected_frequencies, ", ")));
  if (matches(false, false)) {
    return results.pass(spec.id,
                        "sines on the even channels, cosines on the odd ones, frequencies "
                        "10000^(-2i/d_model), positions from 0");
  }
  if (matches(true, false)) {
    return fail("frequencies",
                "the frequencies are 10000^(-i/d_model): the exponent uses the pair index i where "
                "it needs 2i (or the channel index counted in steps of 2)");
  }
  if (matches(false, true)) {
    return fail("frequencies",
                "the frequencies are exp(-log10(10000) * 2i/d_model): use the natural log, "
                "exp(-ln(10000) * 2i/d_model) = 10000^(-2i/d_model)");
  }
  // The base the learner's geometric progression implies, if it is one.
  const double ratio = measured.size() > 1 && measured[1] > 0 ? measured[1] / measured[0] : 0;
  const double base = ratio > 0 ? std::pow(ratio, -static_cast<double>(kD) / 2) : 0;
  return fail("frequencies", fmt::format("the frequencies are not 10000^(-2i/d_model){}",
                                         base > 0 ? fmt::format(" (they fall like {:.4g}^(-2i/d_model))", base) : ""));
}

CheckResult registered_buffer(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at("shape_0");
  if (!run.response.ints.count("constructed")) return kit.explain(spec.id, "shape_0");
  const auto d = run.request.integer(wire::key::dim("D")), l = run.request.integer(wire::key::dim("L"));
  std::vector<std::string> evidence = {"constructed with d_model=" + std::to_string(d) +
                                       ", max_len=" + std::to_string(l)};
  const auto parameters = kit::module_parameters(run);
  if (!parameters.empty()) {
    evidence.push_back("parameters: " + parameters.front().describe() + (parameters.size() > 1 ? ", ..." : ""));
    return results.fail(spec.id,
                        "the module has parameters: the encoding is fixed, not learned; a parameter would be "
                        "updated by the optimizer and tracked by autograd. Register the table with "
                        "register_buffer(\"pe\", table)",
                        evidence);
  }
  const auto buffers = kit::module_buffers(run);
  if (buffers.empty()) {
    return results.fail(spec.id,
                        "no buffer is registered: a plain tensor member does not move with module->to() and is not "
                        "saved with the module; register the table with register_buffer(\"pe\", table)",
                        evidence);
  }
  auto found = std::find_if(buffers.begin(), buffers.end(), [](const kit::Registered& b) { return b.name == "pe"; });
  if (found == buffers.end()) {
    evidence.push_back("registered buffers: " + buffers.front().name + (buffers.size() > 1 ? ", ..." : ""));
    return results.fail(spec.id, "register the table under the name the interface gives: \"pe\"", evidence);
  }
  const bool shape_ok = found->sizes == std::vector<int64_t>{l, d} || found->sizes == std::vector<int64_t>{1, l, d};
  if (!shape_ok) {
    evidence.push_back("pe has shape " + shape_string(found->sizes));
    return results.fail(spec.id, fmt::format("pe must hold the whole table: ({0}, {1}) or (1, {0}, {1})", l, d),
                        evidence);
  }
  if (found->requires_grad) {
    return results.fail(spec.id, "pe requires a gradient: the table is a constant, create it without requires_grad",
                        evidence);
  }
  return results.pass(spec.id, "pe is a registered buffer of shape " + shape_string(found->sizes) +
                                   ": it moves with .to(), is saved with the module, and is never trained");
}

CheckResult odd_width(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at("odd");
  if (!kit.input().at("shape_0").response.ints.count("constructed")) {
    return results.skip(spec.id, "not assessed: your constructor throws for an even d_model too");
  }
  if (run.threw()) {
    auto message = first_line(run.error());
    // An error the even widths raise too (a device mismatch on the GPU, an
    // unfinished forward) says nothing about odd widths.
    if (const auto& even = kit.input().at("shape_0"); even.threw()) {
      return results.skip(spec.id, "not assessed: your forward fails on an even d_model too (" +
                                       first_line(even.error()) + ")");
    }
    const bool clear = kit::mentions_any(message, {"d_model", "odd", "even"});
    if (clear) return results.pass(spec.id, "an odd d_model is refused with: " + message);
    return results.fail(spec.id,
                        "an odd d_model fails with an error from inside your code: handle it (there is one more "
                        "sine channel than cosine channels) or refuse it in the constructor with a message naming "
                        "d_model",
                        {"input: " + run.describe(), "your error: " + message});
  }
  if (kit.status("odd") == kit::CaseStatus::matches) {
    return results.pass(spec.id, "an odd d_model works: the last channel is a sine");
  }
  return kit.explain(spec.id, "odd");
}

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, keys_of(bends()));
  suite->extra_cases(add_probe);
  suite->custom("encoding_pattern", encoding_pattern);
  suite->custom("registered_buffer", registered_buffer);
  suite->custom("odd_width", odd_width);
  return suite;
}

}  // namespace grader::exercise_positional_encoding
