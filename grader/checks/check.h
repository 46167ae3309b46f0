// What every exercise's checks share: results tied to focus points, the cases
// the child ran, comparison against the reference, and diagnosis of known
// mistakes. Parent side only: this code never runs in the learner's process.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "exercise/exercise.h"
#include "wire/trace.h"
#include "wire/keys.h"
#include "wire/messages.h"
#include "wire/wire.h"

namespace grader {

// The check that only basic operations ran (check_no_builtins); also what
// fails where the compile or the run shows forbidden code (grade.cpp).
inline constexpr const char* kNoBuiltinsCheck = "no_builtins";
// Whether `exercise` forbids the built-ins that do it (it declares that check).
inline bool forbids_builtins(const Exercise& exercise) {
  for (const auto& check : exercise.checks) {
    if (check.id == kNoBuiltinsCheck) return true;
  }
  return false;
}

enum class CheckStatus { passed, failed, skipped };

struct CheckResult {
  std::string id;
  std::string focus_point;          // the focus point this result counts for (or against)
  std::vector<std::string> covers;  // further focus points a pass vouches for
  CheckStatus status = CheckStatus::skipped;
  std::string message;                // one line the learner can act on
  std::vector<std::string> evidence;  // inputs, expected vs got, max error
  std::string mistake;                // id of the diagnosed known mistake, if any
  // A failure two mistakes explain counts against the second's focus point too.
  std::vector<std::string> also_against;
  std::vector<std::string> also_mistakes;
  bool threw = false;  // failed because the learner's code threw, no rule attributing the error
  bool from_error = false;  // failed because the learner's code threw, an error rule naming the cause
  // false: failed, but no evidence ties the failure to its focus point (an unexplained difference or error,
  // or an effect of a cause found elsewhere): the points it covers are not established, none is missed.
  bool blames_focus = true;
  std::string explained_by;      // the measuring check whose finding explains this failure, if one does
  // Only a GPU can assess it, and the grade ran without one: skipped, it does
  // not block a pass, and it is outside the score (verdict.h).
  bool needs_gpu = false;
  // The GPU run that confirms what a CPU check of the same point already
  // shows (gpu_execution beside device_placement's operator trace): skipped
  // without a GPU, it leaves its point to that check. Other GPU checks (a
  // kernel's) are the only evidence of theirs.
  bool gpu_confirmation = false;
  bool informational = false;    // a measurement outside the score that decides nothing (exercise.yaml)
  std::string visibility;        // Gradescope's for its test (exercise.yaml); empty: the grade's
  bool partly_assessed = false;  // passed, but some of its cases could not run here: its focus point is not met
  double weight = 1;             // the check's share of the score (exercise.yaml)
  double seconds = 0;            // the time the grader spent judging it (the learner's run is shared by all)
  std::string title;             // the check's title (exercise.yaml)
};

// One case as planned by the parent and answered by the child.
// The request key marking a case the statement says must be refused.
inline constexpr const char* kMustRefuse = "expect";

struct CaseRun {
  wire::Record request;                // the planned case
  wire::Record response;               // what the driver wrote (wire::CaseReply::outputs)
  std::optional<std::string> thrown;   // what the learner's code threw
  std::optional<wire::Trace> recorded;  // what the runner recorded of the call (wire/trace.h)
  // Where the learner's code raised what it threw: "mhsa.cpp:23 in forward"
  // (judge/error_place.h); empty where unknown.
  std::string thrown_at;

  // Whether the operator aten::`op` ran in the call (at any depth of the learner's code).
  bool ran(const std::string& op) const { return recorded && recorded->op_counts.count("aten::" + op) > 0; }

  bool threw() const { return thrown.has_value(); }
  // Adds "raised at mhsa.cpp:23 in forward" to `evidence` where the place is known.
  void add_thrown_at(std::vector<std::string>& evidence) const {
    if (!thrown_at.empty()) evidence.push_back("raised at " + thrown_at);
  }
  // A case the statement says must be refused (an invalid configuration): it
  // earns no check credit, whatever the code did there.
  bool must_refuse() const { return request.string_or(kMustRefuse, "") == "error"; }
  std::string error() const { return thrown.value_or(""); }
  wire::Trace trace() const { return recorded.value_or(wire::Trace{}); }
  // The runner's probe after the call: LibTorch's operator recording still on.
  bool recording_intact() const { return trace().recording_intact; }
  std::string describe() const { return request.string_or("describe", request.string("case")); }
};

// The memory a submission's code held, measured from outside its process
// (Suite::outside_memory_cases): the graded run's requests, whole, run again
// in a runner of its own and stopped after the last such case, and so by the
// exercise's model solution; each runner's peak counted by the kernel for its
// cgroup (heap, stacks, static storage and anything mapped, whoever in the
// process took it and whenever) from the runner's ready marker, and case by
// case where the peak can be restarted (`taken`).
struct OutsideMemory {
  uint64_t learner_peak = 0;  // bytes
  uint64_t control_peak = 0;  // the model solution's, on the same cases
  std::string unavailable;    // why nothing was measured here (the peaks are then 0)
  std::string learner_end;    // how the learner's run of them ended, where it did not end cleanly
  std::string case_id;        // the last memory case, after which the runs were stopped
  // Case by case, where the cgroup's peak can be restarted (v1), yours and the
  // model solution's: the most each memory case had in use above what was in
  // use when it began (a buffer, a stack or a thread made during the case),
  // and what was in use when it began (memory kept from call to call).
  struct Taken {
    uint64_t learner = 0, control = 0;
    uint64_t learner_start = 0, control_start = 0;
  };
  std::map<std::string, Taken> taken;  // by case id
};

struct JudgeInput {
  std::map<std::string, CaseRun> cases;        // by case id
  std::vector<std::string> forbidden_symbols;  // found in the compiled submission
  uint64_t seed = 0;                           // the inputs were drawn from it
  // Where the suite asks for it (outside_memory_cases); nothing otherwise.
  std::optional<OutsideMemory> outside_memory;
  const CaseRun& at(const std::string& id) const;
  std::string replay_hint() const { return "reproduce with --seed " + std::to_string(seed); }
};

// The learner's attention weights beside the reference's on one case, for
// one batch element and head (the one where they differ most): what the HTML
// report draws. Either the matrices or a note saying why there are none.
struct AttentionFigure {
  std::string title;   // "probe with a padding mask"
  std::string input;   // the case, as the other evidence describes it
  std::string source;  // how the learner's weights were obtained
  int64_t batch = 0, head = 0;
  std::vector<std::vector<double>> learner, reference;  // [query][key]
  std::vector<bool> masked_keys;                        // per key: masked for this batch element
  double max_difference = 0;                            // over every batch element and head; NaN counts as infinite
  std::string note;                                     // when there is nothing to draw: why
};

// Where a grade runs the learner's code (--device): "cpu" or "cuda". On the
// CPU, `no_gpu` says why no GPU check can run ("no CUDA device", "this
// LibTorch is built without CUDA"); such checks are skipped with that reason,
// never passed.
struct Target {
  std::string device = "cpu";
  std::string no_gpu = "the grade runs on the CPU";
  bool on_gpu() const { return device == "cuda"; }
};

// A suite's tensor work runs in the grader process, and a batch (--jobs) or
// a grade's reference timing runs several suites at once. Their public
// methods therefore hold one process-wide lock (numerics_lock) around the
// work, and the process computes with one intra-op thread: the BLAS library
// LibTorch calls need not be safe to call from two threads at once (Debian's
// serial OpenBLAS 0.3.21 is not: two threads' products corrupt each other's
// results now and then; docs/testing.md, "Results that depend on load").
class Suite {
 public:
  virtual ~Suite() = default;
  // Set by the grade before plan(): the device the cases run on.
  void set_target(const Target& target) { target_ = target; }
  const Target& target() const { return target_; }
  // The cases the child must run, with fresh inputs drawn from `seed`. Each
  // request has a unique "case" string and a "seed" integer.
  std::vector<wire::Record> plan(uint64_t seed);
  // One result per check declared in exercise.yaml, in that order.
  std::vector<CheckResult> judge(const JudgeInput& input);
  // How long the reference takes on each of plan()'s requests, in seconds
  // (a negative number where it does not run that case): the base of each
  // case's time limit (case_limit.h). Called from another thread than judge().
  std::vector<double> reference_seconds(const std::vector<wire::Record>& requests) const;
  // Pictures of the learner's attention against the reference's, after
  // judge() on the same input; none where the exercise has no attention to show.
  std::vector<AttentionFigure> figures(const JudgeInput& input);
  // The cases whose memory the grade measures from outside the runner
  // (JudgeInput::outside_memory); none by default.
  virtual std::vector<std::string> outside_memory_cases() const { return {}; }

 protected:
  // What each public method does, under the lock.
  virtual std::vector<wire::Record> plan_cases(uint64_t seed) = 0;
  virtual std::vector<CheckResult> judge_cases(const JudgeInput& input) = 0;
  virtual std::vector<double> time_reference(const std::vector<wire::Record>& requests) const {
    return std::vector<double>(requests.size(), -1.0);
  }
  virtual std::vector<AttentionFigure> draw_figures(const JudgeInput& input) {
    (void)input;
    return {};
  }

 private:
  Target target_;
};

// Held while the grader process computes with tensors (Suite's methods take
// it): one such computation at a time, on one intra-op thread (set the first
// time the lock is taken).
std::unique_lock<std::mutex> numerics_lock();

// The suite for an exercise (generated registry, see grader/CMakeLists.txt);
// throws ConfigError if exercise.yaml names a check kind no code implements.
std::unique_ptr<Suite> make_suite(const Exercise& exercise);

// ---- helpers for suites -------------------------------------------------

// Builds results for the checks of one exercise.
class ResultBuilder {
 public:
  explicit ResultBuilder(const Exercise& exercise) : exercise_(exercise) {}
  CheckResult pass(const std::string& check, const std::string& message) const;
  CheckResult fail(const std::string& check, const std::string& message, std::vector<std::string> evidence = {}) const;
  CheckResult skip(const std::string& check, const std::string& reason) const;
  // A failure explained by a known mistake: counted against the mistake's focus point.
  CheckResult fail_with_mistake(const std::string& check, const std::string& mistake_id,
                                std::vector<std::string> evidence) const;
  // The learner's code threw while running the case.
  CheckResult threw(const std::string& check, const CaseRun& run) const;
  const Exercise& exercise() const { return exercise_; }

 private:
  const Exercise& exercise_;
};

struct Comparison {
  bool ok = false;
  std::string detail;  // "max abs error 0.31 at [0, 1, 2, 3] (expected 0.25, got 0.56)"
};

// Compares a learner tensor with the expected one: same shape, every element
// within atol + rtol * |expected|; NaN only where NaN is expected.
Comparison compare(const at::Tensor& expected, const at::Tensor& got, const Tolerance& tolerance);

// The learner's tensor `name` from a response, or an explanation of why there is none.
std::optional<at::Tensor> learner_tensor(const CaseRun& run, const std::string& name, std::string& why_not);

// The shared no_builtins check: operators that ran and symbols compiled in.
CheckResult check_no_builtins(const ResultBuilder& results, const JudgeInput& input);

// A case's multiply-adds inside the forward scope (the runner's scope_work):
// by the recorded products' shapes, and as counted where BLAS computed them.
struct ScopeMacs {
  double recorded = 0, computed = 0;
};
ScopeMacs scope_macs(const wire::Trace& trace);

// Work the operator recording did not see: BLAS computed more multiply-adds
// than the recorded products account for (5% and 4096 of slack for counts
// that round differently). The finding, or nothing.
std::optional<std::string> unrecorded_work(const ScopeMacs& macs);

std::string shape_string(at::IntArrayRef sizes);

template <typename Map>
std::vector<std::string> keys_of(const Map& map) {
  std::vector<std::string> keys;
  for (const auto& entry : map) keys.push_back(entry.first);
  return keys;
}

// A LibTorch operator that multiplies matrices (attention cannot do without one).
bool is_matrix_product(const std::string& op);
// The operators every matrix product of LibTorch comes down to (mm, bmm,
// addmm, baddbmm, mv, addmv, dot, ...): one call per product, whichever call
// of the learner's made it.
bool is_product_kernel(const std::string& op);

}  // namespace grader
