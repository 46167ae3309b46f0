#include "checks/kit/kit.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/version.h>

#include <algorithm>
#include <ctime>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "checks/kit/helpers.h"
#include "base/errors.h"
#include "report/report.h"
#include "base/profile.h"

namespace grader::kit {

Kit::Kit(const Exercise& exercise, Reference reference, std::vector<std::string> replayable)
    : exercise_(exercise), results_(exercise), reference_(std::move(reference)), replayable_(std::move(replayable)) {
  // The reference's bends are its known mistakes and its tolerated variants;
  // only mistakes are replayed as explanations.
  for (const auto& variant : exercise_.tolerated) {
    auto found = std::find(replayable_.begin(), replayable_.end(), variant.id);
    if (found == replayable_.end())
      throw GraderFault("exercise " + exercise_.id + ": the reference cannot replay tolerated variant '" +
                        variant.id + "'");
    replayable_.erase(found);
  }
  for (const auto& id : replayable_) exercise_.mistake(id);  // throws for an undeclared one
  // The runner links the same LibTorch as this process: a dtype its CPU
  // kernels lack here is lacking there too, and its cases are not planned.
  for (const auto& spec : exercise_.cases) {
    auto why = unsupported_dtype(spec.trait("dtype", "float64"));
    if (why.empty() && spec.trait("expect", "result") == "error") {
      refusals_.push_back(spec);
    } else if (why.empty()) {
      cases_.push_back(spec);
    } else {
      unsupported_[spec.id] = why;
    }
  }
}

Kit& Kit::probe(AttentionProbe probe) {
  probe_ = std::move(probe);
  return *this;
}

Kit& Kit::custom(const std::string& kind, CheckFn fn) {
  custom_[kind] = std::move(fn);
  return *this;
}

Kit& Kit::measurement(const std::string& kind, CheckFn fn) {
  measurements_.insert(kind);
  return custom(kind, std::move(fn));
}

Kit& Kit::memory_from_outside(const std::string& kind) {
  for (const auto& check : exercise_.checks) {
    if (check.kind != kind) continue;
    for (const auto& id : option_list(check, "outside", "")) {
      if (std::find(check.cases.begin(), check.cases.end(), id) == check.cases.end()) {
        throw ConfigError("check '" + check.id + "': outside: " + id + " is not one of its cases");
      }
      if (std::find(outside_memory_cases_.begin(), outside_memory_cases_.end(), id) == outside_memory_cases_.end()) {
        outside_memory_cases_.push_back(id);
      }
    }
  }
  return *this;
}

Kit& Kit::backward_check(const std::string& kind, CheckFn fn) {
  backward_kinds_.insert(kind);
  return custom(kind, std::move(fn));
}

Kit& Kit::names_mistakes(std::vector<std::string> ids) {
  named_by_checks_.insert(named_by_checks_.end(), ids.begin(), ids.end());
  return *this;
}

Kit& Kit::dropout_sites(std::vector<std::string> paths) {
  droppable_.insert(paths.begin(), paths.end());
  return *this;
}

Kit& Kit::extra_cases(std::function<void(Kit&, std::vector<wire::Record>&, at::Generator&)> add) {
  extra_.push_back(std::move(add));
  return *this;
}

bool Kit::has_focus_point(const std::string& id) const {
  return std::any_of(exercise_.focus_points.begin(), exercise_.focus_points.end(),
                     [&](const FocusPoint& p) { return p.id == id; });
}

bool Kit::ran(const std::string& op) const {
  return std::any_of(input_->cases.begin(), input_->cases.end(),
                     [&](const auto& entry) { return entry.second.ran(op); });
}

std::vector<std::string> Kit::ran_in_place(const CaseRun& run) const {
  static const std::set<std::string> internal = {"fill_", "zero_", "copy_", "resize_", "set_", "uniform_",
                                                 "normal_", "bernoulli_", "random_", "as_strided_", "detach_",
                                                 "requires_grad_", "_coalesced_", "resize_as_"};
  std::vector<std::string> found;
  if (!run.recorded) return found;
  for (const auto& [op, calls] : run.recorded->op_counts) {
    if (op.rfind("aten::", 0) != 0 || op.back() != '_') continue;
    const auto name = op.substr(6);
    if (name.front() != '_' && !internal.count(name)) found.push_back(name);
  }
  return found;
}

bool Kit::has_mask_input() const {
  for (const auto& input : exercise_.signature.inputs) {
    if (input.kind == "attention_mask") return true;
  }
  return false;
}

wire::Record Kit::make_case(const CaseSpec& spec, at::Generator& generator, int64_t seed) const {
  const auto& sig = exercise_.signature;
  const auto dtype = dtype_of(spec.trait("dtype", "float64"));
  // A narrow dtype (bfloat16, float16) is drawn in float64, rounded to it and
  // sent back as float64: the channel's dtypes, the values the learner gets.
  const bool narrow = dtype != at::kDouble && dtype != at::kFloat;
  const auto options = at::TensorOptions().dtype(narrow ? at::kDouble : dtype);
  auto rounded = [&](const at::Tensor& t) { return narrow ? t.to(dtype).to(at::kDouble) : t; };
  wire::Record record;
  record.strings["case"] = spec.id;
  record.strings["kind"] = "forward";
  record.strings["dtype"] = spec.trait("dtype", "float64");
  record.ints["seed"] = seed;
  record.ints["train"] = spec.trait("mode", "eval") == "train" ? 1 : 0;
  // `module: as_built`: the module as its constructor left it, moved to the
  // case's device but never converted with .to(dtype), as a user's code runs
  // it: its outputs must still follow the inputs' dtype.
  if (spec.trait("module", "converted") == "as_built") record.ints["as_built"] = 1;
  std::string outputs, describe;
  for (const auto& output : sig.outputs) outputs += output.name + "\n";
  record.strings["outputs"] = outputs;
  for (const auto& [name, value] : spec.dims) {
    record.ints[wire::key::dim(name)] = value;
    describe += (describe.empty() ? "" : " ") + name + "=" + std::to_string(value);
  }
  for (const auto& [name, expression] : sig.constructor) {
    put_constructor_argument(record, name, evaluate(expression, spec.dims));
  }
  for (const auto& [name, expression] : sig.arguments) {
    record.ints[wire::key::arg(name)] = evaluate_dim(expression, spec.dims);
  }
  for (const auto& input : sig.inputs) {
    if (input.kind == "attention_mask") {
      auto mask = make_mask(spec, input, spec.dims, generator);
      if (mask.defined()) record.tensors[wire::key::input(input.name)] = mask;
      continue;
    }
    if (input.kind == "tokens") {
      const auto below = evaluate_dim(input.below, spec.dims);
      record.tensors[wire::key::input(input.name)] = at::randint(below, shape_of(input, spec.dims), generator, at::kLong);
      continue;
    }
    // "logits: large" puts scores in the thousands (a softmax without its max subtracted overflows).
    const double spread = spec.trait("logits", "normal") == "large" ? 40.0 : 1.0;
    record.tensors[wire::key::input(input.name)] = rounded(at::randn(shape_of(input, spec.dims), generator, options) * spread);
  }
  for (const auto& param : parameters_of(sig.parameters, spec.dims)) {
    auto shape = shape_of(param, spec.dims);
    const double bound = 1.0 / std::sqrt(static_cast<double>(shape.back()));
    record.tensors[wire::key::param(param.name)] = rounded(at::empty(shape, options).uniform_(-bound, bound, generator));
  }
  describe += " " + record.strings["dtype"] + " " + spec.trait("mode", "eval");
  for (const auto& [name, value] : spec.traits) {
    if (name == "contract") {
      describe += " (" + value.substr(0, value.size() - 1) + " = 1, which the interface allows)";
    } else if (name == "module" && value == "as_built") {
      describe += ", the module as constructed (no .to(dtype))";
    } else if (name != "dtype" && name != "mode" && name != "mask" && name != "mask_dtype" && name != "expect") {
      describe += " " + name + "=" + value;
    }
  }
  for (const auto& input : sig.inputs) {
    if (input.kind == "attention_mask") describe += ", " + mask_text(spec, input);
  }
  record.strings["describe"] = describe;
  return record;
}

// Every check's kind is known, its cases fit it, and its probe exists.
void Kit::validate_checks() const {
  for (const auto& check : exercise_.checks) {
    if (!custom_.count(check.kind) && !find_kind(check.kind)) {
      throw ConfigError((exercise_.dir / "exercise.yaml").string() + ": check '" + check.id + "' has kind '" +
                        check.kind + "', which neither the kit nor grader/checks/" + exercise_.id + " implements");
    }
    for (const auto& id : check.cases) {
      const bool refusal = is_refusal(id);
      if (refusal != (check.kind == "refuses")) {
        throw ConfigError((exercise_.dir / "exercise.yaml").string() + ": check '" + check.id + "' lists case '" + id +
                          "': cases with expect: error belong to refuses checks, and only they");
      }
    }
    if ((check.kind.rfind("attention_", 0) == 0) && !probe_) {
      throw ConfigError("check '" + check.id + "' needs an attention probe, and the exercise defines none");
    }
  }
}

// Which planned cases each kind of check needs twins of (a backward, a
// repeat, a redrawn later half, ...).
Kit::CaseWants Kit::case_wants() const {
  CaseWants w;
  for (const auto& check : exercise_.checks) {
    for (const auto& id : check.cases) {
      if (check.kind == "gradients" || backward_kinds_.count(check.kind)) w.grad.insert(id);
      if (check.kind == "deterministic" || check.kind == "masked_values" || check.kind == "dependence")
        w.repeat.insert(id);
      if (check.kind == "dependence") w.moved.insert(id);
      if (check.kind == "causal_outputs") {
        w.repeat.insert(id);
        w.later[id] = check.option("input", exercise_.signature.inputs.front().name);
      }
      if (check.kind == "masked_values") w.masked.insert(id);
      if (check.kind == "dropout_in_training") w.train.insert(id);
    }
  }
  return w;
}

// The twin of a masked_values check's case: huge values behind the keys no
// query may attend to, where nothing may move.
wire::Record Kit::masked_values_twin(const CaseSpec& spec, const wire::Record& record, at::Generator& generator,
                                     int64_t& case_seed) const {
  // Huge values behind the keys no query may attend to: nothing may move.
  const auto* mask_input = &exercise_.signature.inputs.front();
  for (const auto& input : exercise_.signature.inputs) {
    if (input.kind == "attention_mask") mask_input = &input;
  }
  if (!record.has_tensor(wire::key::input(mask_input->name))) {
    throw ConfigError("case '" + spec.id + "' is used by a masked_values check but has no mask");
  }
  const auto& mask = record.tensor(wire::key::input(mask_input->name));
  const int64_t B = spec.dims.at("B"), H = spec.dims.at("H"), Nq = spec.dims.at("Nq"), Nk = spec.dims.at("Nk");
  auto hidden = (mask == 0).expand({B, H, Nq, Nk}).all(1).all(1);  // (B, Nk): no query sees the key
  auto twin = record;
  twin.strings["case"] = masked_values_case(spec.id);
  twin.strings["describe"] += ", values at fully masked keys replaced";
  twin.ints["seed"] = case_seed++;
  for (const auto& input : exercise_.signature.inputs) {
    if (input.kind == "attention_mask") continue;
    auto axis = std::find(input.shape.begin(), input.shape.end(), "Nk") - input.shape.begin();
    if (axis == static_cast<long>(input.shape.size()) || input.shape.front() != "B") continue;
    if (input.name != "value" && input.name != "key") continue;
    auto& tensor = twin.tensors[wire::key::input(input.name)];
    auto noise = at::randn(tensor.sizes(), generator, tensor.scalar_type()) * 1000.0;
    std::vector<int64_t> view(tensor.dim(), 1);
    view[0] = B;
    view[axis] = Nk;
    tensor = at::where(hidden.reshape(view), noise, tensor);
  }
  return twin;
}

// The constructions `rejects` checks expect refused.
void Kit::plan_rejections(std::vector<wire::Record>& cases, int64_t& case_seed) const {
  for (const auto& check : exercise_.checks) {
    if (check.kind != "rejects") continue;
    wire::Record record;
    record.strings["case"] = "rejects~" + check.id;
    record.strings["kind"] = "construct";
    record.strings["outputs"] = exercise_.signature.outputs.front().name + "\n";
    std::string describe;
    for (const auto& [name, expression] : exercise_.signature.constructor) {
      auto given = check.option("constructor." + name);
      if (given.empty()) throw ConfigError("check '" + check.id + "' gives no constructor." + name);
      put_constructor_argument(record, name, evaluate(given, {}));
      describe += (describe.empty() ? "" : ", ") + name + " = " + given;
    }
    record.strings["describe"] = "constructing with " + describe;
    record.strings[std::string(kMustRefuse)] = "error";
    record.ints["seed"] = case_seed++;
    cases.push_back(record);
  }
}

// The attention probe's cases: crafted queries and keys whose weights the output shows.
void Kit::plan_probe(std::vector<wire::Record>& cases, at::Generator& generator, int64_t& case_seed) const {
  if (!probe_) return;
  {
    const auto& d = probe_->dims;
    const int64_t B = d.at("B"), Nq = d.at("Nq"), Nk = d.at("Nk");
    // Query and key magnitudes with distinct score gaps.
    auto a = (at::arange(Nq, at::kDouble) * 0.35 + 0.7).unsqueeze(0).repeat({B, 1}) +
             at::arange(B, at::kDouble).unsqueeze(1) * 0.05;
    // Not a linear function of the position, so keys computed from the queries (or any other
    // input) cannot pass for a rescaled q.k.
    auto b = (at::arange(Nk, at::kDouble) * 1.3 + 0.4).sin().unsqueeze(0).repeat({B, 1}) -
             at::arange(B, at::kDouble).unsqueeze(1) * 0.1;
    for (const std::string which : {"scale", "mask"}) {
      if (which == "mask" && !has_mask_input()) continue;
      CaseSpec spec{probe_case(which), d, {{"mask", which == "mask" ? "padding" : "none"}}};
      auto record = make_case(spec, generator, case_seed++);
      // The probe's mask is always (B, 1, 1, Nk) (see AttentionProbe).
      const TensorSpec layout{"mask", {"B", "1", "1", "Nk"}, "attention_mask", ""};
      at::Tensor mask = which == "mask" ? make_mask(spec, layout, d, generator) : at::Tensor();
      probe_->design(record, a, b, mask);
      record.tensors["probe.a"] = a;
      record.tensors["probe.b"] = b;
      if (mask.defined()) record.tensors["probe.mask"] = mask;
      record.strings["describe"] += ", probe weights";
      cases.push_back(record);
    }
  }
}

// The twins of each dropout_sites check: every Dropout at 0, then each named one at 1.
void Kit::plan_dropout_sites(std::vector<wire::Record>& cases, int64_t& case_seed) const {
  for (const auto& check : exercise_.checks) {
    if (check.kind != "dropout_sites") continue;
    const auto paths = option_list(check, "names", "dropout");
    for (const auto& path : paths) {
      if (!droppable_.count(path)) {
        throw ConfigError("check '" + check.id + "' names the Dropout '" + path + "', which the reference of " +
                          exercise_.id + " cannot drop (Kit::dropout_sites)");
      }
    }
    if (check.cases.empty()) throw ConfigError("check '" + check.id + "' (dropout_sites) needs a case");
    const auto base = planned_case(cases, check.cases.front(), check.id);
    // Dropouts held at 0 in every twin, never probed: "layers.{L}.dropout" stands for each layer's.
    std::vector<TensorSpec> held;
    for (const auto& path : option_list(check, "silence", "")) held.push_back(TensorSpec{path, {}, "randn", ""});
    std::string silenced;
    for (const auto& path : parameters_of(held, dims_of(base))) silenced += wire::fields_line({path.name, "0"});
    std::vector<std::string> sites = {""};  // "": every Dropout at 0
    sites.insert(sites.end(), paths.begin(), paths.end());
    for (const auto& site : sites) {
      auto twin = base;
      twin.tensors.erase("grad_output");
      twin.strings["case"] = dropout_site_case(check.cases.front(), site);
      auto& describe = twin.strings["describe"];
      for (const auto& [from, to] : {std::pair<std::string, std::string>{", backward", ""}, {" eval", " train"}}) {
        if (auto at = describe.find(from); at != std::string::npos) describe.replace(at, from.size(), to);
      }
      if (!paths.empty()) {
        describe += site.empty() ? ", every Dropout at p = 0" : ", " + site + " at p = 1, the other Dropouts at 0";
      }
      twin.ints["train"] = 1;
      twin.ints["seed"] = case_seed++;
      std::string fixed = silenced;
      for (const auto& path : paths) fixed += wire::fields_line({path, path == site ? "1" : "0"});
      twin.strings["dropout_p"] = fixed;
      cases.push_back(std::move(twin));
    }
  }
}

std::vector<wire::Record> Kit::plan_cases(uint64_t seed) {
  validate_checks();
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  int64_t case_seed = static_cast<int64_t>(seed % 1000003);
  const auto wants = case_wants();
  std::vector<wire::Record> cases;
  for (const auto& spec : cases_) {
    auto record = make_case(spec, generator, case_seed++);
    if (wants.grad.count(spec.id)) {
      const auto& output = exercise_.signature.outputs.front();
      record.tensors["grad_output"] = at::randn(shape_of(output, spec.dims), generator, at::kDouble);
      record.strings["describe"] += ", backward";
    }
    cases.push_back(record);
    if (wants.repeat.count(spec.id)) {
      auto repeat = record;
      repeat.strings["case"] = repeat_case(spec.id);
      repeat.strings["describe"] += ", run again";
      repeat.ints["seed"] = case_seed++;
      cases.push_back(repeat);
    }
    if (auto later = wants.later.find(spec.id); later != wants.later.end()) {
      auto twin = later_redrawn_twin(record, later->second, generator);
      twin.ints["seed"] = case_seed++;
      cases.push_back(std::move(twin));
    }
    if (wants.train.count(spec.id)) {
      for (int run = 0; run < 2; ++run) {
        auto twin = record;
        twin.tensors.erase("grad_output");
        twin.strings["case"] = training_case(spec.id, run);
        twin.strings["describe"] += run == 0 ? ", training mode" : ", training mode, run again";
        twin.ints["train"] = 1;
        twin.ints["seed"] = case_seed++;
        cases.push_back(std::move(twin));
      }
    }
    if (wants.moved.count(spec.id)) {
      for (auto& twin : moved_twins(spec, record, generator)) {
        twin.ints["seed"] = case_seed++;
        cases.push_back(std::move(twin));
      }
    }
    if (wants.masked.count(spec.id)) cases.push_back(masked_values_twin(spec, record, generator, case_seed));
  }
  plan_rejections(cases, case_seed);
  plan_probe(cases, generator, case_seed);
  for (const auto& spec : refusals_) {
    auto record = make_case(spec, generator, case_seed++);
    record.strings["describe"] += ", which must be refused";
    record.strings[std::string(kMustRefuse)] = "error";
    cases.push_back(std::move(record));
  }
  plan_dropout_sites(cases, case_seed);
  for (const auto& add : extra_) add(*this, cases, generator);
  plan_isolation(cases, case_seed);
  for (auto& record : cases) record.strings["device"] = target().device;
  return cases;
}

bool Kit::is_refusal(const std::string& case_id) const {
  return std::any_of(refusals_.begin(), refusals_.end(), [&](const CaseSpec& spec) { return spec.id == case_id; });
}

namespace {
double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}
}  // namespace

std::vector<double> Kit::time_reference(const std::vector<wire::Record>& requests) const {
  std::vector<double> seconds;
  seconds.reserve(requests.size());
  for (const auto& request : requests) {
    double taken = -1;
    if (!is_refusal(request.string_or("case", ""))) {
      CaseRun run;
      run.request = request;
      // This thread's CPU time, not the wall clock's: a busy machine does not move a case's limit.
      const double start = thread_cpu_seconds();
      try {
        (void)reference_(data_of(run), {});
        taken = thread_cpu_seconds() - start;
      } catch (const std::exception&) {  // a case the reference does not take: no base for its limit
      }
    }
    seconds.push_back(taken);
  }
  return seconds;
}

std::vector<CheckResult> Kit::judge_cases(const JudgeInput& input) {
  input_ = &input;
  status_.clear();
  findings_.reset();
  measured_.clear();
  references_.clear();
  explains_.clear();
  std::vector<CheckResult> out;
  for (const auto& spec : exercise_.checks) {
    try {
      std::vector<std::string> lacking;
      for (const auto& id : spec.cases) {
        if (unsupported_.count(id)) lacking.push_back(id + ": " + unsupported_.at(id));
      }
      if (!spec.cases.empty() && lacking.size() == spec.cases.size()) {
        auto result = results_.skip(spec.id, "not assessed on this machine: " + lacking.front());
        result.weight = spec.weight;
        result.title = spec.title;
        out.push_back(std::move(result));
        continue;
      }
      profile::Span span(spec.id);
      auto result = run_kind(spec);
      result.seconds = span.end();
      // What passed was shown on the cases that could run; say which could not.
      if (result.status == CheckStatus::passed) {
        for (const auto& why : lacking) result.message += " (not assessed on this machine: " + why + ")";
        result.partly_assessed = !lacking.empty();
      }
      // A failure whose cause was put on another focus point (a diagnosed
      // mistake of that point) still leaves its own point unshown: covered,
      // so it is not established, never met on its other checks' passes.
      if (result.status == CheckStatus::failed && !spec.focus_point.empty() && result.focus_point != spec.focus_point &&
          std::find(result.covers.begin(), result.covers.end(), spec.focus_point) == result.covers.end()) {
        result.covers.push_back(spec.focus_point);
      }
      result.id = spec.id;
      result.weight = spec.weight;
      result.title = spec.title;
      out.push_back(std::move(result));
    } catch (const Error&) {
      throw;
    } catch (const std::exception& error) {
      // A check that cannot handle an output of another shape (empty, 0-dim)
      // is not assessed, with the shape as the reason: the learner's shape,
      // not the grader, stopped it (the shape checks fail on it).
      if (auto shape = misshapen_output()) {
        auto result = results_.skip(spec.id, "not assessed: " + *shape);
        result.weight = spec.weight;
        result.title = spec.title;
        out.push_back(std::move(result));
        continue;
      }
      throw GraderFault("the check '" + spec.id + "' of " + exercise_.id +
                        " failed inside the grader: " + error.what());
    }
  }
  // An error no rule explains (exercise.yaml `errors:`, a feature of the
  // failing cases) shows no concept missing: the check that met it counts
  // against no focus point, and those it covers are not established.
  for (auto& result : out) result.blames_focus &= !result.threw;
  mark_consequences(out);
  return out;
}

CheckResult Kit::run_kind(const CheckSpec& spec) const {
  if (is_measurement(spec)) return measured(spec);
  auto found = custom_.find(spec.kind);
  if (found != custom_.end()) return found->second(*this, spec);
  const auto* kind = find_kind(spec.kind);
  if (!kind) throw GraderFault("check kind '" + spec.kind + "' has no implementation");
  return (this->*kind->run)(spec);
}

CheckResult Kit::no_builtins(const CheckSpec& spec) const {
  auto result = check_no_builtins(results_, *input_);
  result.id = spec.id;
  if (result.status != CheckStatus::passed || spec.option("no_graph", "") != "true") return result;
  // `no_graph: true`: the learner's Functions derive their backward by hand,
  // so none of their own operators may build an autograd graph (grad mode is
  // off inside a custom Function's forward and backward unless switched on).
  for (const auto& [id, run] : input_->cases) {
    const auto trace = run.trace();
    if (trace.graph_ops == 0) continue;
    return results_.fail(
        spec.id,
        "your code switches grad mode on inside its Functions and builds an autograd graph (" + trace.graph_op +
            " on a tensor that requires grad): a graph walked or differentiated there is autograd doing the "
            "backward; derive it by hand from the tensors forward saved",
        {fmt::format("{}: {} operator calls of your own with grad mode on and an input that requires grad, the "
                     "first {}",
                     run.describe(), trace.graph_ops, trace.graph_op)});
  }
  return result;
}

std::vector<std::string> Kit::cases_of(const CheckSpec& spec) const {
  std::vector<std::string> ids;
  for (const auto& id : spec.cases) {
    if (!unsupported_.count(id)) ids.push_back(id);
  }
  if (!spec.cases.empty()) return ids;
  for (const auto& c : cases_) ids.push_back(c.id);
  return ids;
}

CaseData Kit::data_of(const CaseRun& run) const {
  CaseData data;
  data.dims = dims_of(run.request);
  for (const auto& [key, tensor] : run.request.tensors) {
    auto converted = tensor.is_floating_point() ? tensor.to(at::kDouble) : tensor;
    if (const auto name = wire::key::input_name(key)) data.inputs[*name] = converted;
    if (const auto name = wire::key::param_name(key)) data.params[*name] = converted;
  }
  data.train = run.request.integer_or("train", 0) != 0;
  if (run.request.strings.count("dropout_p")) {
    data.dropped.emplace();
    for (const auto& fields : wire::field_lines(run.request.string("dropout_p"))) {
      if (fields.size() == 2 && wire::number_field(fields[1]) == 1.0) data.dropped->insert(fields[0]);
    }
  }
  return data;
}

Tensors Kit::expected(const CaseRun& run, const std::string& mistake) const {
  return expected(run, mistake.empty() ? std::vector<std::string>{} : std::vector<std::string>{mistake});
}

Tensors Kit::expected(const CaseData& data, const std::string& mistake) const {
  return reference_(data, mistake.empty() ? std::vector<std::string>{} : std::vector<std::string>{mistake});
}

// The reference (with `mistakes` replayed) on one of this grade's cases, computed
// once per grade: the checks, their explanations and the replays of every
// candidate mistake ask for the same few again and again. Each caller gets
// its own copy of the tensors.
// Two mistakes replayed together may not run at all (two changes of one
// mask's shape): such a replay gives no tensors, so it explains nothing.
Tensors Kit::expected(const CaseRun& run, const std::vector<std::string>& mistakes) const {
  auto compute = [&]() -> Tensors {
    if (mistakes.size() < 2) return reference_(data_of(run), mistakes);
    try {
      return reference_(data_of(run), mistakes);
    } catch (const c10::Error&) {
      return {};
    }
  };
  const auto id = run.request.string_or("case", "");
  const bool ours = input_ && input_->cases.count(id) && &input_->cases.at(id) == &run;
  if (!ours) return compute();
  auto key = std::make_pair(id, mistakes);
  auto found = references_.find(key);
  if (found == references_.end()) found = references_.emplace(std::move(key), compute()).first;
  Tensors copy;
  for (const auto& [name, tensor] : found->second) copy[name] = tensor.clone();
  return copy;
}

std::optional<std::string> Kit::not_runnable(const CaseRun& run) const {
  if (run.threw()) return "your code threw an error on " + run.describe() + ": " + first_line(run.error());
  if (run.response.strings.count("missing_parameters")) {
    return "the grader could not load its weights into your module (see the check of registered parameters)";
  }
  return std::nullopt;
}

// How the learner's outputs on `run` compare with `want`: within `tolerance`,
// or (with `loose`) only within float32's, or not.
CaseStatus Kit::outputs_status(const CaseRun& run, const Tensors& want, const Tolerance& tolerance,
                               bool loose) const {
  auto status = CaseStatus::matches;
  for (const auto& [name, tensor] : want) {
    std::string why;
    auto got = learner_tensor(run, name, why);
    if (!got) return CaseStatus::differs;
    if (compare(tensor, *got, tolerance).ok) continue;
    if (!loose || !compare(tensor, *got, exercise_.tolerance("float32")).ok) return CaseStatus::differs;
    status = CaseStatus::precision;
  }
  return status;
}

CaseStatus Kit::status(const std::string& case_id) const {
  auto cached = status_.find(case_id);
  if (cached != status_.end()) return cached->second;
  const auto& run = input_->at(case_id);
  CaseStatus status = CaseStatus::matches;
  if (run.threw()) {
    status = CaseStatus::threw;
  } else if (not_runnable(run)) {
    status = CaseStatus::unusable;
  } else {
    const auto dtype = run.request.string_or("dtype", "float64");
    // A float64 case matches at float64 precision only (tolerances.exact): the
    // reference's, or a tolerated variant's (a constant rounded to float32).
    const auto& tolerance = exercise_.tolerance(dtype == "float64" ? "exact" : dtype);
    status = outputs_status(run, expected(run), tolerance, dtype == "float64");
    for (size_t i = 0; status != CaseStatus::matches && dtype == "float64" && i < exercise_.tolerated.size(); ++i) {
      if (outputs_status(run, expected(run, std::vector<std::string>{exercise_.tolerated[i].id}), tolerance, false) == CaseStatus::matches)
        status = CaseStatus::matches;
    }
  }
  status_[case_id] = status;
  return status;
}

bool Kit::is_measurement(const CheckSpec& spec) const {
  if (measurements_.count(spec.kind)) return true;
  if (custom_.count(spec.kind)) return false;
  const auto* kind = find_kind(spec.kind);
  return kind && kind->measurement;
}

const std::vector<CheckResult>& Kit::findings() const {
  if (findings_) return *findings_;
  findings_.emplace();
  for (const auto& spec : exercise_.checks) {
    if (!is_measurement(spec)) continue;
    const auto& result = measured(spec);
    if (result.status == CheckStatus::failed) findings_->push_back(result);
  }
  return *findings_;
}

const CheckResult& Kit::measured(const CheckSpec& spec) const {
  auto found = measured_.find(spec.id);
  if (found != measured_.end()) return found->second;
  CheckResult result =
      measurements_.count(spec.kind) ? custom_.at(spec.kind)(*this, spec) : (this->*find_kind(spec.kind)->run)(spec);
  return measured_.emplace(spec.id, std::move(result)).first->second;
}

std::map<std::string, at::Tensor> Kit::learner_outputs(const CaseRun& run) const {
  Tensors outputs;
  for (const auto& output : exercise_.signature.outputs) {
    std::string why;
    if (auto got = learner_tensor(run, output.name, why)) outputs[output.name] = *got;
  }
  return outputs;
}

}  // namespace grader::kit
