// Parent side of exercise_kv_cache: the reference with its replayable cache
// mistakes, and three checks on what the driver saw between the calls of a
// multi-step case: the cache's shape after every call (and after
// reset_cache()), the cached keys against the keys rotated at their
// positions, and the matrix-product work of each one-token call against the
// number of cached tokens. Everything else is exercise.yaml and the kit.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <vector>

#include "checks/kit/kit.h"
#include "kv_cache.h"
#include "rotary.h"

namespace grader::exercise_kv_cache {
namespace {

using reference::KvCacheVariant;
// A bend gets the case's dim and num_heads.
using Bend = std::function<void(KvCacheVariant&, double dim, double heads)>;

// Each replayable mistake of exercise.yaml, as a bend of the reference.
const std::map<std::string, Bend>& bends() {
  static const std::map<std::string, Bend> table = {
      {"positions_restart", [](auto& v, double, double) { v.positions_restart = true; }},
      {"cached_keys_unrotated", [](auto& v, double, double) { v.cached_keys_unrotated = true; }},
      {"cache_replaced", [](auto& v, double, double) { v.cache_replaced = true; }},
      {"chunk_unmasked", [](auto& v, double, double) { v.chunk_unmasked = true; }},
      {"chunk_mask_top_left", [](auto& v, double, double) { v.chunk_mask_top_left = true; }},
      {"chunk_mask_prompt_only", [](auto& v, double, double) { v.chunk_mask_prompt_only = true; }},
      {"diagonal_hidden", [](auto& v, double, double) { v.diagonal_hidden = true; }},
      {"diagonal_hidden_first_kept", [](auto& v, double, double) { v.diagonal_hidden_first_kept = true; }},
      {"diagonal_hidden_first_open", [](auto& v, double, double) { v.diagonal_hidden_first_open = true; }},
      {"reset_ignored", [](auto& v, double, double) { v.reset_ignored = true; }},
      {"values_rotated", [](auto& v, double, double) { v.values_rotated = true; }},
      {"no_scaling", [](auto& v, double, double) { v.scale = 1.0; }},
      {"float32_scale", [](auto& v, double dim, double heads) { v.scale = kit::float32_inverse_sqrt(dim / heads); }},
      {"float32_sqrt", [](auto& v, double dim, double heads) { v.scale = kit::inverse_of_float32_sqrt(dim / heads); }},
      {"scaled_by_dim", [](auto& v, double dim, double) { v.scale = 1.0 / std::sqrt(dim); }},
      {"scaled_by_head_dim", [](auto& v, double dim, double heads) { v.scale = heads / dim; }},
      {"no_rope", [](auto& v, double, double) { v.no_rope = true; }},
      {"keys_unrotated", [](auto& v, double, double) { v.keys_unrotated = true; }},
      {"rope_interleaved", [](auto& v, double, double) { v.rope.interleaved = true; }},
      // theta_i = 10000^(-2i / dim) is 10000^(-(2 / heads) i / head_dim).
      {"rope_frequencies_over_dim", [](auto& v, double, double heads) { v.rope.exponent = 2.0 / heads; }},
  };
  return table;
}

// The correct answer is the one-pass causal forward, whatever the schedule;
// a mistake is replayed call by call.
kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  const auto& x = data.inputs.at("x");
  const auto heads = data.dims.at("H");
  if (mistakes.empty()) return {{"output", reference::causal_self_attention(x, data.params, heads)}};
  KvCacheVariant variant;
  for (const auto& mistake : mistakes) {
    bends().at(mistake)(variant, static_cast<double>(data.dims.at("D")), static_cast<double>(heads));
  }
  auto found = data.inputs.find("previous");
  const at::Tensor previous = found == data.inputs.end() ? at::Tensor() : found->second;
  return {{"output", reference::cached_decoding(x, previous, data.params, heads, data.dims.at("first"),
                                                data.dims.at("step"), variant)}};
}

// One call the driver made, as its response lists them.
struct Call {
  std::string label;             // "previous", "reset", or "x <begin> <count>"
  int64_t begin = 0, count = 0;  // the tokens of x it fed
  bool feeds_x = false;
  bool near = false;  // a call of the second module of a timed case (driver.cpp: `near`)
  std::optional<std::vector<int64_t>> k, v;  // the cache's shapes after it; nothing: undefined
  double macs = -1;                          // matrix-product multiply-adds inside it (-1: not recorded)
  double elements = -1;                      // elements of the new tensors its own operator calls returned
  double cpu = -1;                           // seconds of the process's CPU time inside it
  bool threw = false;                        // the call threw after leaving the cache so
};

std::optional<std::vector<int64_t>> parse_shape(const std::string& text) {
  if (text == "undefined") return std::nullopt;
  std::vector<int64_t> sizes;
  std::string inner = text.size() >= 2 ? text.substr(1, text.size() - 2) : "";
  std::istringstream in(inner);
  for (std::string part; std::getline(in, part, ',');) sizes.push_back(std::stoll(part));
  return sizes;
}

std::string shape_text(const std::optional<std::vector<int64_t>>& shape) {
  return shape ? shape_string(*shape) : "undefined";
}

std::vector<Call> calls_of(const CaseRun& run) {
  std::vector<Call> calls;
  std::istringstream shapes(run.response.string_or("cache_shapes", ""));
  for (std::string line; std::getline(shapes, line);) {
    const auto at_k = line.find(" k="), at_v = line.find(" v=");
    if (at_k == std::string::npos || at_v == std::string::npos) continue;
    Call call;
    // A call that threw is noted with what it left in the cache, marked at the end.
    const std::string threw_mark = " threw";
    if (line.size() > threw_mark.size() &&
        line.compare(line.size() - threw_mark.size(), threw_mark.size(), threw_mark) == 0) {
      call.threw = true;
      line.resize(line.size() - threw_mark.size());
    }
    call.label = line.substr(0, at_k);
    call.k = parse_shape(line.substr(at_k + 3, at_v - at_k - 3));
    call.v = parse_shape(line.substr(at_v + 3));
    std::istringstream label(call.label);
    std::string what;
    label >> what;
    if (what == "x" || what == "near") {
      call.feeds_x = what == "x";
      call.near = what == "near";
      label >> call.begin >> call.count;
    }
    calls.push_back(call);
  }
  // The work of each call, in the order the driver made them ("calls" lists
  // every call, including one that threw before its shapes were noted). The
  // multiply-adds are the larger of the count by operator name and the count
  // of what BLAS computed (a product reached through an operator the names
  // miss, at::_convolution say).
  std::istringstream labels(run.response.string_or("calls", ""));
  std::vector<std::string> call_labels;
  for (std::string label; std::getline(labels, label);) call_labels.push_back(label);
  const auto measured = run.trace().scope_work;
  for (size_t i = 0; i < calls.size() && i < measured.size() && i < call_labels.size(); ++i) {
    if (call_labels[i] != calls[i].label) break;
    calls[i].macs = std::max(measured[i].macs, measured[i].computed);
    calls[i].elements = measured[i].elements;
    calls[i].cpu = measured[i].cpu_ns * 1e-9;
  }
  return calls;
}

std::string tokens_text(const Call& call) {
  return call.count == 1 ? fmt::format("token {}", call.begin)
                         : fmt::format("tokens {}..{}", call.begin, call.begin + call.count - 1);
}

std::optional<CheckResult> unusable(const kit::Kit& kit, const CheckSpec& spec, const CaseRun& run) {
  if (run.threw()) return kit.results().threw(spec.id, run);
  if (auto why = kit.not_runnable(run)) return kit.results().skip(spec.id, "not assessed: " + *why);
  return std::nullopt;
}

// What a cache of the wrong shape says, as far as its shape tells.
std::string wrong_cache(const std::string& name, const std::optional<std::vector<int64_t>>& got,
                        const std::vector<int64_t>& want, int64_t fed_now) {
  if (!got) return name + " is undefined: store the keys and values of every call";
  const auto& g = *got;
  const bool layout = g.size() == 4 && g[0] == want[0] && g[1] == want[1] && g[3] == want[3];
  if (!layout) {
    return fmt::format(
        "{} is {}, not (B, H, tokens, head_dim) = {}: keep the cache as (B, H, tokens, head_dim), "
        "the keys after the head split",
        name, shape_string(g), shape_string(want));
  }
  if (g[2] == fed_now && want[2] > fed_now) {
    return fmt::format(
        "{} holds only the {} token(s) of the last call, not all {} fed so far: the cache is replaced "
        "instead of extended; append with torch::cat({{cache, new}}, 2)",
        name, g[2], want[2]);
  }
  return fmt::format("{} holds {} tokens after {} were fed: each call must add exactly its own tokens", name, g[2],
                     want[2]);
}

// After every call of x the cache is (B, H, P, head_dim), P the tokens fed.
CheckResult cache_growth(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  int64_t checked = 0;
  for (const auto& id : spec.cases) {
    const auto& run = kit.input().at(id);
    // A call that threw still shows what it left in the cache: a wrong shape
    // there is the cause to name, before the error it led to.
    if (!run.threw()) {
      if (auto result = unusable(kit, spec, run)) return *result;
    }
    const auto dims = kit.data_of(run).dims;
    const int64_t batch = dims.at("B"), heads = dims.at("H"), head_dim = dims.at("D") / heads;
    std::vector<std::string> evidence{"input: " + run.describe()};
    int64_t fed = 0;
    for (const auto& call : calls_of(run)) {
      if (!call.feeds_x) continue;
      fed += call.count;
      const std::vector<int64_t> want{batch, heads, fed, head_dim};
      evidence.push_back(fmt::format("after the call with {}: k_cache {}, v_cache {}; expected {}{}", tokens_text(call),
                                     shape_text(call.k), shape_text(call.v), shape_string(want),
                                     call.threw ? " (the call then threw: " + run.error() + ")" : ""));
      for (const auto& [name, got] : {std::pair{"k_cache", call.k}, std::pair{"v_cache", call.v}}) {
        if (!got || *got != want) return results.fail(spec.id, wrong_cache(name, got, want, call.count), evidence);
      }
      ++checked;
    }
    if (run.threw()) return results.threw(spec.id, run);
  }
  return results.pass(spec.id, fmt::format("after each of {} calls k_cache and v_cache held exactly the tokens fed "
                                           "so far, as (B, H, P, head_dim)",
                                           checked));
}

// After reset_cache() the cache is empty, and the first call refills it from 0.
CheckResult cache_reset(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  for (const auto& id : spec.cases) {
    const auto& run = kit.input().at(id);
    if (auto result = unusable(kit, spec, run)) return *result;
    const auto calls = calls_of(run);
    const auto previous = kit.data_of(run).dims.at("R");
    for (const auto& call : calls) {
      if (call.label != "reset") continue;
      auto holds = [](const std::optional<std::vector<int64_t>>& shape) {
        return shape && !shape->empty() && std::all_of(shape->begin(), shape->end(), [](int64_t s) { return s > 0; });
      };
      if (holds(call.k) || holds(call.v)) {
        return results.fail(spec.id,
                            fmt::format("after reset_cache() the cache still holds tokens (k_cache {}, v_cache {}, "
                                        "after a previous sequence of {}): set k_cache and v_cache to undefined "
                                        "tensors (torch::Tensor()) so the next sequence starts empty",
                                        shape_text(call.k), shape_text(call.v), previous),
                            {"input: " + run.describe()});
      }
      return results.pass(spec.id, "after reset_cache() the cache was empty (k_cache " + shape_text(call.k) + ")");
    }
    return results.skip(spec.id, "not assessed: the case made no reset_cache() call (" + run.describe() + ")");
  }
  return results.skip(spec.id, "not assessed: no case");
}

// Where each token of x was fed: the first token of its call.
std::vector<int64_t> call_begins(const CaseRun& run, int64_t tokens) {
  std::vector<int64_t> begins(tokens, 0);
  for (const auto& call : calls_of(run)) {
    for (int64_t t = call.begin; call.feeds_x && t < call.begin + call.count && t < tokens; ++t) begins[t] = call.begin;
  }
  return begins;
}

// The token m != n whose expected entry the learner's entry n matches, if any.
std::optional<int64_t> other_token(const at::Tensor& expected, const at::Tensor& learner, int64_t n,
                                   const Tolerance& tolerance) {
  for (int64_t m = 0; m < expected.size(2); ++m) {
    if (m != n && compare(expected.narrow(2, m, 1), learner.narrow(2, n, 1), tolerance).ok) return m;
  }
  return std::nullopt;
}

std::string token_list(const std::vector<int64_t>& tokens) {
  std::string list;
  for (size_t i = 0; i < tokens.size() && i < 12; ++i) list += (list.empty() ? "" : " ") + std::to_string(tokens[i]);
  return tokens.size() > 12 ? list + " ..." : list;
}

// The final cache (k_cache with option which: keys, v_cache with values)
// against what it must hold: every token's key rotated at its own position,
// every token's value, oldest first. What a key alone reveals is told apart:
// no rotation, rotation at the token's place within its call, another
// token's entry, a scaled key.
CheckResult cache_contents(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const bool keys_wanted = spec.option("which", "keys") == "keys";
  const std::string name = keys_wanted ? "k_cache" : "v_cache";
  std::vector<std::string> passed;
  for (const auto& id : spec.cases) {
    const auto& run = kit.input().at(id);
    if (auto result = unusable(kit, spec, run)) return *result;
    const auto data = kit.data_of(run);
    const int64_t heads = data.dims.at("H"), tokens = data.dims.at("N");
    std::string why;
    auto got = learner_tensor(run, name, why);
    if (!got) return results.skip(spec.id, "not assessed: " + why);
    const auto& x = data.inputs.at("x");
    const auto cache = reference::cache_contents(x, data.params, heads);
    const auto& expected = keys_wanted ? cache.keys : cache.values;
    const auto& raw = cache.projected_keys;
    if (got->sizes() != expected.sizes()) {
      return results.skip(spec.id, "not assessed: the final " + name + " is " + shape_string(got->sizes()) + ", not " +
                                       shape_string(expected.sizes()) + " (see the cache's shape check)");
    }
    const auto tolerance = kit.exercise().tolerance(run.request.string_or("dtype", "float64"));
    auto learner = got->to(at::kDouble);
    const auto begins = call_begins(run, tokens);
    std::vector<int64_t> differing;
    bool all_raw = true, all_restarted = true, all_interleaved = true, any_call_restarts = false;
    std::string first_detail;
    for (int64_t n = 0; n < tokens; ++n) {
      auto mine = learner.narrow(2, n, 1);
      auto comparison = compare(expected.narrow(2, n, 1), mine, tolerance);
      if (comparison.ok) continue;
      if (differing.empty()) first_detail = fmt::format("token {}: {}", n, comparison.detail);
      differing.push_back(n);
      if (!keys_wanted) continue;
      // A rotation at 0 is no rotation: a hypothesis holds when every differing token fits it.
      const auto key = raw.narrow(2, n, 1);
      all_raw = all_raw && compare(key, mine, tolerance).ok;
      all_restarted = all_restarted && compare(reference::apply_rope(key, n - begins[n]), mine, tolerance).ok;
      reference::RopeVariant interleaved;
      interleaved.interleaved = true;
      all_interleaved = all_interleaved && compare(reference::apply_rope(key, n, interleaved), mine, tolerance).ok;
      any_call_restarts = any_call_restarts || n - begins[n] > 0;
    }
    if (differing.empty()) {
      passed.push_back(fmt::format("{} tokens on {}", tokens, id));
      continue;
    }
    std::vector<std::string> evidence{"input: " + run.describe(),
                                      "tokens whose cached entry differs: " + token_list(differing), first_detail};
    const auto n = differing.front();
    if (auto m = other_token(expected, learner, n, tolerance)) {
      auto result = results.fail(
          spec.id,
          fmt::format("{} holds token {}'s {} where token {}'s belongs: keep the tokens in order, oldest first, "
                      "appending each call's tokens at the end",
                      name, *m, keys_wanted ? "key" : "value", n),
          evidence);
      result.focus_point = "cache_append";
      return result;
    }
    if (!keys_wanted) {
      return results.fail(spec.id,
                          fmt::format("v_cache's entry for token {} is not v_proj's value of that token: the cache "
                                      "must hold every token's value, (B, H, P, head_dim), as it was projected",
                                      n),
                          evidence);
    }
    if (all_restarted && any_call_restarts) {
      return results.fail(
          spec.id,
          fmt::format("the cached keys are rotated at their places within their own call, not at their positions in "
                      "the sequence (token {} at {} instead of {}): a call's tokens continue after the {} cached ones",
                      n, n - begins[n], n, begins[n]),
          evidence);
    }
    if (all_interleaved) {
      return results.fail(spec.id,
                          "the cached keys are rotated in the interleaved convention (channel 2i paired with 2i + 1); "
                          "this exercise uses rotate-half: channel i paired with i + head_dim/2",
                          evidence);
    }
    if (all_raw) {
      return results.fail(spec.id,
                          fmt::format("the cached key of token {} is k_proj's output before RoPE: cache the keys "
                                      "after rotating them at their positions, so later calls use them as they are",
                                      n),
                          evidence);
    }
    // RoPE turns pairs of channels and keeps their norms: a key with the same
    // pair norms is this token's key turned by another angle.
    const auto pair_norms = [](const at::Tensor& t) {
      const auto half = t.size(-1) / 2;
      return (t.narrow(-1, 0, half).pow(2) + t.narrow(-1, half, half).pow(2)).sqrt();
    };
    const auto want_norms = pair_norms(raw.narrow(2, n, 1)), my_norms = pair_norms(learner.narrow(2, n, 1));
    if (compare(want_norms, my_norms, tolerance).ok) {
      return results.fail(spec.id,
                          fmt::format("the cached key of token {} is its key rotated by another angle than position "
                                      "{}'s: rotate q and k at positions P .. P + T - 1",
                                      n, n),
                          evidence);
    }
    // One factor on every norm: the cache holds scaled keys.
    const auto ratio = (my_norms / want_norms.clamp_min(1e-300)).flatten();
    const double factor = ratio.mean().item<double>();
    const bool uniform = (ratio - factor).abs().max().item<double>() <= 1e-6 * std::abs(factor) + 1e-12;
    const double head_dim = static_cast<double>(data.dims.at("D") / heads);
    auto result = results.fail(
        spec.id,
        uniform ? fmt::format("the cached keys are the rotated keys times {}: cache them as they are and apply the "
                              "scale to the scores (or the queries)",
                              kit::name_scale(factor, {{"head_dim", head_dim}}, false))
                : fmt::format("the cached key of token {} is not k_proj's key of that token at any position (its "
                              "pair norms differ), nor another token's: the cache must hold each token's key after "
                              "RoPE, nothing else",
                              n),
        evidence);
    result.focus_point = "cache_append";
    return result;
  }
  std::string list;
  for (const auto& p : passed) list += (list.empty() ? "" : ", ") + p;
  return results.pass(spec.id,
                      keys_wanted ? "every cached key is its token's key rotated at the token's position (" + list + ")"
                                  : "every cached value is its token's value, in order (" + list + ")");
}

// The work of the one-token calls against the tokens cached before them.
// Attention over P cached keys costs 2 x B x D multiply-adds per key (q.k and
// the weighted values, over every head) and writes a few elements per key
// and head, appending to the cache copies 2 x B x D elements per cached
// token; projecting a cached token again costs D^2 multiply-adds (or, written
// element by element, D^2 elements) per projection. The allowances sit far
// below one D x D projection per cached token (D = 64: 32 times attention).
// The median second difference of `field` over consecutive one-token calls
// (each one cached token further than the one before): 0 where the work grows
// linearly with the cache, a constant > 0 where it grows with its square.
double typical_second_difference(const std::vector<Call>& calls, double Call::*field) {
  std::vector<double> seconds;
  for (size_t i = 2; i < calls.size(); ++i) {
    const auto &a = calls[i - 2], &b = calls[i - 1], &c = calls[i];
    if (b.begin != a.begin + 1 || c.begin != b.begin + 1) continue;
    seconds.push_back(c.*field - 2 * b.*field + a.*field);
  }
  if (seconds.empty()) return 0;
  std::nth_element(seconds.begin(), seconds.begin() + static_cast<long>(seconds.size() / 2), seconds.end());
  return seconds[seconds.size() / 2];
}

CheckResult work_per_call(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at(spec.cases.at(0));
  if (auto result = unusable(kit, spec, run)) return *result;
  if (!run.recording_intact()) {
    return results.fail(spec.id,
                        "the operator trace was switched off during the calls, so their work cannot be "
                        "measured: leave LibTorch's RecordFunction alone");
  }
  const auto dims = kit.data_of(run).dims;
  const double batch = static_cast<double>(dims.at("B")), dim = static_cast<double>(dims.at("D"));
  std::vector<Call> single;
  for (const auto& call : calls_of(run)) {
    if (call.feeds_x && call.count == 1 && call.begin > 0 && call.macs >= 0) single.push_back(call);
  }
  if (single.size() < 2) {
    return results.skip(spec.id, "not assessed: fewer than two one-token calls were traced on " + run.describe());
  }
  // Least squares over every one-token call: a cache that grows in steps
  // (a buffer doubled when full) is judged by its average growth.
  auto slope_of = [&](double Call::*field) {
    double mean_p = 0, mean_w = 0;
    for (const auto& call : single) {
      mean_p += static_cast<double>(call.begin);
      mean_w += call.*field;
    }
    mean_p /= static_cast<double>(single.size());
    mean_w /= static_cast<double>(single.size());
    double covariance = 0, variance = 0;
    for (const auto& call : single) {
      covariance += (static_cast<double>(call.begin) - mean_p) * (call.*field - mean_w);
      variance += (static_cast<double>(call.begin) - mean_p) * (static_cast<double>(call.begin) - mean_p);
    }
    return covariance / variance;
  };
  const double mac_slope = slope_of(&Call::macs), element_slope = slope_of(&Call::elements);
  const double attention = 2 * batch * dim, mac_allowance = 6 * attention, element_allowance = 16 * batch * dim;
  const auto& a = single.front();
  const auto& b = single.back();
  const auto& middle = single[single.size() / 2];
  auto at = [](const Call& call, double Call::*field) {
    return fmt::format("{:.0f} with {} tokens cached", call.*field, call.begin);
  };
  std::vector<std::string> evidence{
      "input: " + run.describe(),
      fmt::format("multiply-adds of matrix products in a one-token call: {}, {}, {}", at(a, &Call::macs),
                  at(middle, &Call::macs), at(b, &Call::macs)),
      fmt::format("elements of the tensors your calls made: {}, {}, {}", at(a, &Call::elements),
                  at(middle, &Call::elements), at(b, &Call::elements)),
      fmt::format("growth per cached token: {:.0f} multiply-adds (attention over the cache needs 2 x B x dim = {:.0f}; "
                  "allowed {:.0f}), {:.0f} elements (allowed 16 x B x dim = {:.0f})",
                  mac_slope, attention, mac_allowance, element_slope, element_allowance)};
  const double per_projection = batch * dim * dim;
  if (mac_slope > mac_allowance) {
    const double projections = (mac_slope - attention) / per_projection;
    const double whole = std::round(projections);
    if (whole >= 1 && std::abs(projections - whole) < 0.25) {
      return results.fail(
          spec.id,
          fmt::format("each cached token adds {:.0f} multiply-adds to a one-token call, {:.0f} more than attention "
                      "over it needs: exactly the cost of {:.0f} D x D projection(s) of every cached token, so the "
                      "cached tokens are projected again at every call. Project only the new tokens and read the "
                      "earlier keys and values from the cache",
                      mac_slope, mac_slope - attention, whole),
          evidence);
    }
    return results.fail(spec.id,
                        fmt::format("each cached token adds {:.0f} multiply-adds to a one-token call, {:.1f} times "
                                    "what attention over the cache needs: more than the new token's attention is "
                                    "computed over the earlier tokens at every call",
                                    mac_slope, mac_slope / attention),
                        evidence);
  }
  if (element_slope > element_allowance) {
    const double projections = element_slope / per_projection;
    return results.fail(
        spec.id,
        fmt::format("each cached token adds {:.0f} elements to what a one-token call computes, {:.1f} x B x dim^2: "
                    "{}. Project only the new tokens and read the earlier keys and values from the cache",
                    element_slope, projections,
                    projections >= 0.75 ? "the size of a D x D projection of every cached token, written element by "
                                          "element, so the cached tokens are processed again at every call"
                                        : "far more than appending to the cache and attending over it need"),
        evidence);
  }
  // Counted call by call, not fitted: work that grows with the square of the
  // cache (an (S, S) mask of the whole sequence made and sliced at every
  // call) hides under the slope allowance over a few dozen tokens, but its
  // second difference between consecutive calls is a constant > 0, where a
  // cache that grows linearly (or doubles a buffer now and then) gives 0.
  if (const auto curvature = typical_second_difference(single, &Call::elements); curvature >= 1) {
    evidence.push_back(fmt::format("the growth itself grows: the elements made by consecutive one-token calls differ "
                                   "by {:.0f} more at each cached token (0 for work linear in the cache)",
                                   curvature));
    return results.fail(spec.id,
                        fmt::format("a one-token call makes tensors whose size grows with the square of the cached "
                                    "tokens (about {:.0f} x P^2 / 2 elements at P cached tokens): something the size "
                                    "of (P, P), a causal mask of the whole sequence say, is made at every call; "
                                    "a decoding step needs only its own row of it, or none",
                                    curvature),
                        evidence);
  }
  // The CPU time of each call, by the kernel's clock of every thread: work
  // done in loops of the code's own, with no operator or BLAS call, shows
  // there. Judged on the check's last case (large D: a projection costs many
  // times the attention over a token), where each one-token call comes right
  // after one of a second module with fewer tokens cached: the difference of
  // each such pair, per token cached more, read by its median.
  std::string cpu_note;
  if (spec.cases.size() > 1 && !kit.target().on_gpu()) {
    const auto& timed = kit.input().at(spec.cases.back());
    if (auto result = unusable(kit, spec, timed)) return *result;
    const auto timed_calls = calls_of(timed);
    std::vector<kit::CpuPair> pairs;
    for (size_t i = 1; i < timed_calls.size(); ++i) {
      const auto &near = timed_calls[i - 1], &far = timed_calls[i];
      if (near.near && near.count == 1 && far.feeds_x && far.count == 1 && near.cpu >= 0 && far.cpu >= 0) {
        pairs.push_back({static_cast<double>(near.begin), near.cpu, static_cast<double>(far.begin), far.cpu});
      }
    }
    if (const auto growth = kit::cpu_growth_per_token(pairs)) {
      const auto timed_dims = kit.data_of(timed).dims;
      const double projection = kit::projection_cpu_seconds(timed_dims.at("B"), timed_dims.at("D"));
      evidence.push_back(fmt::format(
          "CPU time of one-token calls on {} (the kernel's count, every thread of your process), each with {} "
          "tokens cached right after one with {} (a second module): {:.0f} us against {:.0f} us (the medians); "
          "growth per cached token {:.2f} us; one D x D projection of a token takes {:.2f} us here (LibTorch's "
          "matrix product, float64)",
          timed.describe(), static_cast<int64_t>(pairs.front().far_tokens),
          static_cast<int64_t>(pairs.front().near_tokens), kit::median_of(pairs, &kit::CpuPair::far_seconds) * 1e6,
          kit::median_of(pairs, &kit::CpuPair::near_seconds) * 1e6, *growth * 1e6, projection * 1e6));
      if (const auto projections = kit::projections_per_token(*growth, projection); projections && *projections < 0) {
        return results.fail(
            spec.id,
            fmt::format("a one-token call with more tokens cached takes {:.1f} us less CPU time per token than one with "
                        "fewer, as long as {:.1f} D x D projections of a token: the calls of one module do work that "
                        "grows with another module's cache. Each module's call should do its own work: project only "
                        "its new tokens and read its earlier keys and values from its own cache",
                        -*growth * 1e6, -*projections),
            evidence);
      }
      if (const auto projections = kit::projections_per_token(*growth, projection)) {
        return results.fail(
            spec.id,
            fmt::format("each cached token adds {:.1f} us of CPU time to a one-token call, as long as {:.1f} D x D "
                        "projections of a token take here, where attending over it needs a small part of one: "
                        "something is computed again over the whole cache at every call, outside LibTorch's "
                        "matrix products (loops of your own count too). Project only the new tokens and read the "
                        "earlier keys and values from the cache",
                        *growth * 1e6, *projections),
            evidence);
      }
      cpu_note = fmt::format("; its CPU time grows by {:.2f} us per cached token ({:.2f} of a D x D projection)",
                             *growth * 1e6, *growth / projection);
    }
  }
  return results.pass(spec.id, fmt::format("a one-token call grows by {:.0f} multiply-adds and {:.0f} elements per "
                                           "cached token: only the attention over the cache grows{}",
                                           mac_slope, element_slope, cpu_note));
}

// Where the code puts each query, read from the outputs of a case: token n's
// output is matched against the reference's with that token's query turned at
// each position p (the keys at their own, every earlier key visible, as the
// causal mask leaves them whatever the calls). A token whose output several
// positions reproduce (the first: one key, so its weight is 1 wherever the
// query sits) says nothing and is left out; a case is judged where every
// other token matches exactly one position.
struct QueryReading {
  std::optional<std::string> unreadable;  // why the case says nothing
  std::vector<int64_t> positions, want;   // per judged token: where its query sits, where it should
  std::vector<std::string> shown;         // per token: its position, or "any"
};

QueryReading read_query_positions(const kit::Kit& kit, const CaseRun& run) {
  QueryReading reading;
  if (auto why = kit.not_runnable(run)) {
    reading.unreadable = *why;
    return reading;
  }
  std::string why;
  auto output = learner_tensor(run, "output", why);
  if (!output) {
    reading.unreadable = why;
    return reading;
  }
  const auto data = kit.data_of(run);
  const auto& x = data.inputs.at("x");
  if (output->sizes() != x.sizes()) {
    reading.unreadable = "the output has shape " + shape_string(output->sizes());
    return reading;
  }
  const auto heads = data.dims.at("H"), n = x.size(1);
  auto got = output->to(at::kDouble);
  for (int64_t token = 0; token < n; ++token) {
    std::vector<std::pair<double, int64_t>> errors;
    for (int64_t p = 0; p < n + 8; ++p) {
      auto row = reference::output_with_query_at(x, data.params, heads, token, p);
      errors.emplace_back((got.narrow(1, token, 1) - row).abs().max().item<double>(), p);
    }
    const double scale = std::max(1.0, got.narrow(1, token, 1).abs().max().item<double>());
    const auto probe = kit::read_probe(std::move(errors), 1e-6 * scale);
    if (probe.kind == kit::ProbeReading::Kind::none) {
      reading.unreadable = fmt::format("token {}'s output matches the reference's with its query at no position (so "
                                       "something else differs too; see the other checks)",
                                       token);
      return reading;
    }
    if (probe.kind == kit::ProbeReading::Kind::several) {
      reading.shown.push_back("any");
      continue;
    }
    reading.positions.push_back(probe.value);
    reading.want.push_back(token);
    reading.shown.push_back(std::to_string(probe.value));
  }
  if (reading.positions.empty()) reading.unreadable = "no token's output here depends on where its query sits";
  return reading;
}

// How the case fed x: "one per call", "calls of 3".
std::string schedule_text(const kit::Dims& dims) {
  const auto first = dims.at("first"), step = dims.at("step");
  if (first == 1 && step == 1) return "one per call";
  if (first == step) return fmt::format("in calls of {}", first);
  return fmt::format("a first call of {}, then calls of {}", first, step);
}

CheckResult query_positions(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  std::optional<std::string> first_unreadable;
  std::vector<std::string> judged;
  for (const auto& id : spec.cases) {
    const auto& run = kit.input().at(id);
    const auto reading = read_query_positions(kit, run);
    if (reading.unreadable) {
      if (!first_unreadable) first_unreadable = *reading.unreadable;
      continue;
    }
    const auto dims = kit.data_of(run).dims;
    const auto schedule = schedule_text(dims);
    if (reading.positions == reading.want) {
      judged.push_back(schedule);
      continue;
    }
    const int64_t n = static_cast<int64_t>(reading.shown.size());
    const auto begins = call_begins(run, n);
    const bool from_zero =
        std::all_of(reading.positions.begin(), reading.positions.end(), [](int64_t p) { return p == 0; });
    bool at_call_start = true;
    for (size_t k = 0; k < reading.positions.size(); ++k) {
      at_call_start &= reading.positions[k] == begins[static_cast<size_t>(reading.want[k])];
    }
    std::vector<int64_t> every(static_cast<size_t>(n));
    std::iota(every.begin(), every.end(), 0);
    std::string message;
    if (from_zero) {
      message = "every call turns its query as position 0, whatever the cache holds: a token's query sits at the "
                "number of cached tokens + its index in the call, like its key";
    } else if (at_call_start) {
      message = "every query of a call is turned at the call's first position (the number of cached tokens), not "
                "at its own: the t-th token of a call sits at P + t, like its key";
    } else {
      message = "the queries are turned at other positions than their own: a token's query sits at the number of "
                "cached tokens + its index in the call, like its key";
    }
    return results.fail(spec.id, message,
                        {"input: " + run.describe(),
                         fmt::format("token n = 0 .. {} ({}), its query turned as position (measured from its "
                                     "output, the keys at their own positions): {}; where it sits: {}",
                                     n - 1, schedule, fmt::join(reading.shown, ", "), fmt::join(every, ", "))});
  }
  if (judged.empty()) {
    return results.skip(spec.id, "not assessed: " + first_unreadable.value_or("no case"));
  }
  return results.pass(spec.id, fmt::format("each query is turned at its own position in the sequence (measured from "
                                           "the outputs, tokens fed {})",
                                           fmt::join(judged, " and ")));
}

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, keys_of(bends()));
  suite->custom("cache_growth", cache_growth);
  suite->custom("cache_reset", cache_reset);
  suite->custom("cache_contents", cache_contents);
  suite->custom("work_per_call", work_per_call);
  suite->measurement("query_positions", query_positions);
  return suite;
}

}  // namespace grader::exercise_kv_cache
