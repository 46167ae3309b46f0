#include "checks/kit/kit.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "checks/kit/helpers.h"
#include "base/errors.h"
#include "report/report.h"

namespace grader::kit {

namespace {

std::map<std::string, double> quantities_of(const AttentionProbe& probe) {
  std::map<std::string, double> out;
  for (const auto& [name, expression] : probe.quantities) out[name] = evaluate(expression, probe.dims);
  return out;
}

}  // namespace

// The factor c of softmax(c * q.k) read from the probe's weights on `run`,
// or why none can be read: the weights must be a distribution (over the keys,
// or over the queries), positive where the softmax gives weight, and follow
// softmax(c * q.k) for one constant c. Weights that do not (a head layout
// that mixes tokens, a mask on an unmasked probe) say nothing about scale or
// mask, whatever they sum to.
Kit::ScaleFit Kit::fit_scale(const CaseRun& run, const at::Tensor& weights) const {
  ScaleFit fit;
  auto w = weights.to(at::kDouble);
  const double want = 1.0 / std::sqrt(evaluate(probe_->head_dim, probe_->dims));
  auto rows = w.sum(-1);
  const double low = rows.min().item<double>(), high = rows.max().item<double>();
  const bool distribution = std::abs(low - 1) < 1e-6 && std::abs(high - 1) < 1e-6;
  // A softmax over the queries has its scale too, read along the queries
  // (the softmax check names the axis).
  fit.over_queries = !distribution && (w.sum(-2) - 1).abs().max().item<double>() < 1e-6;
  if (!distribution && !fit.over_queries && !(near(low, high) && (near(low, want) || near(low, 1 / want)))) {
    fit.unreadable = "your attention weights are not a distribution over the keys, so no scale can be read from them "
                     "(see the softmax check)";
    return fit;
  }
  // The weights a softmax over the keys gives weight: all, or under a causal
  // exercise's own mask the keys up to the query's position (key 0 always).
  auto kept =
      probe_->causal ? at::ones({w.size(-2), w.size(-1)}, at::kBool).tril().expand_as(w) : at::ones_like(w, at::kBool);
  if (probe_->causal && fit.over_queries) {
    fit.unreadable = "your softmax normalises over the queries (see the softmax check)";
    return fit;
  }
  if (!(w.masked_select(kept) > 0).all().item<bool>() || !at::isfinite(w).all().item<bool>()) {
    fit.unreadable = std::string("some attention weights are zero, negative or not finite ") +
                     (probe_->causal ? "at keys a query may see" : "without a mask") +
                     ", so no scale can be read from them (see the other checks)";
    return fit;
  }
  // log(w_ij / w_i0) = scale * a_i * (b_j - b_0) for a softmax over the keys of scale * q.k
  // (over the queries: log(w_ij / w_0j) = scale * (a_i - a_0) * b_j).
  auto a = run.request.tensor("probe.a"), b = run.request.tensor("probe.b");
  auto x = fit.over_queries ? ((a - a.narrow(-1, 0, 1)).unsqueeze(-1) * b.unsqueeze(1)).unsqueeze(1).expand_as(w)
                            : (a.unsqueeze(-1) * (b - b.narrow(-1, 0, 1)).unsqueeze(1)).unsqueeze(1).expand_as(w);
  auto y = fit.over_queries ? w.log() - w.narrow(-2, 0, 1).log() : w.log() - w.narrow(-1, 0, 1).log();
  x = x.masked_select(kept);
  y = y.masked_select(kept);
  fit.scale = (x * y).sum().item<double>() / (x * x).sum().item<double>();
  fit.fitted = x.numel();
  const double residual = (y - x * fit.scale).abs().max().item<double>();
  if (residual > 1e-6 * std::max(1.0, y.abs().max().item<double>())) {
    fit.unreadable = "your attention weights do not follow softmax(c * q.k) over the keys for any single constant c "
                     "(see the other checks)";
  }
  return fit;
}

CheckResult Kit::attention_scale(const CheckSpec& spec) const {
  const auto& run = input_->at(probe_case("scale"));
  if (auto why = not_runnable(run)) return results_.skip(spec.id, "not assessed: " + *why);
  std::string why;
  auto weights = probe_->read(run, why);
  if (!weights) return results_.skip(spec.id, "not assessed: " + why);
  const auto fit = fit_scale(run, *weights);
  if (fit.unreadable) return results_.skip(spec.id, "not assessed: " + *fit.unreadable);
  const double want = 1.0 / std::sqrt(evaluate(probe_->head_dim, probe_->dims));
  const double scale = fit.scale;
  const bool over_queries = fit.over_queries;
  const auto quantities = quantities_of(*probe_);
  std::vector<std::string> evidence = {"input: " + run.describe(),
                                       over_queries
                                           ? "measured from the ratios of your attention weights along the queries, "
                                             "where your softmax normalises: log(w_ij / w_0j) = c * (q_i.k_j - "
                                             "q_0.k_j), fitted over " +
                                                 std::to_string(fit.fitted) + " weights"
                                           : "measured from the ratios of your attention weights: log(w_ij / w_i0) = "
                                             "c * (q_i.k_j - q_i.k_0), fitted over " +
                                                 std::to_string(fit.fitted) + " weights"};
  if (std::abs(scale - want) <= 1e-6 * want) {
    return results_.pass(spec.id, "your scores are multiplied by " + name_scale(scale, quantities, false));
  }
  return results_.fail(spec.id,
                       "your scores were multiplied by " + name_scale(scale, quantities) + "; expected " +
                           name_scale(want, quantities, false),
                       evidence);
}

CheckResult Kit::attention_axis(const CheckSpec& spec) const {
  const auto& run = input_->at(probe_case("scale"));
  if (auto why = not_runnable(run)) return results_.skip(spec.id, "not assessed: " + *why);
  std::string why;
  auto weights = probe_->read(run, why);
  if (!weights) return results_.skip(spec.id, "not assessed: " + why);
  auto w = weights->to(at::kDouble);
  if (at::isnan(w).any().item<bool>()) {
    return results_.skip(spec.id, "not assessed: some of your attention weights are NaN (see the other checks)");
  }
  auto ones = [](const at::Tensor& sums) { return (sums - 1).abs().max().item<double>() < 1e-6; };
  std::vector<std::string> evidence = {"input: " + run.describe()};
  auto rows = w.sum(-1);
  if (ones(rows)) return results_.pass(spec.id, "each query's weights over the keys sum to 1");
  evidence.push_back(fmt::format("sums over the keys range from {} to {}", number(rows.min().item<double>()),
                                 number(rows.max().item<double>())));
  if (ones(w.sum(-2))) {
    return results_.fail(spec.id,
                         "the weights sum to 1 over the queries, not over the keys: the softmax runs over the query "
                         "axis (dim -2); each query's weights must be a distribution over the keys (dim -1)",
                         evidence);
  }
  if (w.size(1) > 1 && ones(w.sum(1))) {
    return results_.fail(spec.id,
                         "the weights sum to 1 over the heads: the softmax runs over the head axis (dim 1), "
                         "not over the keys (dim -1)",
                         evidence);
  }
  if (ones(w.sum({-2, -1}))) {
    return results_.fail(spec.id,
                         "the weights sum to 1 over all (query, key) pairs together: the softmax runs over a "
                         "flattened score matrix, not over each query's keys",
                         evidence);
  }
  const double low = rows.min().item<double>(), high = rows.max().item<double>();
  if (near(low, high)) {
    const auto quantities = quantities_of(*probe_);
    const double want = 1.0 / std::sqrt(evaluate(probe_->head_dim, probe_->dims));
    if (near(low, want) || near(low, 1 / want)) {
      auto result = results_.fail(spec.id,
                                  "the factor " + name_scale(low, quantities) +
                                      " is applied after the softmax (to the weights, the values or the output) "
                                      "instead of to the scores before it",
                                  evidence);
      result.focus_point = "scaling";
      return result;
    }
    return results_.fail(spec.id,
                         "the weights are a softmax, then multiplied by " + name_scale(low, quantities) +
                             ": something scales the weights, the values or the output after the softmax",
                         evidence);
  }
  if (!probe_->direct) {
    return results_.skip(spec.id,
                         "not assessed: the attention weights read from your output are not a distribution "
                         "over the keys, in no pattern the grader recognises (see the other checks)");
  }
  return results_.fail(spec.id, "each query's weights must be a distribution over the keys (softmax over dim -1)",
                       evidence);
}

CheckResult Kit::attention_mask(const CheckSpec& spec) const {
  const auto& run = input_->at(probe_case("mask"));
  if (auto why = not_runnable(run)) return results_.skip(spec.id, "not assessed: " + *why);
  std::string why;
  auto weights = probe_->read(run, why);
  if (!weights) return results_.skip(spec.id, "not assessed: " + why);
  auto w = weights->to(at::kDouble);
  // Without a mask the weights must be a distribution over the keys, or a mask cannot be judged from them.
  {
    const auto& plain = input_->at(probe_case("scale"));
    std::string unused;
    auto unmasked = not_runnable(plain) ? std::nullopt : probe_->read(plain, unused);
    if (!unmasked || (unmasked->to(at::kDouble).sum(-1) - 1).abs().max().item<double>() > 1e-6) {
      return results_.skip(spec.id,
                           "not assessed: even without a mask your attention weights are not a distribution "
                           "over the keys (see the softmax check), so masking cannot be measured on them");
    }
    // Weights that follow no softmax(c * q.k) without a mask (tokens mixed
    // across heads by the split) cannot show what a mask did either.
    if (const auto fit = fit_scale(plain, *unmasked); fit.unreadable) {
      return results_.skip(spec.id,
                           "not assessed: without a mask your attention weights already follow no softmax(c * q.k) "
                           "over the keys (see the scale check), so what a mask does cannot be read from them");
    }
  }
  auto hidden = (run.request.tensor("probe.mask") == 0).expand_as(w);
  auto masked = w.masked_select(hidden), kept = w.masked_select(~hidden);
  auto rows = w.sum(-1);
  std::vector<std::string> evidence = {"input: " + run.describe()};
  const auto masked_nonzero = masked.ne(0).sum().item<int64_t>();
  if (masked_nonzero == 0) {
    if ((rows - 1).abs().max().item<double>() < 1e-6) {
      return results_.pass(spec.id, "masked keys get exactly zero weight and each row still sums to 1");
    }
    evidence.push_back(fmt::format("row sums range from {} to {}", number(rows.min().item<double>()),
                                   number(rows.max().item<double>())));
    return results_.fail(spec.id,
                         "masked weights are zero but the rows no longer sum to 1: the mask is applied after the "
                         "softmax without renormalising; mask the scores with -inf before the softmax",
                         evidence);
  }
  evidence.push_back(fmt::format("{} of {} masked weights are not 0 (largest {:.3g})", masked_nonzero, masked.numel(),
                                 masked.abs().max().item<double>()));
  if (kept.eq(0).all().item<bool>()) {
    return results_.fail(spec.id,
                         "the mask is inverted: keys with mask == 1 get zero weight and masked keys get it all; "
                         "mask == 0 means 'do not attend'",
                         evidence);
  }
  // The masked keys' effective logits, relative to key 0 (never masked) on the
  // scale fitted to the kept keys.
  auto a = run.request.tensor("probe.a"), b = run.request.tensor("probe.b");
  auto gap = (a.unsqueeze(-1) * b.unsqueeze(1)).unsqueeze(1).expand_as(w);  // raw q.k
  auto x = (gap - gap.narrow(-1, 0, 1)).masked_select(~hidden);
  auto safe = at::where(w > 0, w, at::ones_like(w));
  auto y_all = safe.log() - safe.narrow(-1, 0, 1).log();
  auto y = y_all.masked_select(~hidden);
  const double c = (x * y).sum().item<double>() / std::max(1e-300, (x * x).sum().item<double>());
  const bool positive = (w > 0).all().item<bool>();
  if (positive && (y - x * c).abs().max().item<double>() < 1e-6 * std::max(1.0, y.abs().max().item<double>())) {
    // logit_m = log(w_m / w_0) + c * gap_0.
    auto logits = (y_all + gap.narrow(-1, 0, 1) * c).masked_select(hidden);
    auto unmasked = (gap * c).masked_select(hidden);
    const double spread = (logits.max() - logits.min()).item<double>();
    if ((logits - unmasked).abs().max().item<double>() < 1e-6) {
      return results_.fail(
          spec.id, "the mask has no effect: masked keys get exactly the weight they would get without it", evidence);
    }
    if ((logits - (unmasked - 1)).abs().max().item<double>() < 1e-6) {
      return results_.fail(spec.id,
                           "the 0/1 mask is added to the scores: kept keys gain 1, masked keys keep their score; a "
                           "0/1 mask is not an additive bias, use masked_fill(mask == 0, -inf)",
                           evidence);
    }
    if (spread < 1e-6) {
      const double fill = logits.mean().item<double>();
      return results_.fail(spec.id,
                           fmt::format("masked scores were set to {} instead of -inf, so masked keys still get weight "
                                       "exp({})/Z; fill with -inf (or the dtype's lowest value) so their weight is "
                                       "exactly 0",
                                       number(fill), number(fill)),
                           evidence);
    }
  }
  return results_.fail(
      spec.id, "masked keys must get exactly zero weight (fill their scores with -inf before the softmax)", evidence);
}

std::vector<AttentionFigure> Kit::draw_figures(const JudgeInput& input) {
  input_ = &input;
  references_.clear();
  std::vector<AttentionFigure> out;
  if (!probe_) return out;
  for (const std::string which : {"mask", "scale"}) {
    auto found = input.cases.find(probe_case(which));
    if (found == input.cases.end()) continue;
    const auto& run = found->second;
    AttentionFigure figure;
    figure.title = which == "mask" ? "probe with a padding mask" : "probe without a mask";
    figure.input = run.describe();
    figure.source = probe_->direct
                        ? "the weights your function returned"
                        : "read from your module's output: the probe's weights make the value projection copy a "
                          "one-hot token id into each head and the output projection the identity, so each head's "
                          "output is its attention weights (anything else your code does to the values shows too)";
    if (auto why = not_runnable(run)) {
      figure.note = *why;
      out.push_back(std::move(figure));
      continue;
    }
    std::string why;
    auto learner = probe_->read(run, why);
    if (!learner) {
      figure.note = "no weights to draw: " + why;
      out.push_back(std::move(figure));
      continue;
    }
    // The reference answers the same request; its outputs go through the same reading.
    CaseRun answer{run.request, {}, {}, {}};
    for (const auto& [name, tensor] : expected(run)) answer.response.tensors[name] = tensor;
    auto reference = probe_->read(answer, why);
    if (!reference) throw GraderFault("the reference's weights cannot be read on " + run.describe() + ": " + why);
    auto mine = learner->to(at::kDouble), theirs = reference->to(at::kDouble);
    if (mine.sizes() != theirs.sizes() || mine.dim() != 4) {
      figure.note =
          "your weights have shape " + shape_string(mine.sizes()) + ", the reference's " + shape_string(theirs.sizes());
      out.push_back(std::move(figure));
      continue;
    }
    auto difference = at::nan_to_num((mine - theirs).abs(), std::numeric_limits<double>::infinity(),
                                     std::numeric_limits<double>::infinity());
    const auto where = difference.flatten().argmax().item<int64_t>();
    const int64_t per_batch = mine.size(1) * mine.size(2) * mine.size(3), per_head = mine.size(2) * mine.size(3);
    figure.batch = where / per_batch;
    figure.head = (where % per_batch) / per_head;
    figure.max_difference = difference.max().item<double>();
    auto rows = [](const at::Tensor& matrix) {
      std::vector<std::vector<double>> values(matrix.size(0), std::vector<double>(matrix.size(1)));
      auto access = matrix.accessor<double, 2>();
      for (int64_t i = 0; i < matrix.size(0); ++i) {
        for (int64_t j = 0; j < matrix.size(1); ++j) values[i][j] = access[i][j];
      }
      return values;
    };
    figure.learner = rows(mine[figure.batch][figure.head].contiguous());
    figure.reference = rows(theirs[figure.batch][figure.head].contiguous());
    figure.masked_keys.assign(mine.size(3), false);
    if (run.request.tensors.count("probe.mask")) {
      auto keep = run.request.tensor("probe.mask").reshape({mine.size(0), -1});
      for (int64_t j = 0; j < mine.size(3); ++j) figure.masked_keys[j] = (keep[figure.batch][j] == 0).item<bool>();
    }
    out.push_back(std::move(figure));
  }
  // The case that shows the mistake best first.
  std::stable_sort(out.begin(), out.end(), [](const AttentionFigure& x, const AttentionFigure& y) {
    return x.max_difference > y.max_difference;
  });
  return out;
}

}  // namespace grader::kit
