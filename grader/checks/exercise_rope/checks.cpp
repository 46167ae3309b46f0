// Parent side of exercise_rope: the reference with its replayable mistakes,
// and the measurements that explain the rest. The learner's apply_rope is read
// as a matrix on basis vectors at two offsets (rotation_pairs,
// rotation_frequencies, rotation_positions); the relative-position property on
// a twin of a case with both offsets shifted; lengths; value as given; and the
// weights read back as a softmax of c * q k^T to tell whether attention used
// the rotated query and key and by which scale. Everything else is
// exercise.yaml and the kit.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "checks/kit/kit.h"
#include "rotary.h"

namespace grader::exercise_rope {
namespace {

using Bend = std::function<void(reference::RopeAttentionVariant&, double head_dim)>;

const std::map<std::string, Bend>& bends() {
  static const std::map<std::string, Bend> table = {
      {"interleaved_pairs", [](auto& v, double) { v.rope.interleaved = true; }},
      {"rotation_reversed", [](auto& v, double) { v.rope.reversed = true; }},
      {"sin_cos_swapped", [](auto& v, double) { v.rope.sin_cos_swapped = true; }},
      {"exponent_without_2", [](auto& v, double) { v.rope.exponent = 1.0; }},
      {"positions_from_one", [](auto& v, double) { v.rope.position_shift = 1; }},
      {"offset_ignored", [](auto& v, double) { v.rope.offset_ignored = true; }},
      {"query_offset_for_keys", [](auto& v, double) { v.query_offset_for_keys = true; }},
      {"value_rotated", [](auto& v, double) { v.value_rotated = true; }},
      {"not_rotated", [](auto& v, double) { v.not_rotated = true; }},
      {"no_scaling", [](auto& v, double) { v.sdpa.scale = 1.0; }},
      {"float32_scale", [](auto& v, double d) { v.sdpa.scale = kit::float32_inverse_sqrt(d); }},
      {"float32_sqrt", [](auto& v, double d) { v.sdpa.scale = kit::inverse_of_float32_sqrt(d); }},
      {"softmax_over_queries", [](auto& v, double) { v.sdpa.softmax_dim = -2; }},
  };
  return table;
}

kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  reference::RopeAttentionVariant variant;
  for (const auto& mistake : mistakes)
    bends().at(mistake)(variant, static_cast<double>(data.inputs.at("query").size(-1)));
  const auto query_offset = data.dims.at("query_offset"), key_offset = data.dims.at("key_offset");
  const auto &query = data.inputs.at("query"), &key = data.inputs.at("key");
  // value_rotated has no replay where value has no pairs to turn.
  if (variant.value_rotated && data.inputs.at("value").size(-1) % 2 != 0) return {};
  auto [output, weights] =
      reference::rope_attention(query, key, data.inputs.at("value"), query_offset, key_offset, variant);
  // The driver calls apply_rope itself with each tensor's own offset.
  return {{"output", output},
          {"weights", weights},
          {"rotated_query", reference::apply_rope(query, query_offset, variant.rope)},
          {"rotated_key", reference::apply_rope(key, key_offset, variant.rope)}};
}

// ---- the rotation, read on basis vectors ----
//
// Batch element c holds one token e_c, as the query at offset 2 and as the key
// at offset 1: the learner's apply_rope returns column c of its matrix at
// those positions. All correct angles stay below pi (p theta_i <= 2 radians),
// so each pair's angle is read without wrapping.
constexpr int64_t kD = 8, kHalf = kD / 2;
constexpr int64_t kQueryAt = 2, kKeyAt = 1;
const char* const kProbe = "rope_probe";
const char* const kShifted = "rope_shifted";
constexpr int64_t kShift = 37;

void add_cases(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator& generator) {
  CaseSpec spec{kProbe,
                {{"B", kD}, {"H", 1}, {"Nq", 1}, {"Nk", 1}, {"d", kD}, {"d_v", 2},
                 {"query_offset", kQueryAt}, {"key_offset", kKeyAt}},
                {}};
  auto probe = kit.make_case(spec, generator, 710001);
  auto basis = at::eye(kD, at::kDouble).reshape({kD, 1, 1, kD});
  probe.tensors[wire::key::input("query")] = basis;
  probe.tensors[wire::key::input("key")] = basis.clone();
  probe.strings["describe"] += ", batch element c holds the basis vector e_c (query at offset 2, key at offset 1)";
  cases.push_back(std::move(probe));
  // The relative-position twin: the chunk case with both offsets moved.
  auto twin = kit::planned_case(cases, "chunk", "relative_position");
  twin.strings["case"] = kShifted;
  for (const char* name : {"query_offset", "key_offset"}) {
    twin.ints[wire::key::arg(name)] += kShift;
    twin.ints[wire::key::dim(name)] += kShift;
  }
  twin.strings["describe"] += fmt::format(", both offsets + {}", kShift);
  twin.ints["seed"] = 710002;
  cases.push_back(std::move(twin));
}

double wrap(double angle) { return std::remainder(angle, 2 * M_PI); }
double theta(int64_t pair, double exponent = 2.0, double base = 10000.0) {
  return std::pow(base, -exponent * static_cast<double>(pair) / kD);
}
bool close(double a, double b, double tolerance = 1e-6) { return std::abs(a - b) <= tolerance; }

// What the probe shows of the learner's rotation.
struct Reading {
  at::Tensor at_key, at_query;  // (d, d): column c is the image of e_c at offsets 1 and 2
  std::string pairing;          // rotate_half | interleaved | none | mixed
  bool identity = false;        // both matrices are the identity: nothing turned, nothing scaled
  std::string partners;         // "0-4 1-5 ..." for the evidence
  bool rotations = false;       // every rotate-half block is [[cos, -sin], [sin, cos]] at both offsets
  std::vector<double> step;     // per pair: angle(2) - angle(1), the angle per position
  std::vector<double> start;    // per pair: angle(1) - step, the angle at offset 0
  std::string unequal;          // a pair whose members turn by different angles, described
};

std::optional<Reading> read_rotation(const kit::Kit& kit, std::string& why) {
  const auto& run = kit.input().at(kProbe);
  if (auto not_runnable = kit.not_runnable(run)) {
    why = *not_runnable;
    return std::nullopt;
  }
  auto query = learner_tensor(run, "rotated_query", why), key = learner_tensor(run, "rotated_key", why);
  if (!query || !key) return std::nullopt;
  const std::vector<int64_t> want = {kD, 1, 1, kD};
  if (query->sizes() != at::IntArrayRef(want) || key->sizes() != at::IntArrayRef(want)) {
    why = "apply_rope returned shape " + shape_string(query->sizes()) + " for x of shape (8, 1, 1, 8)";
    return std::nullopt;
  }
  Reading r;
  r.at_query = query->to(at::kDouble).reshape({kD, kD}).t().contiguous();
  r.at_key = key->to(at::kDouble).reshape({kD, kD}).t().contiguous();
  if (!at::isfinite(r.at_query).all().item<bool>() || !at::isfinite(r.at_key).all().item<bool>()) {
    why = "apply_rope returned values that are not finite on basis vectors";
    return std::nullopt;
  }
  // Which channels each input channel reaches besides itself.
  auto reach = (r.at_query.abs() > 1e-9) | (r.at_key.abs() > 1e-9);
  bool half = true, neighbour = true, none = true;
  for (int64_t c = 0; c < kD; ++c) {
    std::set<int64_t> to;
    for (int64_t o = 0; o < kD; ++o) {
      if (o != c && reach[o][c].item<bool>()) to.insert(o);
    }
    if (c < kHalf) {
      r.partners += fmt::format("{}{} with {}", r.partners.empty() ? "" : ", ", c,
                                to.empty() ? "none" : fmt::format("{}", fmt::join(to, " and ")));
    }
    half &= to == std::set<int64_t>{(c + kHalf) % kD};
    neighbour &= to == std::set<int64_t>{c ^ 1};
    none &= to.empty();
  }
  r.pairing = half ? "rotate_half" : neighbour ? "interleaved" : none ? "none" : "mixed";
  const auto eye = at::eye(kD, at::kDouble);
  r.identity = at::allclose(r.at_query, eye, 1e-9, 1e-9) && at::allclose(r.at_key, eye, 1e-9, 1e-9);
  if (!half) return r;
  r.rotations = true;
  for (int64_t i = 0; i < kHalf; ++i) {
    double angle[2];
    for (int p = 0; p < 2; ++p) {
      const auto& m = p == 0 ? r.at_key : r.at_query;
      const double a = m[i][i].item<double>(), b = m[i][i + kHalf].item<double>();
      const double c = m[i + kHalf][i].item<double>(), e = m[i + kHalf][i + kHalf].item<double>();
      const double first = std::atan2(c, a), second = std::atan2(-b, e);
      const bool unit = close(a * a + c * c, 1, 1e-6) && close(b * b + e * e, 1, 1e-6);
      if (!unit || !close(wrap(first - second), 0, 1e-6)) {
        r.rotations = false;
        if (r.unequal.empty()) {
          r.unequal = fmt::format(
              "pair ({}, {}) at offset {}: [[{:.4f}, {:.4f}], [{:.4f}, {:.4f}]], channel {} turned by {:.4f} rad "
              "and channel {} by {:.4f} rad, column lengths {:.4f} and {:.4f}",
              i, i + kHalf, p == 0 ? kKeyAt : kQueryAt, a, b, c, e, i, first, i + kHalf, second,
              std::sqrt(a * a + c * c), std::sqrt(b * b + e * e));
        }
      }
      angle[p] = first;
    }
    r.step.push_back(wrap(angle[1] - angle[0]));
    r.start.push_back(wrap(angle[0] - r.step.back()));
  }
  return r;
}

std::string list(const std::vector<double>& values) { return fmt::format("{:.5g}", fmt::join(values, ", ")); }

std::vector<double> expected_steps(double exponent = 2.0, double base = 10000.0) {
  std::vector<double> out;
  for (int64_t i = 0; i < kHalf; ++i) out.push_back(theta(i, exponent, base));
  return out;
}

bool all_close(const std::vector<double>& got, const std::vector<double>& want, double tolerance = 1e-6) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (!close(got[i], want[i], tolerance * std::max(1.0, std::abs(want[i])))) return false;
  }
  return !got.empty();
}

// Whether apply_rope changes anything on an ordinary case (tokens at positions 1..4 of shape_0).
std::optional<bool> rotates_at_all(const kit::Kit& kit) {
  const auto& run = kit.input().at("shape_0");
  std::string why;
  auto rotated = learner_tensor(run, "rotated_query", why);
  if (!rotated || rotated->sizes() != run.request.tensor(wire::key::input("query")).sizes()) return std::nullopt;
  return !at::allclose(rotated->to(at::kDouble), run.request.tensor(wire::key::input("query")), 1e-9, 1e-9);
}

CheckResult rotation_pairs(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  std::string why;
  auto r = read_rotation(kit, why);
  if (!r) return results.skip(spec.id, "not assessed: " + why);
  std::vector<std::string> evidence = {"input: " + kit.input().at(kProbe).describe(),
                                       "channels 0..3 mix with (expected i + 4): " + r->partners};
  if (r->pairing == "none") {
    if (r->identity && rotates_at_all(kit) == true) {
      return results.skip(spec.id, "not assessed: a single token at offset 1 or 2 comes back unchanged, while other "
                                   "tokens are turned (see the positions check)");
    }
    return results.fail(spec.id,
                        !r->identity ? "each channel is only multiplied by a cosine: the sine term that mixes channel i "
                                 "with channel i + d/2 is missing, so nothing is turned and lengths shrink"
                               : "apply_rope returns x unchanged: no channel is turned at any position",
                        evidence);
  }
  if (r->pairing == "interleaved") {
    return results.fail(spec.id,
                        "channel 2i turns with its neighbour 2i + 1: the RoFormer paper's interleaved layout. This "
                        "interface (like GPT-NeoX and LLaMA) pairs channel i with channel i + d/2: split x into its "
                        "two halves",
                        evidence);
  }
  if (r->pairing == "mixed") {
    return results.fail(spec.id,
                        "the channels do not form pairs: each channel i must mix with channel i + d/2 only",
                        evidence);
  }
  if (!r->rotations) {
    evidence.push_back(r->unequal);
    return results.fail(spec.id,
                        "the two channels of a pair are not turned by one angle (cos and sin of the same angle, "
                        "-sin above and +sin below): with rotate_half, the cos/sin tables must repeat the d/2 "
                        "angles as cat(angles, angles), not repeat_interleave",
                        evidence);
  }
  evidence.push_back("angle per position of each pair: " + list(r->step));
  evidence.push_back("angle at offset 0 of each pair: " + list(r->start));
  bool swapped = true, reversed = true;
  for (int64_t i = 0; i < kHalf; ++i) {
    swapped &= close(r->start[i], M_PI / 2, 1e-6);
    reversed &= r->step[i] < 0 && close(r->start[i], 0, 1e-6);
  }
  if (swapped) {
    return results.fail(spec.id,
                        "sin and cos are swapped: at offset 0 every pair is already turned by 90 degrees. The "
                        "cosine multiplies x itself and the sine the rotated copy: x cos + rotate_half(x) sin",
                        evidence);
  }
  if (reversed) {
    return results.fail(spec.id,
                        "the pairs turn clockwise (every angle is negated): rotate_half(x) is cat(-x2, x1), so the "
                        "first half loses x2 sin and the second half gains x1 sin",
                        evidence);
  }
  for (int64_t i = 0; i < kHalf; ++i) {
    if (r->step[i] < 0) {
      return results.fail(spec.id, fmt::format("pair ({}, {}) turns the other way from the others", i, i + kHalf),
                          evidence);
    }
  }
  return results.pass(spec.id, "channel i turns with channel i + d/2, counter-clockwise, by one angle per pair");
}

CheckResult rotation_frequencies(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  std::string why;
  auto r = read_rotation(kit, why);
  if (!r) return results.skip(spec.id, "not assessed: " + why);
  if (r->pairing != "rotate_half" || !r->rotations) {
    return results.skip(spec.id, "not assessed: the pairs are not turned as rotate-half rotations (see the rotation "
                                 "check)");
  }
  std::vector<double> measured;
  for (double step : r->step) measured.push_back(std::abs(step));
  if (std::all_of(measured.begin(), measured.end(), [](double s) { return s < 1e-9; })) {
    return results.skip(spec.id, "not assessed: a single token is turned by the same angle at offsets 1 and 2 (see "
                                 "the positions check)");
  }
  std::vector<std::string> evidence = {
      "input: " + kit.input().at(kProbe).describe(),
      fmt::format("measured angle per position, pairs 0..{}: {}", kHalf - 1, list(measured)),
      fmt::format("expected 10000^(-2i/{}): {}", kD, list(expected_steps()))};
  if (all_close(measured, expected_steps())) {
    return results.pass(spec.id, "pair i turns by 10000^(-2i/d) radians per position");
  }
  if (all_close(measured, expected_steps(1.0))) {
    return results.fail(spec.id,
                        "the frequencies are 10000^(-i/d): the exponent needs 2i (arange(0, d, 2) / d), so the "
                        "slowest pair turns far too fast for long-range positions",
                        evidence);
  }
  if (std::all_of(measured.begin(), measured.end(), [&](double s) { return close(s, measured[0], 1e-9); })) {
    return results.fail(spec.id,
                        fmt::format("every pair turns by the same {:.5g} radians per position: the exponent -2i/d "
                                    "came out as one constant (an integer division, 2 * i / d in int64, is 0)",
                                    measured[0]),
                        evidence);
  }
  // A geometric progression from 1 with another base?
  if (close(measured[0], 1.0, 1e-6) && measured[1] > 0 && measured[1] < 1) {
    const double base = std::pow(measured[1], -static_cast<double>(kD) / 2);
    if (all_close(measured, expected_steps(2.0, base), 1e-5)) {
      return results.fail(spec.id,
                          fmt::format("the frequencies are {:.6g}^(-2i/d): the base must be 10000, which sets the "
                                      "longest wavelength",
                                      base),
                          evidence);
    }
  }
  return results.fail(spec.id, "the angle per position of pair i must be 10000^(-2i/d) radians", evidence);
}

// The probe turns one token per call (N = 1, H = 1), so it cannot tell the
// token axis from the others. On an ordinary case with several batch
// elements, heads and tokens and an offset, each token of the learner's
// rotated query is read back as the position whose reference rotation gives
// exactly it. Where every token reads as one whole position and some are not
// at offset + n, the positions run along another axis (x read as
// (B, N, H, d): every token of head h at offset + h). Nothing is said where a
// token matches no position (the rotation differs otherwise too).
constexpr const char* kTokensCase = "prefill";

std::optional<std::string> tokens_misplaced(const kit::Kit& kit, std::vector<std::string>& evidence) {
  const auto& run = kit.input().at(kTokensCase);
  if (kit.not_runnable(run)) return std::nullopt;
  std::string why;
  auto rotated = learner_tensor(run, "rotated_query", why);
  const auto& query = run.request.tensor(wire::key::input("query"));
  if (!rotated || rotated->sizes() != query.sizes()) return std::nullopt;
  const int64_t offset = run.request.integer(wire::key::arg("query_offset"));
  const int64_t B = query.size(0), H = query.size(1), N = query.size(2), d = query.size(3), T = B * H * N;
  const int64_t last = offset + N + B + H + 8;  // the positions searched: 0 .. last
  auto tokens = query.to(at::kDouble).reshape({T, 1, 1, d});
  auto got = rotated->to(at::kDouble).reshape({T, d});
  if (!at::isfinite(got).all().item<bool>()) return std::nullopt;
  std::vector<at::Tensor> per_position;
  for (int64_t p = 0; p <= last; ++p) {
    per_position.push_back((reference::apply_rope(tokens, p).reshape({T, d}) - got).abs().amax(-1));
  }
  const auto errors = at::stack(per_position, 1).contiguous();  // (tokens, positions)
  const auto e = errors.accessor<double, 2>();
  std::vector<int64_t> read;  // index (b * H + h) * N + n
  for (int64_t t = 0; t < T; ++t) {
    std::vector<std::pair<double, int64_t>> candidates;
    for (int64_t p = 0; p <= last; ++p) candidates.emplace_back(e[t][p], p);
    const auto reading = kit::read_probe(std::move(candidates), 1e-4);
    if (reading.kind != kit::ProbeReading::Kind::one) return std::nullopt;
    read.push_back(reading.value);
  }
  auto at_ = [&](int64_t b, int64_t h, int64_t n) { return read[(b * H + h) * N + n]; };
  bool right = true, by_head = true, by_batch = true, same_per_head = true, same_per_batch = true;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t n = 0; n < N; ++n) {
        right &= at_(b, h, n) == offset + n;
        by_head &= at_(b, h, n) == offset + h;
        by_batch &= at_(b, h, n) == offset + b;
        same_per_head &= at_(b, h, n) == at_(0, h, 0);
        same_per_batch &= at_(b, h, n) == at_(b, 0, 0);
      }
    }
  }
  if (right) return std::nullopt;
  evidence.push_back("and: " + run.describe() +
                     ": apply_rope(query, query_offset), each token read back as the position whose rotation gives it");
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      std::vector<int64_t> row(read.begin() + (b * H + h) * N, read.begin() + (b * H + h + 1) * N);
      evidence.push_back(fmt::format("batch element {}, head {}: tokens 0..{} turned as positions {}", b, h, N - 1,
                                     fmt::join(row, " ")));
    }
  }
  std::vector<int64_t> want;
  for (int64_t n = 0; n < N; ++n) want.push_back(offset + n);
  evidence.push_back(fmt::format("expected offset + n = {} for every batch element and head", fmt::join(want, " ")));
  const std::string fix =
      "x is (B, H, N, d): the tokens are x.size(-2), and the (N, d/2) angles line up with the last two axes of x "
      "(token n at offset + n in every head and batch element)";
  if (by_head || (same_per_head && H > 1)) {
    return fmt::format("every token of a head is turned as one position, which changes with the head{}: the "
                       "positions run along the head axis. {}",
                       by_head ? " (head h at offset + h)" : "", fix);
  }
  if (by_batch || (same_per_batch && B > 1)) {
    return fmt::format("every token of a batch element is turned as one position, which changes with the batch "
                       "element{}: the positions run along the batch axis. {}",
                       by_batch ? " (element b at offset + b)" : "", fix);
  }
  return std::string(
      "a single token is turned as its offset, but in a sequence token n is not turned as offset + n: the positions "
      "do not run along the token axis x.size(-2) of x (B, H, N, d)");
}

CheckResult rotation_positions(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  std::string why;
  auto r = read_rotation(kit, why);
  if (!r) return results.skip(spec.id, "not assessed: " + why);
  std::vector<std::string> evidence = {"input: " + kit.input().at(kProbe).describe()};
  if (r->pairing == "none" && r->identity && rotates_at_all(kit) == true) {
    return results.fail(spec.id,
                        "a single token given offset 1 or 2 comes back unturned, as if at position 0, while later "
                        "tokens are turned: the offset is ignored. Token n of x sits at position offset + n",
                        evidence);
  }
  if (r->pairing != "rotate_half" || !r->rotations) {
    return results.skip(spec.id, "not assessed: the pairs are not turned as rotate-half rotations (see the rotation "
                                 "check)");
  }
  if (std::all_of(r->step.begin(), r->step.end(), [](double s) { return std::abs(s) < 1e-9; })) {
    return results.fail(spec.id,
                        "a single token is turned by the same angle at offsets 1 and 2: the offset does not reach "
                        "the angles. Token n of x sits at position offset + n",
                        evidence);
  }
  evidence.push_back("angle at offset 0, read from offsets 1 and 2, per pair: " + list(r->start));
  bool at_zero = true;
  for (double start : r->start) at_zero &= close(start, 0, 1e-6);
  if (at_zero) {
    if (auto misplaced = tokens_misplaced(kit, evidence)) return results.fail(spec.id, *misplaced, evidence);
    return results.pass(spec.id, "a token given offset p is turned as position p");
  }
  // The same whole shift s for every pair: start = s * step.
  const double shift = r->start[0] / r->step[0];
  bool shifted = std::abs(shift - std::round(shift)) < 1e-6;
  for (int64_t i = 0; i < kHalf; ++i) shifted &= close(r->start[i], std::round(shift) * r->step[i], 1e-6);
  if (shifted && std::round(shift) != 0) {
    return results.fail(spec.id,
                        fmt::format("a token given offset p is turned as position p {:+d}: the first token of x "
                                    "sits at position offset itself (arange(offset, offset + N))",
                                    static_cast<int>(std::round(shift))),
                        evidence);
  }
  return results.skip(spec.id, "not assessed: the angle at offset 0 is not a whole number of positions (see the "
                               "rotation check)");
}

// ---- the relative-position property, lengths, value ----

CheckResult relative_position(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto &base = kit.input().at("chunk"), &shifted = kit.input().at(kShifted);
  for (const auto* run : {&base, &shifted}) {
    if (auto why = kit.not_runnable(*run)) return results.skip(spec.id, "not assessed: " + *why);
  }
  std::string why;
  auto before = learner_tensor(base, "weights", why), after = learner_tensor(shifted, "weights", why);
  if (!before || !after) return results.skip(spec.id, "not assessed: " + why);
  if (before->sizes() != after->sizes()) return results.skip(spec.id, "not assessed: the weights change shape");
  auto cmp = compare(before->to(at::kDouble), after->to(at::kDouble), kit.exercise().tolerance("float64"));
  if (cmp.ok) {
    return results.pass(spec.id, fmt::format("moving every position by {} leaves the weights unchanged", kShift));
  }
  return results.fail(spec.id,
                      fmt::format("moving every query and key position by {} changed your attention weights: the "
                                  "scores depend on where the tokens are, not only on how far apart. A rotation by "
                                  "each position (never an added vector, never a cos without its sin) makes "
                                  "q_m . k_n a function of n - m",
                                  kShift),
                      {"input: " + base.describe(), "and: " + shifted.describe(), "weights, shifted vs not: " + cmp.detail});
}

CheckResult lengths_kept(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& case_id = spec.cases.at(0);
  const auto& run = kit.input().at(case_id);
  if (auto why = kit.not_runnable(run)) return kit.explain(spec.id, case_id);
  std::string why;
  auto rotated = learner_tensor(run, "rotated_query", why);
  if (!rotated) return results.skip(spec.id, "not assessed: " + why);
  const auto& query = run.request.tensor(wire::key::input("query"));
  if (rotated->sizes() != query.sizes()) return results.skip(spec.id, "not assessed: apply_rope changes the shape");
  auto ratio = rotated->to(at::kDouble).norm(2, -1) / query.norm(2, -1);
  const double low = ratio.min().item<double>(), high = ratio.max().item<double>();
  if (close(low, 1, 1e-6) && close(high, 1, 1e-6)) {
    return results.pass(spec.id, "every token's vector keeps its length");
  }
  return results.fail(spec.id,
                      "apply_rope changes the lengths of the vectors: a rotation turns each pair by one angle and "
                      "keeps |x| (cos^2 + sin^2 = 1)",
                      {"input: " + run.describe(),
                       fmt::format("length after / before, over every token: {:.4f} to {:.4f}", low, high)});
}

CheckResult value_untouched(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& case_id = spec.cases.at(0);
  const auto& run = kit.input().at(case_id);
  if (kit.not_runnable(run)) return kit.explain(spec.id, case_id);
  std::string why;
  auto output = learner_tensor(run, "output", why), weights = learner_tensor(run, "weights", why);
  if (!output || !weights) return results.skip(spec.id, "not assessed: " + why);
  const auto& value = run.request.tensor(wire::key::input("value"));
  const auto& tolerance = kit.exercise().tolerance("float64");
  if (weights->dim() != 4 || weights->size(-1) != value.size(-2) || weights->sizes().slice(0, 2) != value.sizes().slice(0, 2) ||
      output->dim() != 4 || output->size(-1) != value.size(-1) || output->size(-2) != weights->size(-2)) {
    return results.skip(spec.id, "not assessed: the weights or the output have the wrong shape");
  }
  auto w = weights->to(at::kDouble);
  auto as_given = compare(at::matmul(w, value), output->to(at::kDouble), tolerance);
  if (as_given.ok) return results.pass(spec.id, "the output is your weights times value as given");
  std::vector<std::string> evidence = {"input: " + run.describe(), "weights @ value vs output: " + as_given.detail};
  auto rotated = reference::apply_rope(value, run.request.integer(wire::key::arg("key_offset")));
  if (compare(at::matmul(w, rotated), output->to(at::kDouble), tolerance).ok) {
    return results.fail(spec.id,
                        "the output is the weights times value ROTATED: RoPE belongs to query and key only (it "
                        "shapes the scores); multiply the weights by value as it is",
                        evidence);
  }
  return results.skip(spec.id, "not assessed: the output is not your weights times value (see the numerics checks)");
}

// The weights read back as softmax(c * S) for S = q k^T of the learner's own
// rotated query and key (or of the raw ones): log w minus its row mean is
// c * (S minus its row mean) exactly when that holds.
struct ScoreFit {
  std::string scores;  // "rotated" | "raw"
  double scale = 0;
  std::string evidence;
};

std::optional<ScoreFit> fit_scores(const kit::Kit& kit, const std::string& case_id, std::string& why) {
  const auto& run = kit.input().at(case_id);
  if (auto not_runnable = kit.not_runnable(run)) {
    why = *not_runnable;
    return std::nullopt;
  }
  auto weights = learner_tensor(run, "weights", why);
  auto rq = learner_tensor(run, "rotated_query", why), rk = learner_tensor(run, "rotated_key", why);
  if (!weights || !rq || !rk) return std::nullopt;
  const auto &query = run.request.tensor(wire::key::input("query")), &key = run.request.tensor(wire::key::input("key"));
  const std::vector<int64_t> want = {query.size(0), query.size(1), query.size(2), key.size(2)};
  if (weights->sizes() != at::IntArrayRef(want) || rq->sizes() != query.sizes() || rk->sizes() != key.sizes()) {
    why = "the weights or the rotated query and key have the wrong shape";
    return std::nullopt;
  }
  auto w = weights->to(at::kDouble);
  if (!(w > 0).all().item<bool>()) {
    why = "some weights are not positive, so they are no softmax of finite scores";
    return std::nullopt;
  }
  auto centred = [](const at::Tensor& t) { return t - t.mean(-1, true); };
  auto log_w = centred(w.log());
  auto try_scores = [&](const at::Tensor& q, const at::Tensor& k, const char* name) -> std::optional<ScoreFit> {
    auto s = centred(at::matmul(q.to(at::kDouble), k.to(at::kDouble).transpose(-2, -1)));
    const double c = (log_w * s).sum().item<double>() / (s * s).sum().item<double>();
    const double residual = (log_w - c * s).abs().max().item<double>();
    if (residual > 1e-6 * std::max(1.0, log_w.abs().max().item<double>())) return std::nullopt;
    return ScoreFit{name, c, fmt::format("log(weights) = {:.6g} * q k^T + a constant per query, within {:.2g}", c,
                                         residual)};
  };
  if (auto fit = try_scores(*rq, *rk, "rotated")) return fit;
  if (auto fit = try_scores(query, key, "raw")) return fit;
  why = "your weights are not a softmax over the keys of q k^T times a constant, for the rotated or the raw query and "
        "key";
  return std::nullopt;
}

CheckResult scores_of_rotated(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  std::string why;
  auto fit = fit_scores(kit, spec.cases.at(0), why);
  if (!fit) return results.skip(spec.id, "not assessed: " + why);
  std::vector<std::string> evidence = {"input: " + kit.input().at(spec.cases.at(0)).describe(), fit->evidence};
  if (fit->scores == "rotated") {
    return results.pass(spec.id, "the weights come from the scores of your rotated query and key");
  }
  return results.fail(spec.id,
                      "rope_attention's weights come from the raw query and key: rotate both with apply_rope (query "
                      "at query_offset, key at key_offset) before the scores",
                      evidence);
}

CheckResult scores_scale(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  std::string why;
  const auto& case_id = spec.cases.at(0);
  auto fit = fit_scores(kit, case_id, why);
  if (!fit) return results.skip(spec.id, "not assessed: " + why);
  const auto& run = kit.input().at(case_id);
  const auto d = static_cast<double>(run.request.integer(wire::key::dim("d"))), d_v = static_cast<double>(run.request.integer(wire::key::dim("d_v")));
  const std::map<std::string, double> quantities = {
      {"d", d}, {"d_v", d_v}, {"Nq", static_cast<double>(run.request.integer(wire::key::dim("Nq")))},
      {"Nk", static_cast<double>(run.request.integer(wire::key::dim("Nk")))}};
  const double want = 1.0 / std::sqrt(d);
  if (close(fit->scale, want, 1e-6)) {
    return results.pass(spec.id, "your scores are multiplied by " + kit::name_scale(want, quantities, false));
  }
  return results.fail(spec.id,
                      "your scores were multiplied by " + kit::name_scale(fit->scale, quantities) + "; expected " +
                          kit::name_scale(want, quantities, false),
                      {"input: " + run.describe(), fit->evidence});
}

// ---- where rope_attention puts the queries ----

// Each query's position as rope_attention uses it, read from its weights: the
// position p at which the reference, with the keys at key_offset + j, gives
// exactly that row of weights (only the distance to the keys shapes them).
// Nothing where a row matches no position (the scores differ otherwise too);
// -1 for a row several positions reproduce (it says nothing: one key).
std::optional<std::vector<int64_t>> query_positions_of(const CaseRun& run, const at::Tensor& weights,
                                                       int64_t search_to) {
  const auto &query = run.request.tensor(wire::key::input("query")), &key = run.request.tensor(wire::key::input("key")),
             &value = run.request.tensor(wire::key::input("value"));
  const auto key_offset = run.request.integer(wire::key::arg("key_offset"));
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < query.size(2); ++i) {
    auto row = weights.narrow(2, i, 1);
    // The closest position, where it is close (float32 tables round to about
    // 1e-7) and clearly closer than any other.
    std::vector<std::pair<double, int64_t>> errors;
    for (int64_t p = 0; p <= search_to; ++p) {
      auto want = std::get<1>(reference::rope_attention(query.narrow(2, i, 1), key, value, p, key_offset));
      errors.emplace_back((row - want).abs().max().item<double>(), p);
    }
    const auto reading = kit::read_probe(std::move(errors), 1e-5);
    if (reading.kind == kit::ProbeReading::Kind::none) return std::nullopt;
    positions.push_back(reading.kind == kit::ProbeReading::Kind::one ? reading.value : -1);
  }
  return positions;
}

CheckResult query_positions(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at(spec.cases.at(0));
  if (auto why = kit.not_runnable(run)) return results.skip(spec.id, "not assessed: " + *why);
  std::string why;
  auto weights = learner_tensor(run, "weights", why);
  if (!weights) return results.skip(spec.id, "not assessed: " + why);
  const auto dims = kit.data_of(run).dims;
  const int64_t nq = dims.at("Nq"), nk = dims.at("Nk"), qo = dims.at("query_offset"), ko = dims.at("key_offset");
  if (weights->sizes() != at::IntArrayRef({dims.at("B"), dims.at("H"), nq, nk})) {
    return results.skip(spec.id, "not assessed: the weights have shape " + shape_string(weights->sizes()));
  }
  auto positions = query_positions_of(run, weights->to(at::kDouble), qo + ko + nq + nk + 8);
  if (!positions) {
    return results.skip(spec.id, "not assessed: a query's weights match the reference's at no position of the "
                                 "query (so something else differs too; see the other checks)");
  }
  std::vector<int64_t> want;
  for (int64_t i = 0; i < nq; ++i) want.push_back(qo + i);
  // A row that says nothing is judged as its own position.
  if (std::all_of(positions->begin(), positions->end(), [](int64_t p) { return p < 0; })) {
    return results.skip(spec.id, "not assessed: no query's weights here depend on where it sits");
  }
  for (int64_t i = 0; i < nq; ++i) {
    if ((*positions)[i] < 0) (*positions)[i] = want[i];
  }
  std::vector<std::string> evidence = {
      "input: " + run.describe(),
      fmt::format("query i = 0 .. {} turned as position (measured from its weights, the keys at key_offset + j): "
                  "{}; it sits at query_offset + i: {}",
                  nq - 1, fmt::join(*positions, ", "), fmt::join(want, ", "))};
  if (*positions == want) {
    return results.pass(spec.id, "each query is turned at its own position, query_offset + i (measured from the "
                                 "weights)");
  }
  // The same start for every query: name it where it is a quantity of the call.
  const int64_t start = positions->front();
  bool from_start = true;
  for (int64_t i = 0; i < nq; ++i) from_start &= (*positions)[i] == start + i;
  std::string named;
  if (from_start) {
    const std::vector<std::pair<std::string, int64_t>> names = {
        {"key_offset", ko}, {"key_offset + Nk - Nq", ko + nk - nq}, {"query_offset + 1", qo + 1}, {"0", 0}};
    for (const auto& [name, value] : names) {
      if (value == start) {
        named = name;
        break;
      }
    }
  }
  return results.fail(
      spec.id,
      (from_start ? fmt::format("in rope_attention query i is as far from the keys as if it were at position {} + "
                                "i (the keys at key_offset + j), where it sits at query_offset + i = {} + i",
                                named.empty() || named == std::to_string(start)
                                    ? std::to_string(start)
                                    : named + " + i = " + std::to_string(start),
                                qo)
                  : std::string("in rope_attention the queries are not as far from the keys as query_offset + i "
                                "and key_offset + j make them")) +
          ": rotate the query with query_offset and the keys with key_offset",
      evidence);
}

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, keys_of(bends()));
  suite->extra_cases(add_cases);
  suite->measurement("rotation_pairs", rotation_pairs);
  suite->measurement("rotation_frequencies", rotation_frequencies);
  suite->measurement("rotation_positions", rotation_positions);
  suite->measurement("relative_position", relative_position);
  suite->measurement("scores_scale", scores_scale);
  suite->measurement("query_positions", query_positions);
  suite->custom("lengths_kept", lengths_kept);
  suite->custom("value_untouched", value_untouched);
  suite->custom("scores_of_rotated", scores_of_rotated);
  return suite;
}

}  // namespace grader::exercise_rope
