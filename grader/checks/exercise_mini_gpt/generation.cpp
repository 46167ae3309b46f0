// exercise_mini_gpt's generation: generate on a small model under a fixed
// seed (greedy, a temperature, top-k, top-p, a prompt near max_len), compared
// token for token with the reference; and the kv cache's reuse measured from
// the matrix products of generate calls of growing length. Generation is
// judged only once the logits match (a wrong model makes every token suspect).
// A difference is named by a known mistake that generates the learner's
// tokens; else placed by elimination: a sibling case that differs in one
// feature and comes out right says the difference lies in that feature.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "mini_gpt_checks.h"

namespace grader::exercise_mini_gpt {
namespace {

namespace key = wire::key;

const std::map<std::string, std::function<void(reference::DrawVariant&)>>& draw_bends() {
  static const std::map<std::string, std::function<void(reference::DrawVariant&)>> table = {
      {"argmax_when_sampling", [](auto& v) { v.argmax_when_sampling = true; }},
      {"generator_per_step", [](auto& v) { v.generator_per_step = true; }},
      {"multinomial_draw", [](auto& v) { v.multinomial = true; }},
  };
  return table;
}

std::string generation_case(const std::string& feature) { return "generate~" + feature; }

// The cases at max_len's and max_new_tokens' boundaries, and what sets each
// apart from greedy generation with room to spare.
bool at_boundary(const std::string& feature) { return feature == "stop" || feature == "full" || feature == "none"; }
std::string boundary_text(const std::string& feature) {
  if (feature == "full") return "a prompt already max_len tokens long";
  if (feature == "none") return "max_new_tokens = 0";
  return "the room left before max_len";
}
const char* const kWorkCase = "generate~work";

// Each feature's setting, the probs case whose distribution it draws from
// (none: greedy), and its sibling: the case that differs from it in that
// feature alone.
struct GenerationFeature {
  Setting setting;
  std::string probs;
  std::string sibling;
};

const std::map<std::string, GenerationFeature>& generation_features() {
  static const std::map<std::string, GenerationFeature> table = {
      {"greedy", {{0, 0, 1}, "greedy", "temperature"}},
      {"temperature", {{0.8, 0, 1}, "temperature", "greedy"}},
      {"top_k", {{1, 3, 1}, "top_k", "temperature"}},
      {"top_p", {{1, 0, 0.8}, "top_p", "temperature"}},
      {"stop", {{0, 0, 1}, "greedy", "greedy"}},
      {"full", {{0, 0, 1}, "greedy", "greedy"}},
      {"none", {{0, 0, 1}, "greedy", "greedy"}},
  };
  return table;
}

// One generation case: the model of `dims`, a prompt of N tokens, and
// generate called once per entry of `calls` (max_new_tokens) with `s`.
wire::Record generation_record(kit::Kit& kit, const std::string& id, kit::Dims dims, const Setting& s,
                               const std::vector<int64_t>& calls, at::Generator& generator, int64_t seed) {
  for (const char* unused : {"F", "S", "R", "Y"}) dims[unused] = 0;
  auto record = kit.make_case(CaseSpec{id, dims, {}}, generator, seed);
  record.tensors[key::input("prompt")] = record.tensor(key::input("tokens"));
  record.tensors.erase(key::input("tokens"));
  record.tensors.erase(key::input("previous"));
  // A peaked model: LayerNorm's output scaled by 1 and no bias in ln_f, the
  // token table with rows of order 0.3, so that the logits depend on the
  // position strongly and greedy decoding tells positions apart.
  const int64_t d = dims.at("D");
  record.tensors[key::param("ln_f.weight")] = at::ones({d}, at::kDouble);
  record.tensors[key::param("ln_f.bias")] = at::zeros({d}, at::kDouble);
  record.tensors[key::param("tok_emb.weight")] = at::randn({dims.at("V"), d}, generator, at::kDouble) * 0.3;
  record.strings["task"] = "generate";
  record.strings["outputs"] = "tokens\n";
  std::string lines, counts;
  for (auto count : calls) {
    lines += fmt::format("{} {} {} {} {}\n", count, s.temperature, s.top_k, s.top_p, 1000 + seed);
    counts += (counts.empty() ? "" : ", ") + std::to_string(count);
  }
  record.strings["generations"] = lines;
  record.strings["describe"] = fmt::format(
      "generate from a prompt of shape ({}, {}), max_new_tokens {}, {}, seed {} (vocab_size {}, max_len {}, dim {}, "
      "num_heads {}, num_layers {})",
      dims.at("B"), dims.at("N"), counts, setting_text(s), 1000 + seed, dims.at("V"), dims.at("M"), dims.at("D"),
      dims.at("H"), dims.at("L"));
  return record;
}

// The settings of the i-th generate call of a case.
reference::GenerationSettings settings_of(const CaseRun& run, int64_t max_len, size_t call = 0) {
  std::istringstream lines(run.request.string("generations"));
  std::string line;
  for (size_t i = 0; i <= call; ++i) std::getline(lines, line);
  std::istringstream fields(line);
  reference::GenerationSettings s;
  s.max_len = max_len;
  fields >> s.max_new_tokens >> s.temperature >> s.top_k >> s.top_p >> s.seed;
  return s;
}

// Why the logits a generation is made from cannot be trusted, if they cannot:
// any float64 case of exercise.yaml (forward's and forward_cached's logits) off.
std::optional<std::string> logits_unsettled(const kit::Kit& kit) {
  for (const auto& spec : kit.exercise().cases) {
    if (spec.trait("dtype", "float64") != "float64") continue;
    if (kit.status(spec.id) != kit::CaseStatus::matches) {
      return "not assessed: your logits differ from the reference's on " + kit.input().at(spec.id).describe() +
             " (the logits checks say how), so the tokens generated from them cannot be judged; fix the logits first";
    }
  }
  return std::nullopt;
}

// The reference's tokens for a generation case (its first call).
at::Tensor expected_tokens(const kit::Kit& kit, const CaseRun& run, const reference::SamplerVariant& sampler = {},
                           const reference::DrawVariant& draw = {}, size_t call = 0) {
  const auto data = kit.data_of(run);
  return reference::generate(run.request.tensor(key::input("prompt")), data.params, shape_of(data.dims),
                             settings_of(run, data.dims.at("M"), call), {}, sampler, draw);
}

// How the learner's generation of `feature` came out.
enum class Outcome { right, differs, threw, misshapen };

Outcome outcome_of(const kit::Kit& kit, const std::string& feature) {
  const auto& run = kit.input().at(generation_case(feature));
  if (kit.not_runnable(run)) return Outcome::threw;
  std::string why;
  auto got = learner_tensor(run, "tokens", why);
  if (!got) return Outcome::misshapen;
  auto want = expected_tokens(kit, run);
  if (got->sizes() != want.sizes()) return Outcome::misshapen;
  return at::equal(got->to(at::kLong).cpu(), want) ? Outcome::right : Outcome::differs;
}

// An unexplained failure: nothing ties it to the check's focus point.
CheckResult unexplained(const kit::Kit& kit, const CheckSpec& spec, const std::string& message,
                        std::vector<std::string> evidence) {
  evidence.push_back(kit.input().replay_hint());
  auto result = kit.results().fail(spec.id, "unexplained: " + message, std::move(evidence));
  result.blames_focus = false;
  return result;
}

CheckResult threw(const kit::Kit& kit, const CheckSpec& spec, const std::string& feature, const CaseRun& run) {
  // An error rule of exercise.yaml that knows this error says what it means.
  auto explained = kit.explain(spec.id, generation_case(feature));
  if (!explained.threw) return explained;
  const auto& about = generation_features().at(feature);
  const auto sibling = outcome_of(kit, about.sibling);
  if (sibling != Outcome::right) {
    explained.blames_focus = false;
    explained.threw = false;
    return explained;
  }
  // The sibling ran and came out right: the error is this feature's.
  auto result = kit.results().fail(
      spec.id, "your code threw an error: " + run.error().substr(0, run.error().find('\n')),
      {"input: " + run.describe(),
       "the same model generates the reference's tokens on " + kit.input().at(generation_case(about.sibling)).describe() +
           ", which differs from this case only in " +
           (at_boundary(feature) ? boundary_text(feature) : setting_text(about.setting))});
  return result;
}

}  // namespace

std::vector<std::string> draw_mistakes() { return keys_of(draw_bends()); }

void plan_generation_cases(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator& generator) {
  const kit::Dims model = {{"B", 3}, {"N", 4}, {"V", 16}, {"M", 20}, {"D", 16}, {"H", 2}, {"L", 2}};
  int64_t seed = 910000;
  for (const auto& [feature, about] : generation_features()) {
    auto dims = model;
    int64_t count = 8;
    if (feature == "stop") {
      dims["N"] = dims["M"] - 2;  // asked for 6, room for 2
      count = 6;
    } else if (feature == "full") {
      dims["N"] = dims["M"];  // asked for 3, room for none
      count = 3;
    } else if (feature == "none") {
      count = 0;
    }
    cases.push_back(generation_record(kit, generation_case(feature), dims, about.setting, {count}, generator, seed++));
  }
  // The work of generate against the number of tokens it makes (greedy), on
  // one model, its sizes drawn so that no file can tell the case by them.
  const auto draw = [&](int64_t low, int64_t high) { return at::randint(low, high + 1, {1}, generator).item<int64_t>(); };
  const kit::Dims work = {{"B", 1}, {"N", draw(2, 4)}, {"V", draw(14, 18)}, {"M", 28}, {"D", 16}, {"H", 2}, {"L", 2}};
  const int64_t start = draw(1, 2);
  cases.push_back(generation_record(kit, kWorkCase, work, {0, 0, 1}, {start, start + 4, start + 8, start + 12}, generator,
                                    seed++));
}

CheckResult generation(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto feature = spec.option("feature");
  const auto& about = generation_features().at(feature);
  const auto& run = kit.input().at(generation_case(feature));
  if (auto why = logits_unsettled(kit)) return results.skip(spec.id, *why);
  if (kit.not_runnable(run)) return threw(kit, spec, feature, run);
  const auto& prompt = run.request.tensor(key::input("prompt"));
  std::string why;
  auto got = learner_tensor(run, "tokens", why);
  if (!got) return results.fail(spec.id, "generate returned nothing usable: " + why, {"input: " + run.describe()});
  const auto want = expected_tokens(kit, run);
  const int64_t p = prompt.size(1), n = want.size(1) - p;
  std::vector<std::string> evidence = {"input: " + run.describe()};
  if (got->dim() != 2 || got->size(0) != want.size(0) || got->size(1) != want.size(1)) {
    evidence.push_back(fmt::format("your result has shape {}, expected {} (the prompt's {} tokens and {} new ones)",
                                   shape_string(got->sizes()), shape_string(want.sizes()), p, n));
    if (got->dim() == 2 && got->size(0) == want.size(0) && got->size(1) == n &&
        at::equal(got->to(at::kLong).cpu(), want.narrow(1, p, n))) {
      return unexplained(kit, spec,
                         "generate returned the new tokens alone (they are the reference's): return the prompt "
                         "followed by them, (B, P + n)",
                         evidence);
    }
    if (at_boundary(feature) && outcome_of(kit, about.sibling) == Outcome::right) {
      evidence.push_back("the same model generates the reference's tokens when max_len leaves room");
      return results.fail(spec.id,
                          feature == "stop"
                              ? "asked for more tokens than max_len leaves room for, generate must return exactly "
                                "max_len tokens per row: min(max_new_tokens, max_len - P) new ones"
                              : "with " + boundary_text(feature) + " generate adds no token: it returns the prompt "
                                "unchanged (min(max_new_tokens, max_len - P) = 0 new ones)",
                          evidence);
    }
    return unexplained(kit, spec,
                       "generate must return the prompt followed by the new tokens, (B, P + n) with n = "
                       "min(max_new_tokens, max_len - P)",
                       evidence);
  }
  auto tokens = got->to(at::kLong).cpu();
  if (at::equal(tokens, want)) {
    return results.pass(spec.id, fmt::format("the reference's {} new tokens for {}", n, setting_text(about.setting)));
  }
  // Where the two first part.
  int64_t first = want.size(1), row = 0;
  for (int64_t b = 0; b < want.size(0); ++b) {
    auto columns = tokens[b].ne(want[b]).nonzero();
    if (columns.numel() > 0 && columns[0].item<int64_t>() < first) {
      first = columns[0].item<int64_t>();
      row = b;
    }
  }
  if (first < p) {
    evidence.push_back(fmt::format("row {}, position {}: {} where the prompt has {}", row, first,
                                   tokens[row][first].item<int64_t>(), want[row][first].item<int64_t>()));
    return unexplained(kit, spec, "the result must start with the prompt, unchanged", evidence);
  }
  evidence.push_back(fmt::format("new token {} of row {} (position {}): yours {}, the reference's {}; every token "
                                 "before it agrees",
                                 first - p, row, first, tokens[row][first].item<int64_t>(),
                                 want[row][first].item<int64_t>()));
  if (about.setting.temperature > 0) {
    // A known mistake whose generation gives every token.
    for (const auto& mistake : sampler_mistakes()) {
      if (!lists_mistake(kit, mistake) || !explains_every_probs_case(kit, mistake)) continue;
      if (at::equal(tokens, expected_tokens(kit, run, sampler_variant(mistake)))) {
        evidence.push_back("the reference with this mistake generates your tokens exactly");
        return results.fail_with_mistake(spec.id, mistake, evidence);
      }
    }
    // A draw mistake explains sampled tokens only where the loop itself is
    // right (greedy generation gives the reference's tokens): otherwise a
    // replay can match the loop's own mistake by chance on one seed.
    const bool loop_right = outcome_of(kit, "greedy") == Outcome::right;
    for (const auto& [mistake, bend] : draw_bends()) {
      if (!loop_right || !lists_mistake(kit, mistake)) continue;
      reference::DrawVariant variant;
      bend(variant);
      if (at::equal(tokens, expected_tokens(kit, run, {}, variant))) {
        evidence.push_back("the reference with this mistake generates your tokens exactly");
        return results.fail_with_mistake(spec.id, mistake, evidence);
      }
    }
    // The distribution drawn from is wrong: that check says how.
    if (!probs_match(kit, about.probs)) {
      return unexplained(kit, spec,
                         "your next_token_probs differs from the reference's for " + setting_text(about.setting) +
                             " (see its check), so the tokens drawn from it differ too",
                         evidence);
    }
    // Greedy generation right and the distribution right: what is left is
    // what generate does only when it samples.
    if (outcome_of(kit, "greedy") == Outcome::right && outcome_of(kit, "stop") == Outcome::right) {
      evidence.push_back("greedy generation gives the reference's tokens (two cases, " +
                         std::to_string(2 * tokens.size(0)) +
                         " rows) and next_token_probs gives the reference's distribution for this setting");
      return results.fail(spec.id,
                          "the difference lies in what generate does only when it samples, the draw: one generator "
                          "per generate call, made from the seed; at each step one call u = torch::rand({B, 1}, "
                          "generator, torch::kFloat64) on the CPU, and the token is the first index whose running "
                          "sum of the float64 probabilities exceeds u",
                          evidence);
    }
  }
  return unexplained(kit, spec,
                     "your generation departs from the reference's although forward_cached gives the reference's "
                     "logits: the difference lies in generate's loop (what is fed back, which position's logits "
                     "choose the next token, how it is chosen); no known mistake generates these tokens",
                     evidence);
}

CheckResult work_per_token(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at(kWorkCase);
  if (auto why = logits_unsettled(kit)) return results.skip(spec.id, *why);
  const auto dims = kit.data_of(run).dims;
  std::vector<int64_t> counts;
  {
    std::istringstream lines(run.request.string("generations"));
    for (std::string line; std::getline(lines, line);) counts.push_back(std::stoll(line));
  }
  // Every call on the same model must generate the reference's tokens: a
  // model that generated before must start afresh (reset_cache()).
  size_t right = 0;
  for (; right < counts.size(); ++right) {
    std::string why;
    auto got = learner_tensor(run, "tokens." + std::to_string(right), why);
    auto want = expected_tokens(kit, run, {}, {}, right);
    if (!got || got->sizes() != want.sizes() || !at::equal(got->to(at::kLong).cpu(), want)) break;
  }
  if (right < counts.size()) {
    const auto stopped = run.response.string_or("stopped", "");
    if (right >= 1 && outcome_of(kit, "greedy") == Outcome::right) {
      return results.fail(
          spec.id,
          "a second generate call on the same model gives other tokens than the first would on a fresh model: "
          "generate must start with reset_cache(), so the previous call's keys and values (and its positions) are "
          "forgotten",
          {"input: " + run.describe(),
           fmt::format("call 1 (max_new_tokens {}) gives the reference's tokens; call {} (max_new_tokens {}) {}", counts[0],
                       right + 1, counts[right],
                       !stopped.empty() ? stopped.substr(stopped.find(':') + 2, stopped.find('\n') - stopped.find(':') - 2)
                                        : std::string("does not"))});
    }
    if (kit.not_runnable(run)) return results.skip(spec.id, "not measured: " + *kit.not_runnable(run));
    return results.skip(spec.id, "not measured: the generated tokens differ from the reference's (the generation "
                                 "checks say how)");
  }
  if (!run.recording_intact()) {
    return results.fail(spec.id,
                        "the operator trace was switched off during generate, so its work cannot be measured: leave "
                        "LibTorch's RecordFunction alone");
  }
  const auto& work = run.trace().scope_work;
  if (work.size() != counts.size()) {
    return results.skip(spec.id, fmt::format("not measured: {} generate calls were traced, {} expected", work.size(),
                                             counts.size()));
  }
  // Least squares of the work against n: w = a + b n + c n^2. The growth of a
  // token's cost per position before it is 2c.
  const auto n = at::tensor(std::vector<double>(counts.begin(), counts.end()), at::kDouble);
  std::vector<double> measured;
  for (const auto& w : work) measured.push_back(std::max(w.macs, w.computed));
  const auto w = at::tensor(measured, at::kDouble);
  const auto design = at::stack({at::ones_like(n), n, n * n}, 1);
  const auto fit = std::get<0>(at::linalg_lstsq(design, w.unsqueeze(1))).squeeze(1);
  const double growth = 2 * fit[2].item<double>();
  const double batch = static_cast<double>(dims.at("B")), dim = static_cast<double>(dims.at("D")),
               layers = static_cast<double>(dims.at("L"));
  const double attention = 2 * batch * dim * layers, allowance = 6 * attention;
  std::vector<std::string> evidence = {"input: " + run.describe()};
  std::string table;
  for (size_t i = 0; i < counts.size(); ++i) table += fmt::format("{}{}: {:.0f}", i ? ", " : "", counts[i], measured[i]);
  evidence.push_back("multiply-adds of matrix products of each generate call, by max_new_tokens: " + table);
  evidence.push_back(fmt::format("a generated token's cost grows by {:.0f} multiply-adds per token before it "
                                 "(attention over the cache needs 2 x B x dim x num_layers = {:.0f}; allowed {:.0f})",
                                 growth, attention, allowance));
  if (growth <= allowance) {
    return results.pass(spec.id, fmt::format("each new token costs about the same, whatever the length so far (growth "
                                             "{:.0f} multiply-adds per position, attention over the cache needs {:.0f})",
                                             growth, attention));
  }
  const double per_token = batch * layers * 12 * dim * dim;
  return results.fail(spec.id,
                      fmt::format("each generated token costs {:.0f} more multiply-adds for every token before it, "
                                  "{:.1f} times what attention over the cache needs (a whole token through the "
                                  "blocks is about {:.0f}): the sequence so far is run through the model again at "
                                  "every step. Feed the prompt once through forward_cached, then only the new token",
                                  growth, growth / attention, per_token),
                      evidence);
}

}  // namespace grader::exercise_mini_gpt
