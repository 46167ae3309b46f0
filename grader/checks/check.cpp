#include "checks/check.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "base/errors.h"
#include "report/report.h"

namespace grader {

const CaseRun& JudgeInput::at(const std::string& id) const {
  auto found = cases.find(id);
  if (found == cases.end()) throw GraderFault("no case '" + id + "' was planned");
  return found->second;
}

std::unique_lock<std::mutex> numerics_lock() {
  static std::mutex mutex;
  static std::once_flag one_thread;
  std::unique_lock<std::mutex> lock(mutex);
  // The same intra-op thread count on every machine (LibTorch's default is
  // the number of physical cores), and no BLAS call from two of them at once.
  std::call_once(one_thread, [] { at::set_num_threads(1); });
  return lock;
}

std::vector<wire::Record> Suite::plan(uint64_t seed) {
  auto lock = numerics_lock();
  return plan_cases(seed);
}

std::vector<CheckResult> Suite::judge(const JudgeInput& input) {
  auto lock = numerics_lock();
  return judge_cases(input);
}

std::vector<double> Suite::reference_seconds(const std::vector<wire::Record>& requests) const {
  auto lock = numerics_lock();
  return time_reference(requests);
}

std::vector<AttentionFigure> Suite::figures(const JudgeInput& input) {
  auto lock = numerics_lock();
  return draw_figures(input);
}

namespace {

CheckResult result_of(const CheckSpec& spec, CheckStatus status, std::string message,
                      std::vector<std::string> evidence = {}) {
  CheckResult result;
  result.id = spec.id;
  result.focus_point = spec.focus_point;
  result.covers = spec.covers;
  result.status = status;
  result.message = std::move(message);
  result.evidence = std::move(evidence);
  result.weight = spec.weight;
  result.title = spec.title;
  return result;
}

}  // namespace

CheckResult ResultBuilder::pass(const std::string& check, const std::string& message) const {
  return result_of(exercise_.check(check), CheckStatus::passed, message);
}

CheckResult ResultBuilder::fail(const std::string& check, const std::string& message,
                                std::vector<std::string> evidence) const {
  return result_of(exercise_.check(check), CheckStatus::failed, message, std::move(evidence));
}

CheckResult ResultBuilder::skip(const std::string& check, const std::string& reason) const {
  return result_of(exercise_.check(check), CheckStatus::skipped, reason);
}

CheckResult ResultBuilder::fail_with_mistake(const std::string& check, const std::string& mistake_id,
                                             std::vector<std::string> evidence) const {
  const auto& mistake = exercise_.mistake(mistake_id);
  auto result = fail(check, mistake.title + ": " + mistake.explanation, std::move(evidence));
  result.focus_point = mistake.focus_point;
  result.mistake = mistake.id;
  return result;
}

CheckResult ResultBuilder::threw(const std::string& check, const CaseRun& run) const {
  // The error in the message, the case in the evidence: one error met by
  // several checks on several cases reads as one message (the report says it once).
  auto result = fail(check, "your code threw an error: " + first_line(run.error()), {"input: " + run.describe()});
  run.add_thrown_at(result.evidence);
  result.threw = true;
  return result;
}

std::string shape_string(at::IntArrayRef sizes) {
  std::ostringstream out;
  out << '(';
  for (size_t i = 0; i < sizes.size(); ++i) out << (i ? ", " : "") << sizes[i];
  out << ')';
  return out.str();
}

namespace {

// A subnormal number (an exp() that underflowed: a masked or far-below-the-
// maximum weight) is zero for every tolerance: shown as "~0", not as 7.6e-315.
std::string format_number(double value) {
  if (value != 0 && std::abs(value) < std::numeric_limits<double>::min()) return "~0";
  std::ostringstream out;
  out.precision(6);
  out << value;
  return out.str();
}

std::string index_string(int64_t flat, at::IntArrayRef sizes) {
  std::vector<int64_t> index(sizes.size());
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    index[d] = sizes[d] ? flat % sizes[d] : 0;
    flat = sizes[d] ? flat / sizes[d] : 0;
  }
  return shape_string(index);
}

}  // namespace

Comparison compare(const at::Tensor& expected, const at::Tensor& got, const Tolerance& tolerance) {
  if (!got.defined()) return {false, "no tensor was returned"};
  if (got.sizes() != expected.sizes()) {
    return {false, "shape " + shape_string(got.sizes()) + ", expected " + shape_string(expected.sizes())};
  }
  if (expected.numel() == 0) return {true, "empty"};
  auto want = expected.to(at::kDouble);
  auto have = got.to(at::kDouble);
  auto nan_want = at::isnan(want);
  auto nan_have = at::isnan(have);
  auto diff = (have - want).abs();
  auto allowed = tolerance.atol + tolerance.rtol * want.abs();
  // Equal infinities give NaN differences: treat exact equality as a match.
  auto bad = (diff > allowed) | (nan_want != nan_have) | (diff.isnan() & (have != want) & ~nan_want);
  auto error = at::where(nan_want | nan_have, at::zeros_like(diff), diff.nan_to_num(0, 0, 0));
  double max_error = error.max().item<double>();
  if (!bad.any().item<bool>()) {
    return {true, "max abs error " + format_number(max_error)};
  }
  auto flat = bad.flatten().nonzero().flatten();
  int64_t first = flat[0].item<int64_t>();
  // Point at the worst element, unless the trouble is NaN or infinity.
  auto worst = error.flatten().argmax().item<int64_t>();
  if (!bad.flatten()[worst].item<bool>()) worst = first;
  std::ostringstream out;
  out << flat.numel() << " of " << want.numel() << " elements differ";
  // NaN is left out of the largest error: say how many there are.
  const auto unexpected_nan = (nan_have & ~nan_want).sum().item<int64_t>();
  if (unexpected_nan > 0) out << " (" << unexpected_nan << " NaN where a number is expected)";
  // The largest error is over the elements that are numbers on both sides:
  // said only where there are such elements that differ.
  const auto numbers_differ = (bad & ~nan_want & ~nan_have).sum().item<int64_t>();
  if (numbers_differ > 0) {
    out << "; max abs error " << format_number(max_error) << (unexpected_nan > 0 ? " among the numbers" : "");
  }
  out << "; at " << index_string(worst, want.sizes()) << " expected "
      << format_number(want.flatten()[worst].item<double>()) << ", got "
      << format_number(have.flatten()[worst].item<double>());
  return {false, out.str()};
}

std::optional<at::Tensor> learner_tensor(const CaseRun& run, const std::string& name, std::string& why_not) {
  if (run.threw()) {
    why_not = "your code threw: " + run.error();
    return std::nullopt;
  }
  auto dtype = run.response.string_or(name + ".dtype", "");
  if (dtype == "undefined") {
    why_not = "the returned " + name + " tensor is undefined";
    return std::nullopt;
  }
  auto found = run.response.tensors.find(name);
  if (found == run.response.tensors.end()) {
    why_not = "no " + name + " came back";
    return std::nullopt;
  }
  return found->second;
}

ScopeMacs scope_macs(const wire::Trace& trace) {
  ScopeMacs macs;
  for (const auto& entry : trace.scope_work) {
    macs.recorded += entry.macs;
    macs.computed += entry.computed;
  }
  return macs;
}

std::optional<std::string> unrecorded_work(const ScopeMacs& macs) {
  if (macs.computed <= macs.recorded * 1.05 + 4096) return std::nullopt;
  return fmt::format(
      "your code computed {:.0f} multiply-adds (counted where BLAS did them) of which the recorded operators account "
      "for {:.0f}: work ran that LibTorch's operator recording did not see",
      macs.computed, macs.recorded);
}

CheckResult check_no_builtins(const ResultBuilder& results, const JudgeInput& input) {
  const auto& exercise = results.exercise();
  std::set<std::string> found;
  bool tampered = false, any_completed = false, unrecorded = false;
  for (const auto& [id, run] : input.cases) {
    any_completed |= !run.threw() && !run.must_refuse();  // credit only from a case that must succeed
    const auto trace = run.trace();
    // An answer with no operation recorded at all: either no work was done
    // (returning an input, say: the numerics checks fail it) or the recording
    // was evaded. Which, the grader cannot tell, so it does not assess this
    // (and a check not assessed blocks a pass).
    if (!run.threw() && run.response.tensors.count("output") && trace.op_counts.empty()) {
      unrecorded = true;
    }
    // The runner's own probe found the recording switched off after the call.
    if (!trace.recording_intact) tampered = true;
    // Or work was done while it was off: BLAS saw products no recorded operator made.
    if (auto unseen = unrecorded_work(scope_macs(trace))) found.insert(*unseen + " (" + run.describe() + ")");
    for (const auto& [op, count] : trace.op_counts) {
      for (const auto& pattern : exercise.forbidden_operators) {
        if (op.find(pattern) != std::string::npos) found.insert(op);
      }
    }
  }
  for (const auto& symbol : input.forbidden_symbols) found.insert(symbol);
  if (tampered) {
    return results.fail(kNoBuiltinsCheck,
                        "your code switched off LibTorch's operator recording, which the grader relies on");
  }
  if (!found.empty()) {
    std::vector<std::string> evidence(found.begin(), found.end());
    // The symbol check's judge rules say what the code does ("your code calls
    // an operator's implementation directly ..."): say that, not "a built-in".
    bool hides = std::any_of(evidence.begin(), evidence.end(),
                             [](const std::string& item) { return item.rfind("your code ", 0) == 0; });
    return results.fail(kNoBuiltinsCheck,
                        hides ? "your code reaches past what the grader can see run (the evidence says how); "
                                "build the exercise from basic operations (matmul, softmax, masked_fill, ...)"
                              : "your code uses a built-in that implements the exercise for you; build it from basic "
                                "operations (matmul, softmax, masked_fill, ...)",
                        evidence);
  }
  if (!any_completed) return results.skip(kNoBuiltinsCheck, "not assessed: none of your code ran to completion on a case the statement says must succeed");
  if (unrecorded) {
    return results.skip(kNoBuiltinsCheck,
                        "not assessed: no LibTorch operation of your code was recorded, so the grader cannot tell "
                        "which operators computed your answer");
  }
  return results.pass(kNoBuiltinsCheck, "only basic operations ran");
}

bool is_product_kernel(const std::string& op) {
  static const std::set<std::string> kernels = {
      "aten::mm",  "aten::addmm", "aten::_addmm_activation", "aten::bmm", "aten::baddbmm", "aten::addbmm",
      "aten::mv",  "aten::addmv", "aten::dot",               "aten::vdot", "aten::addr",   "aten::ger",
      "aten::outer"};
  return kernels.count(op) > 0;
}

bool is_matrix_product(const std::string& op) {
  static const std::set<std::string> products = {"aten::matmul",  "aten::bmm",    "aten::mm",    "aten::einsum",
                                                 "aten::baddbmm", "aten::linear", "aten::addmm", "aten::tensordot"};
  return products.count(op) > 0;
}

}  // namespace grader
