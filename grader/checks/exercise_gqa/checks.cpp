// Parent side of exercise_gqa: the reference with its replayable mistakes,
// the attention probe, and the kv-group mapping read from a probe of its
// own; everything else is exercise.yaml and the kit.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "checks/kit/kit.h"
#include "grouped_query_attention.h"

namespace grader::exercise_gqa {
namespace {

using reference::GqaVariant;
struct Sizes {
  double dim, head_dim, kv_heads;
};
using Bend = std::function<void(GqaVariant&, const Sizes&)>;

// Each replayable mistake of exercise.yaml, as a bend of the reference.
const std::map<std::string, Bend>& bends() {
  static const std::map<std::string, Bend> table = {
      {"kv_heads_tiled", [](auto& v, const Sizes&) { v.sharing = reference::KvSharing::tiled; }},
      {"no_scaling", [](auto& v, const Sizes&) { v.attention.scale = 1.0; }},
      {"float32_scale", [](auto& v, const Sizes& s) { v.attention.scale = kit::float32_inverse_sqrt(s.head_dim); }},
      {"float32_sqrt", [](auto& v, const Sizes& s) { v.attention.scale = kit::inverse_of_float32_sqrt(s.head_dim); }},
      {"scaled_by_dim", [](auto& v, const Sizes& s) { v.attention.scale = 1.0 / std::sqrt(s.dim); }},
      {"scaled_by_kv_width",
       [](auto& v, const Sizes& s) { v.attention.scale = 1.0 / std::sqrt(s.kv_heads * s.head_dim); }},
      {"softmax_over_queries", [](auto& v, const Sizes&) { v.attention.softmax_dim = -2; }},
      {"split_without_transpose", [](auto& v, const Sizes&) { v.split_transposes = false; }},
      {"merge_without_transpose", [](auto& v, const Sizes&) { v.merge_transposes = false; }},
      {"no_output_projection", [](auto& v, const Sizes&) { v.output_projection = false; }},
      {"value_from_key_projection", [](auto& v, const Sizes&) { v.value_uses_key_projection = true; }},
  };
  return table;
}

kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  const auto heads = data.dims.at("H"), kv_heads = data.dims.at("KV");
  const Sizes sizes{static_cast<double>(data.dims.at("D")), static_cast<double>(data.dims.at("D") / heads),
                    static_cast<double>(kv_heads)};
  GqaVariant variant;
  for (const auto& mistake : mistakes) bends().at(mistake)(variant, sizes);
  return {{"output",
           reference::grouped_query_attention(data.inputs.at("x"), data.params, heads, kv_heads, variant).output}};
}

// Token features 0 and 1 carry a_i and b_i, features 2 + j a one-hot token id
// and feature 2 + N a one: every query head reads feature 0 and every kv head
// feature 1 (so q.k = a_i b_j whichever kv head a query head reads), each kv
// head's values copy the token id plus the one, out_proj is the identity:
// output feature h*head_dim + j is head h's weight on token j.
kit::AttentionProbe probe() {
  constexpr int64_t B = 2, N = 5, D = 48, H = 4, KV = 2, hd = D / H;
  kit::AttentionProbe p;
  p.dims = {{"B", B}, {"N", N}, {"Nq", N}, {"Nk", N}, {"D", D}, {"H", H}, {"KV", KV}};
  p.head_dim = "D/H";
  p.quantities = {{"head_dim", "D/H"},     {"dim", "D"}, {"num_heads", "H"}, {"num_kv_heads", "KV"},
                  {"num_kv_heads*head_dim", "KV*D/H"}, {"N", "N"}};
  p.design = [](wire::Record& r, const at::Tensor& a, const at::Tensor& b, const at::Tensor&) {
    auto x = at::zeros({B, N, D}, at::kDouble);
    x.select(-1, 0).copy_(a);
    x.select(-1, 1).copy_(b);
    x.narrow(-1, 2, N).copy_(at::eye(N, at::kDouble));
    x.select(-1, 2 + N).fill_(1);
    const double unit = 1 / std::sqrt(static_cast<double>(hd));
    auto q = at::zeros({D, D}, at::kDouble), k = at::zeros({KV * hd, D}, at::kDouble),
         v = at::zeros({KV * hd, D}, at::kDouble);
    q.select(1, 0).fill_(unit);
    k.select(1, 1).fill_(unit);
    for (int64_t g = 0; g < KV; ++g) {
      for (int64_t j = 0; j <= N; ++j) v[g * hd + j][2 + j] = 1.0;
    }
    r.tensors[wire::key::input("x")] = x;
    r.tensors[wire::key::param("q_proj.weight")] = q;
    r.tensors[wire::key::param("k_proj.weight")] = k;
    r.tensors[wire::key::param("v_proj.weight")] = v;
    r.tensors[wire::key::param("out_proj.weight")] = at::eye(D, at::kDouble);
  };
  p.read = [](const CaseRun& run, std::string& why) -> std::optional<at::Tensor> {
    auto output = learner_tensor(run, "output", why);
    if (!output) return std::nullopt;
    if (output->sizes() != at::IntArrayRef({B, N, D})) {
      why = "the output has shape " + shape_string(output->sizes()) + " on the probe";
      return std::nullopt;
    }
    return output->reshape({B, N, H, hd}).transpose(1, 2).narrow(-1, 0, N);
  };
  return p;
}

// The kv-group probe: every token is e_0, the queries and keys are zero (so
// every head weighs the tokens equally, whatever its scale or softmax axis),
// kv head g's values are the code 10^g (1 + c / 16) in channel c, and
// out_proj is the identity: output slice h of any token is the values of the
// kv head query head h reads. No average of several codes over the 3 tokens
// is itself a code, so heads or tokens mixed by a wrong split show as such.
constexpr const char* kGroups = "kv_groups";
constexpr int64_t gN = 3, gD = 48, gH = 6, gKV = 3, gHd = gD / gH, gGroup = gH / gKV;

at::Tensor kv_code(int64_t g) { return std::pow(10.0, static_cast<double>(g)) * (1 + at::arange(gHd, at::kDouble) / 16); }

void add_cases(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator& generator) {
  CaseSpec spec{kGroups, {{"B", 1}, {"N", gN}, {"D", gD}, {"H", gH}, {"KV", gKV}}, {}};
  auto probe = kit.make_case(spec, generator, 720001);
  auto x = at::zeros({1, gN, gD}, at::kDouble);
  x.select(-1, 0).fill_(1);
  auto v = at::zeros({gKV * gHd, gD}, at::kDouble);
  for (int64_t g = 0; g < gKV; ++g) v.narrow(0, g * gHd, gHd).select(1, 0).copy_(kv_code(g));
  probe.tensors[wire::key::input("x")] = x;
  probe.tensors[wire::key::param("q_proj.weight")] = at::zeros({gD, gD}, at::kDouble);
  probe.tensors[wire::key::param("k_proj.weight")] = at::zeros({gKV * gHd, gD}, at::kDouble);
  probe.tensors[wire::key::param("v_proj.weight")] = v;
  probe.tensors[wire::key::param("out_proj.weight")] = at::eye(gD, at::kDouble);
  probe.strings["describe"] +=
      ", every token e_0, zero q_proj and k_proj, kv head g's values 10^g (1 + c/16) in channel c, out_proj the identity";
  cases.push_back(std::move(probe));
}

std::string heads_list(const std::vector<int64_t>& kv) { return fmt::format("{}", fmt::join(kv, " ")); }

CheckResult kv_groups(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at(kGroups);
  if (auto why = kit.not_runnable(run)) return results.skip(spec.id, "not assessed: " + *why);
  std::string why;
  auto output = learner_tensor(run, "output", why);
  if (!output) return results.skip(spec.id, "not assessed: " + why);
  if (output->sizes() != at::IntArrayRef({1, gN, gD})) {
    return results.skip(spec.id, "not assessed: the output has shape " + shape_string(output->sizes()) +
                                     " on the probe (see output_shape)");
  }
  auto slices = output->to(at::kDouble).contiguous().reshape({gN, gH, gHd});
  // Which kv head's code each (token, head) slice is, -1 for none.
  std::vector<int64_t> read(gH, -2);
  for (int64_t n = 0; n < gN; ++n) {
    for (int64_t h = 0; h < gH; ++h) {
      int64_t found = -1;
      for (int64_t g = 0; g < gKV; ++g) {
        if (at::allclose(slices[n][h], kv_code(g), 1e-6, 1e-6)) found = g;
      }
      if (found < 0) {
        return results.skip(
            spec.id, fmt::format("not assessed: on the probe, query head {}'s output at token {} is not the values of "
                                 "any one kv head ({:.4g}, expected one of the codes 10^g (1 + c/16)): the heads are "
                                 "mixed before or after attention (see the other checks)",
                                 h, n, fmt::join(std::vector<double>(slices[n][h].data_ptr<double>(),
                                                                     slices[n][h].data_ptr<double>() + gHd),
                                                 " ")));
      }
      if (n > 0 && read[h] != found) {
        return results.skip(spec.id,
                            "not assessed: every token of the probe is the same, yet the heads' outputs differ "
                            "between tokens (is the merge back to (B, N, D) exact? see the other checks)");
      }
      read[h] = found;
    }
  }
  std::vector<int64_t> grouped, tiled;
  for (int64_t h = 0; h < gH; ++h) {
    grouped.push_back(h / gGroup);
    tiled.push_back(h % gKV);
  }
  std::vector<std::string> evidence = {
      "input: " + run.describe(),
      fmt::format("query heads 0..{} read kv heads: {}", gH - 1, heads_list(read)),
      fmt::format("expected h / (num_heads / num_kv_heads) = h / {}: {}", gGroup, heads_list(grouped))};
  if (read == grouped) {
    return results.pass(spec.id, fmt::format("query heads 0..{} read kv heads {} (groups of {} consecutive heads)",
                                             gH - 1, heads_list(read), gGroup));
  }
  if (read == tiled) {
    // Which operation tiles is said only where the trace shows it ran
    // (aten::repeat; expand is no evidence: repeat_interleave runs it too).
    const std::string source = kit.ran("repeat")
                                   ? "your code calls repeat, and repeat({1, G, 1, 1}) tiles exactly like this"
                                   : "a tiling copy (repeat({1, G, 1, 1}), or a new axis expanded before the kv "
                                     "axis) gives this";
    return results.fail(spec.id,
                        "your kv heads are tiled, not grouped: query head h reads kv head h % num_kv_heads; " + source +
                            ". Consecutive query heads share a kv head: repeat_interleave(G, 1), or unsqueeze(2), "
                            "expand, reshape",
                        evidence);
  }
  if (std::all_of(read.begin(), read.end(), [&](int64_t g) { return g == read[0]; })) {
    return results.fail(spec.id,
                        fmt::format("every query head reads kv head {}: the other kv heads are never used; give "
                                    "query head h the kv head h / (num_heads / num_kv_heads)",
                                    read[0]),
                        evidence);
  }
  return results.fail(spec.id,
                      "some query heads read the wrong kv head: query head h must read kv head "
                      "h / (num_heads / num_kv_heads), consecutive heads sharing one",
                      evidence);
}

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, keys_of(bends()));
  suite->probe(probe());
  suite->extra_cases(add_cases);
  suite->measurement("kv_groups", kv_groups);
  return suite;
}

}  // namespace grader::exercise_gqa
