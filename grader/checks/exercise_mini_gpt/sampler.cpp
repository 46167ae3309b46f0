// exercise_mini_gpt's sampler: next_token_probs on crafted logits, one case
// per feature (greedy, a temperature alone, top-k alone and at V, top-p alone,
// all three), compared with the reference; a wrong distribution is named by
// the known mistake that gives it on every case, else described by what is
// measured (the row sums, the tokens kept).
#include <ATen/ATen.h>
#include <fmt/format.h>

#include <functional>
#include <map>
#include <optional>

#include "base/errors.h"
#include "mini_gpt_checks.h"

namespace grader::exercise_mini_gpt {
namespace {

namespace key = wire::key;

const std::map<std::string, std::function<void(reference::SamplerVariant&)>>& sampler_bends() {
  static const std::map<std::string, std::function<void(reference::SamplerVariant&)>> table = {
      {"temperature_after_softmax", [](auto& v) { v.temperature_after_softmax = true; }},
      {"temperature_ignored", [](auto& v) { v.temperature_ignored = true; }},
      {"top_k_keeps_one_more", [](auto& v) { v.top_k_shift = 1; }},
      {"top_k_keeps_one_fewer", [](auto& v) { v.top_k_shift = -1; }},
      {"top_p_drops_crossing", [](auto& v) { v.top_p_drops_crossing = true; }},
      {"top_p_before_temperature", [](auto& v) { v.top_p_before_temperature = true; }},
      {"top_p_before_top_k", [](auto& v) { v.top_p_before_top_k = true; }},
  };
  return table;
}

// A feature's case: its setting (top_p 0: chosen clear of the running sums),
// the mistakes it must tell apart, and the features it builds on (a failure
// there explains one here).
struct Feature {
  std::string id;
  Setting setting;
  std::vector<std::string> shows;
  std::vector<std::string> builds_on;
  // The case that differs from this one in this feature alone: where it runs
  // right and this one throws, the error is this feature's.
  std::string sibling;
};

const std::vector<Feature>& features() {
  static const std::vector<Feature> table = {
      {"greedy", {0, 0, 1}, {}, {}, "temperature"},
      {"temperature", {0.6, 0, 1}, {"temperature_after_softmax", "temperature_ignored"}, {}, "greedy"},
      {"top_k", {1, 3, 1}, {"top_k_keeps_one_more", "top_k_keeps_one_fewer"}, {"temperature"}, "temperature"},
      {"top_k_all", {1, 15, 1}, {}, {"temperature"}, "top_k"},  // 15 >= V = 10: every token kept
      // The k-th largest logit repeated in rows 0 and 1: both copies are kept.
      {"top_k_tie", {1, 3, 1}, {}, {"temperature"}, "top_k"},
      {"top_p", {1, 0, 0}, {"top_p_drops_crossing"}, {"temperature"}, "temperature"},
      {"combined",
       {0.7, 6, 0},
       {"top_p_drops_crossing", "top_p_before_temperature", "top_p_before_top_k"},
       {"temperature", "top_k", "top_p"},
       ""},
  };
  return table;
}

const Feature& feature_named(const std::string& id) {
  for (const auto& feature : features()) {
    if (feature.id == id) return feature;
  }
  throw ConfigError("exercise_mini_gpt: a sampler_probs check names the feature '" + id + "', which has no case");
}

// The distribution top-p sees under `s` (temperature and top-k applied), per row.
at::Tensor before_top_p(const at::Tensor& logits, const Setting& s) {
  return reference::next_token_probs(logits, s.temperature, s.top_k, 1);
}

// A top_p at least 0.02 away from every running sum of the sorted
// probabilities (so that rounding cannot move a token across it), with a
// nucleus of two tokens or more in some row (so that the crossing token
// matters); nothing when no candidate is.
std::optional<double> clear_top_p(const at::Tensor& probs) {
  auto sorted = std::get<0>(probs.sort(-1, true));
  auto sums = sorted.cumsum(-1);
  for (double p : {0.75, 0.7, 0.8, 0.65, 0.85, 0.6, 0.9}) {
    if ((sums - p).abs().min().item<double>() < 0.02) continue;
    if (((sums - sorted) < p).sum(-1).max().item<int64_t>() >= 2) return p;
  }
  return std::nullopt;
}

// Whether each of `mistakes` gives its own distribution on `logits` under
// `s`, apart from the reference's and from each other's: so that a wrong
// sampler is named as itself on every seed.
bool tells_apart(const at::Tensor& logits, const Setting& s, const std::vector<std::string>& mistakes) {
  std::vector<at::Tensor> seen = {reference::next_token_probs(logits, s.temperature, s.top_k, s.top_p)};
  for (const auto& mistake : mistakes) {
    auto bent = reference::next_token_probs(logits, s.temperature, s.top_k, s.top_p, sampler_variant(mistake));
    for (const auto& other : seen) {
      if ((bent - other).abs().max().item<double>() < 1e-3) return false;
    }
    seen.push_back(bent);
  }
  return true;
}

// Where a temperature and top-p meet, the nucleus must depend on the
// temperature: the tokens kept with it applied once differ from those kept
// with it applied twice, so that a sampler that scales again before choosing
// the nucleus shows on every seed.
bool nucleus_follows_temperature(const at::Tensor& logits, const Setting& s) {
  if (s.temperature == 0 || s.temperature == 1 || s.top_p >= 1) return true;
  const auto once = reference::next_token_probs(logits, s.temperature, s.top_k, s.top_p);
  const auto twice = reference::next_token_probs(logits / s.temperature, s.temperature, s.top_k, s.top_p);
  return !at::equal(once > 0, twice > 0);
}

wire::Record probs_record(const std::string& feature, const at::Tensor& logits, const Setting& s, int64_t seed) {
  wire::Record record;
  record.strings["case"] = probs_case(feature);
  record.strings["kind"] = "forward";
  record.strings["task"] = "probs";
  record.strings["dtype"] = "float64";
  record.strings["outputs"] = "probs\n";
  record.ints["seed"] = seed;
  record.ints["train"] = 0;
  record.tensors[key::input("logits")] = logits;
  record.reals["temperature"] = s.temperature;
  record.ints["top_k"] = s.top_k;
  record.reals["top_p"] = s.top_p;
  record.strings["describe"] = fmt::format("next_token_probs on logits of shape ({}, {}), {}", logits.size(0),
                                           logits.size(1), setting_text(s));
  return record;
}

Setting setting_of(const CaseRun& run) {
  return {run.request.real("temperature"), run.request.integer("top_k"), run.request.real("top_p")};
}

at::Tensor expected_probs(const CaseRun& run, const reference::SamplerVariant& variant = {}) {
  const auto s = setting_of(run);
  return reference::next_token_probs(run.request.tensor(key::input("logits")), s.temperature, s.top_k, s.top_p,
                                     variant);
}

std::string kept_counts(const at::Tensor& probs) {
  auto kept = (probs > 0).sum(-1);
  std::string text;
  for (int64_t row = 0; row < kept.size(0); ++row) text += (row ? ", " : "") + std::to_string(kept[row].item<int64_t>());
  return text;
}

}  // namespace

std::vector<std::string> sampler_mistakes() { return keys_of(sampler_bends()); }

reference::SamplerVariant sampler_variant(const std::string& mistake) {
  reference::SamplerVariant variant;
  sampler_bends().at(mistake)(variant);
  return variant;
}

std::string probs_case(const std::string& feature) { return "probs~" + feature; }

void plan_sampler_cases(kit::Kit&, std::vector<wire::Record>& cases, at::Generator& generator) {
  int64_t seed = 900000;
  for (const auto& feature : features()) {
    std::optional<std::pair<at::Tensor, Setting>> found;
    for (int attempt = 0; attempt < 200 && !found; ++attempt) {
      auto logits = at::randn({4, 10}, generator, at::kDouble) * 1.5;
      auto setting = feature.setting;
      if (setting.top_p == 0) {
        auto p = clear_top_p(before_top_p(logits, setting));
        if (!p) continue;
        setting.top_p = *p;
      }
      // Greedy: tied maxima, which the first index wins (as torch::argmax):
      // row 0 repeats its maximum after it, row 1 before it.
      if (feature.id == "greedy") {
        for (int64_t row = 0; row < 2; ++row) {
          const auto top = logits[row].argmax().item<int64_t>();
          const auto vocab = logits.size(1);
          const auto twin = row == 0 ? (top + 1) % vocab : (top + vocab - 1) % vocab;
          logits[row][twin] = logits[row][top];
        }
      }
      if (feature.id == "top_k_tie") {
        for (int64_t row = 0; row < 2; ++row) {
          const auto order = std::get<1>(logits[row].sort(0, true));
          logits[row][order[3]] = logits[row][order[2]];  // the 4th largest equals the 3rd
        }
      }
      if (tells_apart(logits, setting, feature.shows) && nucleus_follows_temperature(logits, setting))
        found.emplace(logits, setting);
    }
    if (!found) throw ConfigError("exercise_mini_gpt: no logits found that tell the sampler's mistakes apart for " + feature.id);
    cases.push_back(probs_record(feature.id, found->first, found->second, seed++));
  }
}

bool probs_match(const kit::Kit& kit, const std::string& feature) {
  const auto& run = kit.input().at(probs_case(feature));
  std::string why;
  auto got = kit.not_runnable(run) ? std::nullopt : learner_tensor(run, "probs", why);
  if (!got) return false;
  auto want = expected_probs(run);
  return got->sizes() == want.sizes() && compare(want, got->to(at::kDouble), kit.exercise().tolerance("float64")).ok;
}

bool explains_every_probs_case(const kit::Kit& kit, const std::string& mistake) {
  const auto variant = sampler_variant(mistake);
  const auto& tolerance = kit.exercise().tolerance("float64");
  int compared = 0;
  for (const auto& feature : features()) {
    const auto& run = kit.input().at(probs_case(feature.id));
    std::string why;
    auto got = kit.not_runnable(run) ? std::nullopt : learner_tensor(run, "probs", why);
    if (!got) continue;
    auto bent = expected_probs(run, variant);
    if (got->sizes() != bent.sizes() || !compare(bent, got->to(at::kDouble), tolerance).ok) return false;
    ++compared;
  }
  return compared > 0;
}

CheckResult sampler_probs(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& feature = feature_named(spec.option("feature"));
  const auto& run = kit.input().at(probs_case(feature.id));
  const auto s = setting_of(run);
  // A step this case builds on that already fails explains a failure here.
  std::vector<std::string> failing_bases;
  for (const auto& base : feature.builds_on) {
    if (!probs_match(kit, base)) failing_bases.push_back(base);
  }
  auto consequence = [&](CheckResult result) {
    if (failing_bases.empty() || !result.mistake.empty()) return result;
    result.blames_focus = false;
    result.message = fmt::format("unexplained here: your distribution also differs on the case of {} alone, which "
                                 "this one builds on; fix that first ({})",
                                 fmt::join(failing_bases, " and "), result.message);
    return result;
  };
  if (kit.not_runnable(run)) {
    auto explained = kit.explain(spec.id, probs_case(feature.id));
    if (!explained.threw || feature.sibling.empty() || !probs_match(kit, feature.sibling)) {
      if (explained.threw) explained.blames_focus = false;
      return consequence(explained);
    }
    // No rule knows the error, but the case that differs in this feature alone runs right.
    explained.threw = false;
    explained.evidence.push_back("next_token_probs gives the reference's distribution on " +
                                 kit.input().at(probs_case(feature.sibling)).describe() +
                                 ", which differs from this case only in its " +
                                 (feature.id == "greedy" ? std::string("temperature of 0") : "setting (" + setting_text(s) + ")"));
    return explained;
  }
  std::string why;
  auto got = learner_tensor(run, "probs", why);
  if (!got) return results.fail(spec.id, "next_token_probs returned nothing usable: " + why, {"input: " + run.describe()});
  const auto want = expected_probs(run);
  std::vector<std::string> evidence = {"input: " + run.describe()};
  if (got->sizes() != want.sizes()) {
    evidence.push_back("your result has shape " + shape_string(got->sizes()) + ", expected " + shape_string(want.sizes()));
    return results.fail(spec.id, "next_token_probs must return one probability per token and row, (B, V) like its logits",
                        evidence);
  }
  auto probs = got->to(at::kDouble);
  const auto& tolerance = kit.exercise().tolerance("float64");
  const auto cmp = compare(want, probs, tolerance);
  if (cmp.ok) return results.pass(spec.id, "the reference's distribution for " + setting_text(s));
  evidence.push_back(cmp.detail);
  for (const auto& mistake : sampler_mistakes()) {
    if (lists_mistake(kit, mistake) && explains_every_probs_case(kit, mistake)) {
      evidence.push_back("the reference with this mistake gives your probabilities exactly, here and on every other "
                         "case of next_token_probs");
      return results.fail_with_mistake(spec.id, mistake, evidence);
    }
  }
  // No known mistake: what the distribution measurably is.
  if (!at::isfinite(probs).all().item<bool>()) {
    return consequence(results.fail(
        spec.id,
        s.temperature == 0 ? "at temperature 0 your probabilities are NaN or infinite: dividing the logits by a "
                             "temperature of 0 gives infinities; greedy decoding puts all the mass on the argmax"
                           : "your probabilities are NaN or infinite for " + setting_text(s),
        evidence));
  }
  auto sums = probs.sum(-1);
  evidence.push_back("tokens kept (probability > 0) per row: yours " + kept_counts(probs) + "; the reference's " +
                     kept_counts(want));
  if ((sums - 1).abs().max().item<double>() > 1e-6) {
    evidence.push_back(fmt::format("your rows sum to {:.6g} .. {:.6g} (1 expected)", sums.min().item<double>(),
                                   sums.max().item<double>()));
    return consequence(results.fail(
        spec.id,
        "your probabilities do not sum to 1 in every row: return a distribution (the softmax of the filtered logits, "
        "or filtered probabilities renormalised)",
        evidence));
  }
  if (feature.id == "top_k_tie" && probs_match(kit, "top_k")) {
    return results.fail(spec.id,
                        "where the k-th largest logit is tied, keep every logit >= the k-th (the statement's rule), "
                        "not exactly k indices as topk() returns them: compare with the k-th value instead",
                        evidence);
  }
  if (at::equal(probs > 0, want > 0)) {
    return consequence(results.fail(spec.id,
                                    "your distribution keeps the right tokens but gives them other probabilities than "
                                    "the softmax of the (temperature-scaled) logits they keep",
                                    evidence));
  }
  return consequence(results.fail(spec.id,
                                  "your distribution keeps other tokens than the reference's for " + setting_text(s) +
                                      "; no known mistake gives these probabilities",
                                  evidence));
}

}  // namespace grader::exercise_mini_gpt
