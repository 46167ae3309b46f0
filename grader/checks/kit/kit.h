// The exercise kit: what every exercise's checks share, driven by the
// `signature:`, `cases:`, `features:`, `errors:` and `checks:` of its
// exercise.yaml. An exercise supplies its reference (and the known mistakes it
// can replay), optionally an attention probe, and code only for checks no kit
// kind covers. Parent side only: nothing here runs in the learner's process.
//
// Check kinds (the `kind:` of a check, default its id) are listed once, with
// what each checks, in kinds.cpp; `grade kinds` prints that table.
//
// `isolate:` (every module exercise): the module's parts and the weights that
// switch each off or make it blind to its input; twins planned beside each
// numerics check's smallest case place an unexplained difference
// (isolation.h).
//
// A case in a dtype this LibTorch cannot run attention in on the CPU (float16
// on 1.13) is not planned; a check keeps its other cases and says, when it
// passes, what was not assessed and why (all of its cases: skipped, with why).
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "checks/check.h"
#include "wire/fields.h"

namespace grader::kit {

using Dims = std::map<std::string, int64_t>;
using Tensors = std::map<std::string, at::Tensor>;

// Evaluates a dimension expression over dims: names and numbers (1e-5 too) with
// + - * /, ^ (power), unary minus, sqrt(...) and parentheses ("D/H", "4*D",
// "N*(N+1)/2", "1/sqrt(d_k)"). Throws ConfigError for anything else.
double evaluate(const std::string& expression, const Dims& dims);
int64_t evaluate_dim(const std::string& expression, const Dims& dims);

// The signature's parameters for one case, each "{X}" template expanded over
// 0 .. X-1 ("layers.{L}.linear1.weight" with L = 2: layers.0.…, layers.1.…).
std::vector<TensorSpec> parameters_of(const std::vector<TensorSpec>& parameters, const Dims& dims);

// What the reference gets for one case, in float64 (masks keep their dtype).
struct CaseData {
  Dims dims;
  Tensors inputs;  // by signature name; an input the case leaves out is absent
  Tensors params;  // by parameter name ("q_linear.weight")
  bool train = false;
  // Set where the case fixes every Dropout's p to 0 or 1 (a dropout_sites
  // case, in training mode): the paths at p = 1, whose place is all zeros.
  std::optional<std::set<std::string>> dropped;
};
// The expected outputs by name, for the correct algorithm (no mistakes) or
// with known mistakes of exercise.yaml made together (one, or two when no
// single one explains a result); an empty map: they cannot be replayed on
// this case.
using Reference = std::function<Tensors(const CaseData&, const std::vector<std::string>& mistakes)>;

// An attention probe: inputs and weights crafted so that the output reveals
// the learner's attention weights, whatever else is wrong. design() fills a
// request so that every head's raw score q_i . k_j is a_i * b_j (a: (B, Nq),
// b: (B, Nk)) and the mask (undefined, or (B, 1, 1, Nk) bool) is passed;
// read() returns the weights (B, H, Nq, Nk) as the probe sees them.
struct AttentionProbe {
  Dims dims;
  std::string head_dim;                           // expression of d_k over dims
  std::map<std::string, std::string> quantities;  // learner's name -> expression ("num_heads" -> "H")
  std::function<void(wire::Record&, const at::Tensor& a, const at::Tensor& b, const at::Tensor& mask)> design;
  std::function<std::optional<at::Tensor>(const CaseRun&, std::string& why)> read;
  bool direct = false;  // read() returns weights the learner returned, not ones inferred from an output
  bool causal = false;  // the exercise hides each query's later keys itself (no mask input): measure the rest
};

class Kit;
using CheckFn = std::function<CheckResult(const Kit&, const CheckSpec&)>;

// A kit check kind, as exercise.yaml names it: what runs it, and what it checks.
struct KindInfo {
  std::string name;
  CheckResult (Kit::*run)(const CheckSpec&) const;
  // Run once per grade (Kit::measured); when it fails, its finding explains
  // the numerics failures no known mistake reproduces.
  bool measurement = false;
  std::string doc;
};
// Every kit kind, in the order `grade kinds` lists them (kinds.cpp).
const std::vector<KindInfo>& kinds();
// The kind called `name`, or nullptr.
const KindInfo* find_kind(const std::string& name);

// How one planned case came out against the reference.
enum class CaseStatus { matches, precision, differs, threw, unusable };

class Kit : public Suite {
 public:
  // `replayable`: the ids of exercise.yaml's mistakes the reference replays.
  Kit(const Exercise& exercise, Reference reference, std::vector<std::string> replayable);
  Kit& probe(AttentionProbe probe);
  // A check kind of the exercise's own.
  Kit& custom(const std::string& kind, CheckFn fn);
  // A check kind of the exercise's own that measures what the code does (as
  // the probes do): run once per grade, and when it fails, its finding explains
  // the numerics failures no known mistake reproduces. It must not call explain().
  Kit& measurement(const std::string& kind, CheckFn fn);
  // A check kind of the exercise's own that judges a backward pass: its cases
  // run backward with a grad_output, as a gradients check's do.
  Kit& backward_check(const std::string& kind, CheckFn fn);
  // The cases a check of `kind` names in its option `outside:` (some of its
  // cases) have their memory measured from outside the runner too
  // (JudgeInput::outside_memory).
  Kit& memory_from_outside(const std::string& kind);
  std::vector<std::string> outside_memory_cases() const override { return outside_memory_cases_; }
  // Known mistakes of exercise.yaml that the exercise's own checks name
  // (fail_with_mistake) without the reference replaying them.
  Kit& names_mistakes(std::vector<std::string> ids);
  const std::vector<std::string>& named_by_checks() const { return named_by_checks_; }
  // The Dropout paths ("dropout1") the reference can drop (CaseData::dropped):
  // the only ones a dropout_sites check may name.
  Kit& dropout_sites(std::vector<std::string> paths);
  // Further cases planned by the exercise (after the yaml's).
  Kit& extra_cases(std::function<void(Kit&, std::vector<wire::Record>&, at::Generator&)> add);

  // ---- for check code ----
  const Exercise& exercise() const { return exercise_; }
  // The mistakes the reference replays (exercise.yaml's ids).
  const std::vector<std::string>& replayable() const { return replayable_; }
  const ResultBuilder& results() const { return results_; }
  const JudgeInput& input() const { return *input_; }
  // A planned case with inputs drawn for `spec` (no grad_output).
  wire::Record make_case(const CaseSpec& spec, at::Generator& generator, int64_t seed) const;
  CaseData data_of(const CaseRun& run) const;
  Tensors expected(const CaseRun& run, const std::string& mistake = "") const;
  Tensors expected(const CaseData& data, const std::string& mistake = "") const;
  Tensors expected(const CaseRun& run, const std::vector<std::string>& mistakes) const;
  CaseStatus status(const std::string& case_id) const;
  CaseStatus outputs_status(const CaseRun& run, const Tensors& want, const Tolerance& tolerance, bool loose) const;
  // Why a case's outputs cannot be judged (it threw, weights could not be loaded).
  std::optional<std::string> not_runnable(const CaseRun& run) const;
  // The failure of `check` on a case that does not match, explained as far as
  // the evidence goes (precision, a known mistake, a probe's measurement, the
  // cases' common feature, an error rule), else said honestly.
  CheckResult explain(const std::string& check, const std::string& case_id) const;
  // explain's steps (diagnosis.cpp), each a result where it explains the difference.
  std::optional<CheckResult> explain_precision(const std::string& check, const CaseRun& run, const Tensors& reference,
                                               const Tensors& learner, std::vector<std::string>& evidence) const;
  std::optional<CheckResult> explain_unloaded(const std::string& check, const CaseRun& run,
                                              const std::vector<std::string>& evidence) const;
  std::optional<CheckResult> explain_by_mistakes(const std::string& check, const std::string& case_id,
                                                 const Tensors& learner, const std::vector<std::string>& evidence) const;
  std::optional<CheckResult> explain_non_finite(const std::string& check, const CaseRun& run, const Tensors& reference,
                                                const Tensors& learner, std::vector<std::string> evidence) const;
  // The measuring checks' findings (their failed results), computed once per grade.
  const std::vector<CheckResult>& findings() const;
  // Whether the operator aten::`op` ran in any case (at any depth of the
  // learner's forward): advice that names an operation of the learner's code
  // says so only where it ran.
  bool ran(const std::string& op) const;
  // The in-place operators (names ending in '_') that ran in `run`, without the
  // ones LibTorch's own factories run (fill_, zero_, copy_, ...).
  std::vector<std::string> ran_in_place(const CaseRun& run) const;

 protected:
  // Suite's public methods call these four under its lock (check.h:
  // numerics_lock); no one else may.
  std::vector<wire::Record> plan_cases(uint64_t seed) override;
  // Runs every check of exercise.yaml, in its order, each guarded: an
  // exception in check or reference code is the grader's fault.
  std::vector<CheckResult> judge_cases(const JudgeInput& input) override;
  // The reference's time on each planned case (refusals, and cases it throws
  // on, -1); touches nothing judge() uses.
  std::vector<double> time_reference(const std::vector<wire::Record>& requests) const override;
  // The probe cases' weights, the learner's beside the reference's (the
  // reference's read through the same probe from its own outputs).
  std::vector<AttentionFigure> draw_figures(const JudgeInput& input) override;

 private:
  CheckResult run_kind(const CheckSpec& spec) const;
  CheckResult registered_buffers(const CheckSpec& spec, const CaseRun& run) const;
  CheckResult parameters(const CheckSpec& spec) const;
  CheckResult rejects(const CheckSpec& spec) const;
  CheckResult refuses(const CheckSpec& spec) const;
  CheckResult shapes(const CheckSpec& spec) const;
  CheckResult numerics(const CheckSpec& spec) const;
  CheckResult gradients(const CheckSpec& spec) const;
  CheckResult deterministic(const CheckSpec& spec) const;
  CheckResult masked_values(const CheckSpec& spec) const;
  CheckResult work_growth(const CheckSpec& spec) const;
  CheckResult dependence(const CheckSpec& spec) const;
  CheckResult causal_outputs(const CheckSpec& spec) const;
  // The twin of a causal_outputs case: the later half of `input` (along its
  // positions, dimension 1) redrawn.
  wire::Record later_redrawn_twin(const wire::Record& record, const std::string& input, at::Generator& generator) const;
  CheckResult dropouts(const CheckSpec& spec) const;
  CheckResult dropout_in_training(const CheckSpec& spec) const;
  CheckResult dropout_sites(const CheckSpec& spec) const;
  CheckResult device_placement(const CheckSpec& spec) const;
  CheckResult fill_fits(const CheckSpec& spec) const;
  CheckResult gpu_execution(const CheckSpec& spec) const;
  CheckResult no_builtins(const CheckSpec& spec) const;
  friend const std::vector<KindInfo>& kinds();
  // Device-mismatch errors and outputs on another device than the cases', first of each.
  struct DeviceProblem {
    std::string what;   // "your output came back on cpu while the inputs were on cuda"
    std::string where;  // the case, described
  };
  std::vector<DeviceProblem> gpu_device_problems() const;
  std::vector<wire::Record> moved_twins(const CaseSpec& spec, const wire::Record& record,
                                        at::Generator& generator) const;
  // The probe's scale c of softmax(c * q.k), or why none can be read.
  struct ScaleFit {
    std::optional<std::string> unreadable;
    double scale = 0;
    bool over_queries = false;
    int64_t fitted = 0;  // weights the fit ran over
  };
  ScaleFit fit_scale(const CaseRun& run, const at::Tensor& weights) const;
  // The dependence check `spec` saw batch element 0's output move when only
  // the other batch elements were redrawn, where the reference's stays.
  bool batch_elements_mix(const CheckSpec& spec) const;
  CheckResult attention_scale(const CheckSpec& spec) const;
  CheckResult attention_axis(const CheckSpec& spec) const;
  CheckResult attention_mask(const CheckSpec& spec) const;
  std::vector<std::string> cases_of(const CheckSpec& spec) const;
  // A measuring check's result (attention_*, dependence), computed once per grade.
  const CheckResult& measured(const CheckSpec& spec) const;
  bool is_measurement(const CheckSpec& spec) const;
  std::optional<CheckResult> attribute_to_feature(const std::string& check) const;
  std::optional<CheckResult> explain_error(const std::string& check, const CaseRun& run) const;
  // The id of the smallest yaml case that fails (by the product of its dimensions).
  std::string smallest_failing(const std::string& check) const;
  // The first output of a yaml case whose shape is not its signature shape, said.
  std::optional<std::string> misshapen_output() const;
  // The passing yaml case that differs from `failing_id` in the fewest
  // dimensions and traits, described with those differences.
  std::optional<std::string> nearest_passing(const std::string& failing_id) const;
  std::optional<CheckResult> localise(const std::string& check, std::vector<std::string>& evidence) const;
  // Isolation twins (isolation.h) of every case a numerics check judges, and
  // where they place an unexplained difference on `case_id` (isolation.cpp).
  void plan_isolation(std::vector<wire::Record>& cases, int64_t& case_seed) const;
  // plan_cases, step by step (kit.cpp).
  struct CaseWants {
    std::set<std::string> grad, repeat, masked, moved, train;
    std::map<std::string, std::string> later;  // case -> the input a causal_outputs check redraws
  };
  void validate_checks() const;
  CaseWants case_wants() const;
  wire::Record masked_values_twin(const CaseSpec& spec, const wire::Record& record, at::Generator& generator,
                                  int64_t& case_seed) const;
  void plan_rejections(std::vector<wire::Record>& cases, int64_t& case_seed) const;
  void plan_probe(std::vector<wire::Record>& cases, at::Generator& generator, int64_t& case_seed) const;
  void plan_dropout_sites(std::vector<wire::Record>& cases, int64_t& case_seed) const;
  std::optional<CheckResult> isolate(const std::string& check, const std::string& case_id,
                                     std::vector<std::string>& evidence) const;
  Tensors learner_outputs(const CaseRun& run) const;
  // The one known mistake (else the one pair of them) whose replay matches
  // the learner's outputs on `case_id` and is refuted by no other case.
  std::vector<std::string> replayed_mistakes(const std::string& case_id, const Tensors& learner) const;
  bool has_mask_input() const;
  bool has_focus_point(const std::string& id) const;
  // Whether the replay of `mistake` matches the learner's outputs on every
  // case where both exist (and on at least one): the code behaves as the
  // reference with that one mistake.
  bool explains_every_case(const std::string& mistake) const;
  // The same for known mistakes replayed together (memoised per grade).
  bool explains_every_case(const std::vector<std::string>& mistakes) const;
  bool replays_every_case(const std::vector<std::string>& mistakes) const;  // its computation
  // The largest change float32 rounding makes to the reference's results on
  // `run`, `exact` (the reference run on its inputs and weights cast to
  // float32); nothing where that cannot be computed.
  std::optional<double> float32_rounding(const CaseRun& run, const Tensors& exact) const;
  // The learner's largest difference from the reference on a case beside the
  // largest change float32 rounding makes to the reference there.
  struct RoundingMeasure {
    double deviation = 0;
    std::optional<double> rounding;
    // Only a difference of rounding's size is called a precision matter.
    bool explains() const { return rounding && deviation <= 10 * *rounding; }
  };
  RoundingMeasure measure_rounding(const CaseRun& run, const Tensors& reference, const Tensors& learner) const;
  // Whether a case that matches only loosely (status precision) is off by
  // float32 rounding, and no measurement found a mistake.
  bool rounding_explains(const CaseRun& run) const;
  // Does the replay of `mistakes` match `outputs`, the learner's on `run`?
  // (nullopt: not replayable there)
  std::optional<bool> replay_matches(const CaseRun& run, const Tensors& outputs,
                                     const std::vector<std::string>& mistakes) const;
  // Failures that one known mistake explaining every case accounts for,
  // found by checks of other focus points, name no cause of their own.
  void mark_consequences(std::vector<CheckResult>& results) const;

  const Exercise& exercise_;
  ResultBuilder results_;
  Reference reference_;
  std::vector<std::string> replayable_;
  std::optional<AttentionProbe> probe_;
  std::vector<CaseSpec> cases_;     // exercise.yaml's cases this LibTorch can run (results expected)
  std::vector<CaseSpec> refusals_;  // its cases with expect: error (planned, never given to the reference)
  bool is_refusal(const std::string& case_id) const;  // one of refusals_
  std::map<std::string, std::string> unsupported_;  // the others, by id: why not
  std::map<std::string, CheckFn> custom_;
  std::vector<std::string> outside_memory_cases_;
  std::set<std::string> backward_kinds_;  // custom kinds whose cases run backward
  std::vector<std::string> named_by_checks_;
  std::set<std::string> droppable_;  // Kit::dropout_sites
  std::set<std::string> measurements_;  // custom kinds that are measurements
  std::vector<std::function<void(Kit&, std::vector<wire::Record>&, at::Generator&)>> extra_;
  const JudgeInput* input_ = nullptr;
  mutable std::map<std::string, CaseStatus> status_;
  mutable std::optional<std::vector<CheckResult>> findings_;
  mutable std::map<std::string, CheckResult> measured_;  // measuring checks by id, run once per grade
  mutable std::map<std::vector<std::string>, bool> explains_;  // explains_every_case, once per grade
  // Kit::expected's reference outputs by case id and replayed mistakes, for one grade
  mutable std::map<std::pair<std::string, std::vector<std::string>>, Tensors> references_;
};

// Case ids the kit derives from a yaml case: its repeat, and the twin with the
// values at masked keys replaced.
std::string repeat_case(const std::string& id);
std::string masked_values_case(const std::string& id);
std::string later_redrawn_case(const std::string& id);  // kinds/causal.cpp
std::string probe_case(const std::string& which);
std::string moved_case(const std::string& id, const std::string& what);
std::string training_case(const std::string& id, int run);  // run 0 or 1
std::string dropout_site_case(const std::string& id, const std::string& path);  // path "": every Dropout at 0
// The p of the Dropout the driver found registered at `path`, if any.
std::optional<double> registered_dropout(const CaseRun& run, const std::string& path);  // "scale" (no mask) or "mask"
// A tensor the learner's module registered, as the driver lists it
// (module_driver.h, lines of wire/fields.h fields): parameters
// "name size...", buffers "name dtype requires_grad size...". A line that
// does not read is left out: it is the runner's writing, and only a learner
// who forged it could make it so.
struct Registered {
  std::string name, dtype;
  bool requires_grad = false;
  std::vector<int64_t> sizes;
  std::string describe() const;  // "name (2, 3)"
};
std::vector<Registered> module_parameters(const CaseRun& run);
std::vector<Registered> module_buffers(const CaseRun& run);
// The names of "missing_parameters" or "dropout_p_missing": one field a line.
std::vector<std::string> listed_names(const CaseRun& run, const std::string& key);


// A planned case's dimensions (its wire::key::dim integers).
Dims dims_of(const wire::Record& record);
// A case's size, the product of its dimensions (a 0 counted as 1): what
// "the smallest case" means.
int64_t case_size(const CaseSpec& spec);

// The planned case `id` among `cases` (for extra_cases that derive a twin
// from it); throws ConfigError naming `who` when it is not planned.
const wire::Record& planned_case(const std::vector<wire::Record>& cases, const std::string& id, const std::string& who);

// The operator a device-mismatch error names ("masked_fill (its argument
// mask)"), or nothing when `error` is no such error.
std::optional<std::string> device_mismatch(const std::string& error);

// Scales a learner may round to float32 without making a mistake (the
// `tolerated:` variants float32_scale and float32_sqrt of an attention's
// reference): 1/sqrt(d) computed in float32 (1.0f / std::sqrt(float(d))), and
// sqrt(d) computed in float32 with the scores divided by it in double.
double float32_inverse_sqrt(double d);
double inverse_of_float32_sqrt(double d);

// What a probe read from candidates (error, value), each the learner's output
// matched against the reference's at one value (a query's position, say):
// - one: the value whose error is within `tolerance`, every other candidate's
//   at least 100 times larger and outside it;
// - several: more than one value reproduces the output (within tolerance, or
//   not clearly apart): this probe cannot tell them apart. Not a finding: a
//   first token, with one key, has the same output at every query position;
// - none: no value reproduces it (something else differs).
// The bytes a submission's runner held at its peak beyond the model
// solution's on the same cases (measured from outside: OutsideMemory), where
// they exceed `allowance`; nothing where within it or not measured.
std::optional<double> held_beyond(const OutsideMemory& memory, double allowance);

// Two one-token calls next to each other in time, with different numbers of
// tokens cached (two modules of one case): what each had cached and the CPU
// seconds it took.
struct CpuPair {
  double near_tokens = 0, near_seconds = 0, far_tokens = 0, far_seconds = 0;
};
// How much a call's CPU time grows per cached token: the median over the
// pairs of their difference per token cached more. A machine slowed for a
// while slows both calls of a pair; a pair slowed apart hardly moves the
// median. Nothing without a pair whose token counts differ.
std::optional<double> cpu_growth_per_token(const std::vector<CpuPair>& pairs);
double median_of(const std::vector<CpuPair>& pairs, double CpuPair::*field);
// How many D x D projections of a token (`projection_seconds` each, at BLAS
// speed) that growth is, where it is at least kReprojectionFloor: attending
// over a cached token and copying it cost a small part of one (0.1 to 0.8 at
// D = 128, measured on the accepted corpus), a correct file that makes a
// D x D temporary for each projection about one (the allocator's work on a
// growing heap), and the unit itself varies by up to two between grades on a
// busy machine; projecting the values again in plain loops costs about twenty.
// As much less (the calls with more cached being the faster) is a finding
// too: work one module does for another. Nothing where less, or no unit.
constexpr double kReprojectionFloor = 4;
std::optional<double> projections_per_token(double growth, double projection_seconds);
// The CPU time this thread takes for one D x D projection of `batch` tokens in
// float64 through LibTorch's matrix product (the BLAS it links), the least of
// several measurements: the unit of projections_per_token. Call it under
// numerics_lock (a suite's methods hold it).
double projection_cpu_seconds(int64_t batch, int64_t dim);

// The operators of one case of a work_growth check: those the learner's code
// called itself inside forward (any name; `traced`: the trace has its calls),
// and the matrix products, softmaxes, products and quotients at any depth.
struct OperatorCount {
  int64_t own = 0, named = 0;
  bool traced = false;
  int64_t products = 0;  // calls of the kernels every matrix product comes down to, at any depth
};
// Whether the second configuration (more heads, say) runs more operators than
// the first, by any count: a loop over what grew.
bool operators_grow(const OperatorCount& first, const OperatorCount& second);
// Whether either makes more matrix products than kProductCeiling: a loop over
// a fixed number of slots as large as the most heads. Every accepted
// multi-head file makes 4 to 6 products (the projections, the scores, the
// weighted values) whatever the head count; a loop over 8 heads makes 20.
constexpr int64_t kProductCeiling = 10;
bool too_many_products(const OperatorCount& first, const OperatorCount& second);

struct ProbeReading {
  enum class Kind { one, several, none };
  Kind kind = Kind::none;
  int64_t value = 0;  // one: the value read
};
ProbeReading read_probe(std::vector<std::pair<double, int64_t>> errors, double tolerance);

// Whether `text` contains one of `words`, ignoring case (an error message that says why).
bool mentions_any(const std::string& text, const std::vector<std::string>& words);

// Why this LibTorch cannot run attention in the dtype `name` (float16 on an
// old CPU build, say); empty when it can.
std::string unsupported_dtype(const std::string& name);

// A number as a learner reads it, with a name where it equals one: 0.5 with
// quantities {num_heads: 4} gives "0.5000 = 1/sqrt(4), which is
// 1/sqrt(num_heads) on this input" (measured) or "0.5000 = 1/sqrt(4) =
// 1/sqrt(num_heads)" (a value known by its definition).
std::string name_scale(double value, const std::map<std::string, double>& quantities, bool measured = true);

}  // namespace grader::kit
