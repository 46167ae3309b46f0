// Parent side of exercise_softmax_cuda: the reference with its replayable
// mistakes, the inputs the yaml cannot describe, and the check kinds of
// exercise.yaml. Every check judges what a GPU computed; where none ran the
// kernel (no nvcc, no GPU, a CPU-only LibTorch) it is skipped with the
// reason, never passed. The driver says which in its "environment" case.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>

#include "checks/kit/kit.h"
#include "softmax_cuda_reference.h"

namespace grader::exercise_softmax_cuda {
namespace {

constexpr const char* kEnvironment = "environment";
constexpr const char* kBandwidth = "bandwidth";
constexpr const char* kNotRun = "not run: ";
constexpr int64_t kReplayedBlock = 256;  // the block size the replayed block mistakes assume
const std::string kNoNvcc =
    "nvcc not found: install the CUDA Toolkit (Debian non-free: nvidia-cuda-toolkit) and rebuild the grader; "
    "softmax.cu was not compiled, so nothing of it is assessed";

kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  auto x = data.inputs.find("x");
  if (x == data.inputs.end()) return {};  // the environment and bandwidth cases have no reference
  reference::SoftmaxCudaVariant variant;
  for (const auto& mistake : mistakes) {
    if (mistake == "no_max_subtraction") variant.no_max_subtraction = true;
    if (mistake == "partial_block_skipped") variant.partial_block_skipped = kReplayedBlock;
    if (mistake == "first_block_only") variant.first_block_only = kReplayedBlock;
  }
  return {{"y", reference::softmax_rows(x->second, variant)}};
}

wire::Record* find_case(std::vector<wire::Record>& cases, const std::string& id) {
  for (auto& record : cases) {
    if (record.string("case") == id) return &record;
  }
  return nullptr;  // not planned on this machine (a dtype its LibTorch lacks)
}

// Inputs the yaml's randn cannot describe, the environment probe and the
// bandwidth run; every request says where the grade runs.
void add_cases(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator& generator) {
  auto replace = [&](const std::string& id, const std::string& what, auto make) {
    if (auto* record = find_case(cases, id)) {
      auto& x = record->tensors.at(wire::key::input("x"));
      x = make(x).to(x.scalar_type());
      record->strings["describe"] += ", " + what;
    }
  };
  replace("large_logits", "rows near +1e4 and rows near -1e4", [&](const at::Tensor& x) {
    auto sign = (at::arange(x.size(0), at::kDouble) % 2 * 2 - 1).unsqueeze(1);  // -1, +1, ...
    return sign * 1e4 + at::randn(x.sizes(), generator, at::kDouble) * 5;
  });
  replace("neg_inf", "about 30% of the entries -inf (never a whole row)", [&](const at::Tensor& x) {
    auto values = at::randn(x.sizes(), generator, at::kDouble) * 3;
    auto hidden = at::rand(x.sizes(), generator, at::kDouble) < 0.3;
    hidden.select(1, 0).fill_(false);
    return values.masked_fill(hidden, -INFINITY);
  });
  for (const std::string id : {"float16_flat", "bfloat16_flat"}) {
    const auto narrow = id == "float16_flat" ? at::kHalf : at::kBFloat16;
    replace(id, "near-equal values (each row's exp terms sum to about 70000)", [&](const at::Tensor& x) {
      return (at::randn(x.sizes(), generator, at::kDouble) * 0.003).to(narrow).to(at::kDouble);
    });
  }
  wire::Record environment;
  environment.strings["case"] = kEnvironment;
  environment.strings["kind"] = kEnvironment;
  environment.strings["describe"] = "what was compiled, and whether a GPU can run it";
  environment.ints["seed"] = 1;
  cases.insert(cases.begin(), environment);
  wire::Record bandwidth;
  bandwidth.strings["case"] = kBandwidth;
  bandwidth.strings["kind"] = kBandwidth;
  bandwidth.strings["describe"] = "8192 x 8192 float32, median of 20 timed runs";
  bandwidth.ints["rows"] = bandwidth.ints["cols"] = 8192;
  bandwidth.ints["repeats"] = 20;
  bandwidth.ints["seed"] = 2;
  cases.push_back(bandwidth);
  for (auto& record : cases) record.strings["device"] = kit.target().on_gpu() ? "cuda" : "cpu";
}

// Why nothing the checks judge ran on a GPU, or nullopt when it did (or
// when the environment case has no answer, as in a simulation: then the
// cases speak for themselves).
std::optional<std::string> not_on_gpu(const kit::Kit& kit) {
  auto env = kit.input().cases.find(kEnvironment);
  if (env == kit.input().cases.end() || env->second.threw()) return std::nullopt;
  const auto& response = env->second.response;
  if (response.integer_or("learner_compiled", 1) == 0) return kNoNvcc;
  auto why = response.string_or("gpu", "");
  if (why.empty()) return std::nullopt;
  if (!kit.target().on_gpu() && !kit.target().no_gpu.empty()) why = kit.target().no_gpu;
  return "not GPU-verified: " + why;
}

std::optional<std::string> not_run(const CaseRun& run) {
  if (run.threw() && run.error().rfind(kNotRun, 0) == 0) return "not GPU-verified: " + run.error().substr(9);
  return std::nullopt;
}

// The learner's y, in float64, for a case that ran.
std::optional<at::Tensor> learner_y(const CaseRun& run) {
  std::string why;
  auto y = learner_tensor(run, "y", why);
  if (!y) return std::nullopt;
  return y->to(at::kDouble);
}

// Unwritten elements (still the driver's NaN poison where the reference is
// finite), described per row: often the clearest evidence of a loop bound.
std::optional<std::string> unwritten(const at::Tensor& want, const at::Tensor& got, const std::string& describe) {
  if (want.sizes() != got.sizes()) return std::nullopt;
  auto holes = got.isnan() & want.isfinite();
  const auto count = holes.sum().item<int64_t>();
  if (count == 0) return std::nullopt;
  const int64_t cols = want.size(1);
  for (int64_t r = 0; r < want.size(0); ++r) {
    auto row = holes[r];
    if (!row.any().item<bool>()) continue;
    const auto first = row.to(at::kLong).argmax().item<int64_t>();
    const bool tail = row.narrow(0, first, cols - first).all().item<bool>();
    return fmt::format(
        "{} of the results were never written ({}): in row {}, {}", count, describe, r,
        tail ? fmt::format("every column from {} of {} on; is the loop over the row bounded by a whole number of "
                           "blocks, or is there no loop past the first block?",
                           first, cols)
             : fmt::format("column {} of {} (and others) is missing", first, cols));
  }
  return std::nullopt;
}

// The result of a check over `ids`: skipped where nothing ran on a GPU,
// passed where every planned case matches, else the clearest explanation of
// a failing case (a named mistake first).
CheckResult rows_match(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  if (auto why = not_on_gpu(kit)) return results.skip(spec.id, *why);
  std::vector<std::string> failing;
  size_t judged = 0;
  for (const auto& id : spec.cases) {
    auto found = kit.input().cases.find(id);
    if (found == kit.input().cases.end()) continue;  // not planned here: the kit says so on a pass
    if (auto why = not_run(found->second)) return results.skip(spec.id, *why);
    ++judged;
    if (kit.status(id) != kit::CaseStatus::matches) failing.push_back(id);
  }
  if (failing.empty()) {
    return results.pass(spec.id, fmt::format("matches a float64 softmax in {} configuration{}", judged,
                                             judged == 1 ? "" : "s"));
  }
  std::optional<CheckResult> first;
  for (const auto& id : failing) {
    auto explained = kit.explain(spec.id, id);
    if (!explained.mistake.empty()) return explained;
    if (!first) first = explained;
  }
  // No known mistake: unwritten elements say more than a max error.
  const auto& run = kit.input().at(failing.front());
  if (first->message.find("neither a known mistake") != std::string::npos && !run.threw()) {
    auto want = kit.expected(run).at("y");
    if (auto got = learner_y(run)) {
      if (auto holes = unwritten(want, *got, run.describe())) first->message = *holes;
    }
  }
  return *first;
}

CheckResult rows_sum_to_one(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  if (auto why = not_on_gpu(kit)) return results.skip(spec.id, *why);
  size_t judged = 0;
  for (const auto& id : spec.cases) {
    auto found = kit.input().cases.find(id);
    if (found == kit.input().cases.end()) continue;
    const auto& run = found->second;
    if (auto why = not_run(run)) return results.skip(spec.id, *why);
    if (run.threw() || !learner_y(run)) return kit.explain(spec.id, id);
    ++judged;
    const auto y = *learner_y(run);
    const auto sums = y.sum(/*dim=*/-1);
    const auto error = (sums - 1).abs().nan_to_num(INFINITY, INFINITY, INFINITY);
    const auto worst = error.argmax().item<int64_t>();
    if (error[worst].item<double>() <= 1e-4) continue;
    // A known mistake (unwritten columns) explains it best.
    auto explained = kit.explain(spec.id, id);
    if (!explained.mistake.empty()) return explained;
    const auto nan_rows = sums.isnan().sum().item<int64_t>();
    std::vector<std::string> evidence = {"input: " + run.describe(),
                                         fmt::format("row {} sums to {:.6g}", worst, sums[worst].item<double>()),
                                         kit.input().replay_hint()};
    if (nan_rows > 0) {
      return results.fail(spec.id,
                          fmt::format("{} row(s) hold NaN (elements never written, or 0/0): every element of every "
                                      "row must be written",
                                      nan_rows),
                          evidence);
    }
    return results.fail(spec.id,
                        "rows do not sum to 1: the sum each row is divided by is not the whole row's sum (a reduction "
                        "that misses warps, or a race on shared memory without __syncthreads)",
                        evidence);
  }
  return results.pass(spec.id, fmt::format("every row sums to 1 within 1e-4 in {} configurations", judged));
}

CheckResult compiles(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  auto env = kit.input().cases.find(kEnvironment);
  if (env == kit.input().cases.end() || env->second.threw()) {
    return results.skip(spec.id, "not assessed: the grader's environment probe did not answer");
  }
  const auto& response = env->second.response;
  if (response.integer_or("learner_compiled", 1) == 0) return results.skip(spec.id, kNoNvcc);
  const auto defined = response.integer_or("launchers", 0);
  if (defined != 7) {
    std::string missing;
    const char* names[] = {"softmax_rows_f32", "softmax_rows_f16", "softmax_rows_bf16"};
    for (int i = 0; i < 3; ++i) {
      if (!(defined & (1 << i))) missing += (missing.empty() ? "" : ", ") + std::string(names[i]);
    }
    return results.fail(spec.id, "softmax.cu compiles but does not define " + missing +
                                     ": define every launcher of softmax_kernel.h, with exactly its signature");
  }
  if (auto why = not_on_gpu(kit)) {
    return results.pass(spec.id, "nvcc compiled softmax.cu; compile-only, " + *why);
  }
  return results.pass(spec.id, "nvcc compiled softmax.cu and it ran on " + response.string_or("device_name", "the GPU"));
}

CheckResult bandwidth(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  if (auto why = not_on_gpu(kit)) return results.skip(spec.id, *why);
  auto found = kit.input().cases.find(kBandwidth);
  if (found == kit.input().cases.end()) return results.skip(spec.id, "not assessed: no bandwidth run was planned");
  const auto& run = found->second;
  if (auto why = not_run(run)) return results.skip(spec.id, *why);
  if (run.threw()) return results.threw(spec.id, run);
  const auto& r = run.response.reals;
  auto get = [&](const char* key) { return r.count(key) ? r.at(key) : 0.0; };
  if (get("kernel_ms") <= 0 || get("copy_ms") <= 0) {
    return results.skip(spec.id, "not assessed: the bandwidth run returned no timings");
  }
  const double ratio = get("kernel_gb_s") / get("copy_gb_s");
  auto result = results.pass(
      spec.id, fmt::format("informational: {:.0f} GB/s, {:.0f}% of a device copy of the same bytes ({:.0f} GB/s) on {}",
                           get("kernel_gb_s"), 100 * ratio, get("copy_gb_s"), run.response.string_or("device_name", "the GPU")));
  result.evidence = {"input: " + run.describe(),
                     fmt::format("softmax {:.3f} ms, copy_ {:.3f} ms (median; bytes counted: one read and one write "
                                 "of the matrix)",
                                 get("kernel_ms"), get("copy_ms"))};
  return result;
}

CheckResult no_host_work(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  auto env = kit.input().cases.find(kEnvironment);
  if (env != kit.input().cases.end() && !env->second.threw() &&
      env->second.response.integer_or("learner_compiled", 1) == 0) {
    return results.skip(spec.id, kNoNvcc);
  }
  if (!kit.input().forbidden_symbols.empty()) {
    std::vector<std::string> evidence = kit.input().forbidden_symbols;
    auto result = results.fail(spec.id,
                               "your compiled code copies to or from the host, or calls into LibTorch: the softmax "
                               "must run in your kernel (see the symbols below)",
                               evidence);
    return result;
  }
  if (auto why = not_on_gpu(kit)) {
    return results.skip(spec.id, *why + " (no forbidden symbol is compiled in; what runs is only seen on a GPU)");
  }
  auto result = check_no_builtins(results, kit.input());
  result.id = spec.id;
  return result;
}

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(
      exercise, reference_of, std::vector<std::string>{"no_max_subtraction", "partial_block_skipped", "first_block_only"});
  suite->custom("compiles", compiles)
      .custom("numerics", rows_match)  // the kit's numerics, GPU-aware: skipped where no GPU ran
      .custom("rows_sum_to_one", rows_sum_to_one)
      .custom("bandwidth", bandwidth)
      .custom("no_host_work", no_host_work)
      .extra_cases(add_cases);
  return suite;
}

}  // namespace grader::exercise_softmax_cuda
