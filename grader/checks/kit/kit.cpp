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

#include "errors.h"
#include "report.h"
#include "runner/op_recorder.h"

namespace grader::kit {
namespace {

const std::set<std::string> kKinds = {"parameters",     "rejects",          "shapes",          "numerics",
                                      "gradients",      "deterministic",    "masked_values",   "work_growth",
                                      "dependence",     "no_builtins",      "attention_scale", "attention_axis",
                                      "attention_mask", "refuses",          "dropouts",        "dropout_in_training",
                                      "dropout_sites",  "device_placement", "gpu_execution"};

}  // namespace

std::optional<std::string> device_mismatch(const std::string& error) {
  if (error.find("same device") == std::string::npos &&
      error.find("Expected object of device type") == std::string::npos)
    return std::nullopt;
  std::string op = "an operator";
  auto method = error.find("in method ");
  if (method != std::string::npos) {
    auto name = error.substr(method + 10);
    name = name.substr(0, name.find_first_of(") \n"));
    for (const char* prefix : {"wrapper_CUDA_", "wrapper_CPU_", "wrapper_", "_"}) {
      while (name.rfind(prefix, 0) == 0) name = name.substr(std::string(prefix).size());
    }
    if (!name.empty()) op = name;
  }
  // LibTorch 2.x: "expected self and mask to be on the same device, but got mask on cpu and self on cuda:0".
  auto got = error.find("but got ");
  if (op == "an operator" && got != std::string::npos) {
    op += " (" + error.substr(got + 8, error.find_first_of(")\n", got) - got - 8) + ")";
  }
  auto argument = error.find("argument for argument ");
  if (argument != std::string::npos) {
    auto name = error.substr(argument + 22);
    name = name.substr(0, name.find(' '));
    if (!name.empty()) op += " (its argument " + name + ")";
  }
  return op;
}

namespace {

// A check option that is a comma-separated list ("dropout, layers.{L}.dropout"), each item trimmed.
std::vector<std::string> option_list(const CheckSpec& spec, const std::string& key, const std::string& fallback) {
  std::vector<std::string> items;
  std::istringstream list(spec.option(key, fallback));
  for (std::string item; std::getline(list, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Every constructor argument travels as a real; a whole number also as an
// integer, so drivers read each argument with the type the module takes.
void put_constructor_argument(wire::Record& record, const std::string& name, double value) {
  record.reals["ctor." + name] = value;
  if (value == std::floor(value)) record.ints["ctor." + name] = static_cast<int64_t>(value);
}

at::ScalarType dtype_of(const std::string& name) { return wire::floating_dtype(name); }

// The mask of one case: undefined for "none"; else broadcastable to (B, H, Nq, Nk).
at::Tensor make_mask(const CaseSpec& spec, const TensorSpec& input, const Dims& d, at::Generator& generator) {
  const auto kind = spec.trait("mask", "none");
  if (kind == "none") return {};
  const int64_t B = d.at("B"), H = d.at("H"), Nq = d.at("Nq"), Nk = d.at("Nk");
  at::Tensor mask;
  if (kind == "padding") {
    mask = at::ones({B, 1, 1, Nk}, at::kBool);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t keep = Nk > 1 ? std::max<int64_t>(1, Nk - 1 - b % (Nk - 1)) : 1;
      mask[b].narrow(-1, keep, Nk - keep).fill_(false);
    }
    if (input.shape.size() == 2) mask = mask.reshape({B, Nk});  // a model's (B, N) mask
  } else if (kind == "causal") {
    mask = at::ones({Nq, Nk}, at::kBool).tril(std::max<int64_t>(0, Nk - Nq));
  } else if (kind == "per_head" || kind == "heads_shared") {
    mask = at::rand({B, kind == "per_head" ? H : 1, Nq, Nk}, generator) > 0.4;
    mask.select(-1, 0).fill_(true);  // every query keeps at least one key
  } else {
    throw ConfigError("case '" + spec.id + "': unknown mask '" + kind +
                      "' (none, padding, causal, per_head, heads_shared)");
  }
  if (spec.trait("mask_dtype", "bool") == "int64") mask = mask.to(at::kLong);
  return mask;
}

std::string mask_text(const CaseSpec& spec, const TensorSpec& input) {
  const auto kind = spec.trait("mask", "none");
  const auto dtype = spec.trait("mask_dtype", "bool");
  if (kind == "none") return "no mask";
  if (kind == "padding")
    return std::string("padding mask ") + (input.shape.size() == 2 ? "(B, N) " : "(B, 1, 1, Nk) ") + dtype;
  if (kind == "causal") return "causal mask (Nq, Nk) " + dtype;
  if (kind == "per_head") return "per-head mask (B, H, Nq, Nk) " + dtype;
  return "mask (B, 1, Nq, Nk) " + dtype;
}

std::vector<int64_t> shape_of(const TensorSpec& spec, const Dims& dims) {
  std::vector<int64_t> shape;
  for (const auto& dim : spec.shape) shape.push_back(evaluate_dim(dim, dims));
  return shape;
}

// Equal within a relative 1e-4: measured values are float64 and exact enough.
bool near(double a, double b) { return std::abs(a - b) <= 1e-4 * std::max(std::abs(a), std::abs(b)) + 1e-12; }

// Four decimals where they show the value; significant digits where they
// would not (a fill of -1e-9 is not "-0.0000").
std::string number(double value) {
  const double size = std::abs(value);
  if (value == 0 || (size >= 1e-3 && size < 1e5)) return fmt::format("{:.4f}", value);
  return fmt::format("{:.4g}", value);
}

// Evaluates "lhs op rhs" for a case: dims and traits by name, else literals.
bool feature_holds(const std::string& when, const CaseSpec& spec) {
  std::istringstream in(when);
  std::string lhs, op, rhs;
  in >> lhs >> op >> rhs;
  auto value = [&](const std::string& token) -> std::string {
    if (spec.dims.count(token)) return std::to_string(spec.dims.at(token));
    if (spec.traits.count(token)) return spec.traits.at(token);
    if (token == "mask") return "none";
    if (token == "dtype") return "float64";
    if (token == "mode") return "eval";
    return token;
  };
  if (op == "==") return value(lhs) == value(rhs);
  if (op == "!=") return value(lhs) != value(rhs);
  if (op == "<" || op == ">") {
    double a = 0, b = 0;
    std::istringstream left(value(lhs)), right(value(rhs));
    if (!(left >> a) || !(right >> b)) {
      throw ConfigError("feature condition '" + when + "': < and > compare numbers (dimensions or literals)");
    }
    return op == "<" ? a < b : a > b;
  }
  throw ConfigError("feature condition '" + when + "': use 'a == b', 'a != b', 'a < b' or 'a > b'");
}

}  // namespace

double evaluate(const std::string& expression, const Dims& dims) {
  // expression = term (('+' | '-') term)*; term = factor (('*' | '/') factor)*;
  // factor = number | dimension | '(' expression ')'.
  size_t at = 0;
  auto fail = [&](const std::string& why) -> double {
    throw ConfigError("cannot evaluate '" + expression + "': " + why);
  };
  auto skip = [&] {
    while (at < expression.size() && expression[at] == ' ') ++at;
  };
  std::function<double()> sum;
  auto factor = [&]() -> double {
    skip();
    if (at < expression.size() && expression[at] == '(') {
      ++at;
      double value = sum();
      skip();
      if (at >= expression.size() || expression[at] != ')') return fail("a '(' without ')'");
      ++at;
      return value;
    }
    const size_t start = at;
    while (at < expression.size() &&
           (std::isalnum(static_cast<unsigned char>(expression[at])) || expression[at] == '_' || expression[at] == '.'))
      ++at;
    const auto token = expression.substr(start, at - start);
    if (token.empty()) return fail("expected a number or a dimension at position " + std::to_string(start));
    if (dims.count(token)) return static_cast<double>(dims.at(token));
    try {
      size_t used = 0;
      double value = std::stod(token, &used);
      if (used == token.size()) return value;
    } catch (const std::exception&) {
    }
    return fail("'" + token + "' is neither a dimension nor a number");
  };
  auto product = [&]() -> double {
    double value = factor();
    for (skip(); at < expression.size() && (expression[at] == '*' || expression[at] == '/'); skip()) {
      const char op = expression[at++];
      const double operand = factor();
      value = op == '*' ? value * operand : value / operand;
    }
    return value;
  };
  sum = [&]() -> double {
    double value = product();
    for (skip(); at < expression.size() && (expression[at] == '+' || expression[at] == '-'); skip()) {
      const char op = expression[at++];
      const double operand = product();
      value = op == '+' ? value + operand : value - operand;
    }
    return value;
  };
  const double value = sum();
  skip();
  if (at != expression.size()) fail("unexpected '" + expression.substr(at) + "'");
  return value;
}

namespace {

// A name with one "{X}" ("layers.{L}.linear1.weight"): what comes before and
// after it, and how many indices X stands for in `dims`.
struct NameTemplate {
  std::string before, after;
  int64_t count = 0;
};

std::optional<NameTemplate> name_template(const std::string& name, const Dims& dims) {
  const auto open = name.find('{');
  if (open == std::string::npos) return std::nullopt;
  const auto close = name.find('}', open);
  if (close == std::string::npos) throw ConfigError("parameter '" + name + "': '{' without '}'");
  return NameTemplate{name.substr(0, open), name.substr(close + 1),
                      evaluate_dim(name.substr(open + 1, close - open - 1), dims)};
}

}  // namespace

std::vector<TensorSpec> parameters_of(const std::vector<TensorSpec>& parameters, const Dims& dims) {
  std::vector<TensorSpec> out;
  for (const auto& param : parameters) {
    auto pattern = name_template(param.name, dims);
    if (!pattern) {
      out.push_back(param);
      continue;
    }
    for (int64_t i = 0; i < pattern->count; ++i) {
      auto one = param;
      one.name = pattern->before + std::to_string(i) + pattern->after;
      out.push_back(one);
    }
  }
  return out;
}

int64_t evaluate_dim(const std::string& expression, const Dims& dims) {
  const double value = evaluate(expression, dims);
  if (value != std::floor(value)) throw ConfigError("'" + expression + "' is not a whole number here");
  return static_cast<int64_t>(value);
}

std::optional<double> registered_dropout(const CaseRun& run, const std::string& path) {
  for (const auto& line : split_lines(run.response.string_or("dropouts", ""))) {
    if (line.rfind(path + " ", 0) == 0) return std::stod(line.substr(path.size() + 1));
  }
  return std::nullopt;
}

std::string repeat_case(const std::string& id) { return id + "~repeat"; }
std::string masked_values_case(const std::string& id) { return id + "~masked_values"; }
std::string probe_case(const std::string& which) { return "probe~" + which; }
std::string moved_case(const std::string& id, const std::string& what) { return id + "~moved." + what; }
std::string training_case(const std::string& id, int run) { return id + (run == 0 ? "~train" : "~train_again"); }
std::optional<int64_t> unique_closest(std::vector<std::pair<double, int64_t>> errors, double tolerance) {
  std::sort(errors.begin(), errors.end());
  if (errors.empty() || errors[0].first > tolerance) return std::nullopt;
  if (errors.size() > 1 && errors[1].first < 100 * errors[0].first) return std::nullopt;
  return errors[0].second;
}

std::string dropout_site_case(const std::string& id, const std::string& path) {
  return id + "~drop:" + (path.empty() ? "none" : path);
}

std::string name_scale(double value, const std::map<std::string, double>& quantities, bool measured) {
  std::vector<std::string> names;
  std::string formula;
  if (near(value, 1.0)) return number(value) + " (not scaled at all)";
  for (const auto& [name, q] : quantities) {
    const std::string n = fmt::format("{:g}", q);
    const std::vector<std::pair<double, std::pair<std::string, std::string>>> forms = {
        {q, {n, name}},
        {1 / q, {"1/" + n, "1/" + name}},
        {std::sqrt(q), {"sqrt(" + n + ")", "sqrt(" + name + ")"}},
        {1 / std::sqrt(q), {"1/sqrt(" + n + ")", "1/sqrt(" + name + ")"}}};
    for (const auto& [candidate, text] : forms) {
      if (!near(value, candidate)) continue;
      if (formula.empty()) formula = text.first;
      names.push_back(text.second);
      break;
    }
  }
  if (!names.empty()) {
    std::string joined;
    for (size_t i = 0; i < names.size(); ++i) joined += (i ? " or " : "") + names[i];
    // A measured value that equals a quantity's may do so by coincidence
    // (1/int(sqrt(6)) is 1/sqrt(4) on a probe with 4 heads): say "here".
    if (measured) return number(value) + " = " + formula + ", which is " + joined + " on this input";
    return number(value) + " = " + formula + " = " + joined;
  }
  const double inverse_square = 1 / (value * value);
  if (value > 0 && near(inverse_square, std::round(inverse_square)) && std::round(inverse_square) > 1) {
    return number(value) + fmt::format(" = 1/sqrt({:g})", std::round(inverse_square));
  }
  return number(value);
}

Kit::Kit(const Exercise& exercise, Reference reference, std::vector<std::string> replayable)
    : exercise_(exercise), results_(exercise), reference_(std::move(reference)), replayable_(std::move(replayable)) {
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

Dims dims_of(const wire::Record& record) {
  Dims dims;
  for (const auto& [key, value] : record.ints) {
    if (key.rfind("dim.", 0) == 0) dims[key.substr(4)] = value;
  }
  return dims;
}

int64_t case_size(const CaseSpec& spec) {
  int64_t size = 1;
  for (const auto& [name, value] : spec.dims) size *= std::max<int64_t>(1, value);
  return size;
}

const wire::Record& planned_case(const std::vector<wire::Record>& cases, const std::string& id,
                                 const std::string& who) {
  auto found = std::find_if(cases.begin(), cases.end(), [&](const wire::Record& r) { return r.string("case") == id; });
  if (found == cases.end()) throw ConfigError(who + " needs the case '" + id + "', which is not planned");
  return *found;
}

bool mentions_any(const std::string& text, const std::vector<std::string>& words) {
  auto lower = [](std::string value) {
    std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::tolower(c); });
    return value;
  };
  const auto haystack = lower(text);
  return std::any_of(words.begin(), words.end(),
                     [&](const std::string& word) { return haystack.find(lower(word)) != std::string::npos; });
}

std::string unsupported_dtype(const std::string& name) {
  const auto dtype = dtype_of(name);
  if (dtype == at::kDouble || dtype == at::kFloat) return "";
  try {
    auto x = at::ones({1, 2, 2}, at::TensorOptions().dtype(dtype));
    auto w = at::softmax(at::matmul(x, x.transpose(-2, -1)).masked_fill(at::eye(2, at::kBool), -1e4), -1);
    (void)at::matmul(w, x).sum().item<double>();
    return "";
  } catch (const c10::Error& error) {
    return "this LibTorch (" TORCH_VERSION ", CPU) cannot run attention in " + name + " (" +
           first_line(error.what_without_backtrace()) + ")";
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
  std::string outputs, describe;
  for (const auto& output : sig.outputs) outputs += output.name + "\n";
  record.strings["outputs"] = outputs;
  for (const auto& [name, value] : spec.dims) {
    record.ints["dim." + name] = value;
    describe += (describe.empty() ? "" : " ") + name + "=" + std::to_string(value);
  }
  for (const auto& [name, expression] : sig.constructor) {
    put_constructor_argument(record, name, evaluate(expression, spec.dims));
  }
  for (const auto& [name, expression] : sig.arguments) {
    record.ints["arg." + name] = evaluate_dim(expression, spec.dims);
  }
  for (const auto& input : sig.inputs) {
    if (input.kind == "attention_mask") {
      auto mask = make_mask(spec, input, spec.dims, generator);
      if (mask.defined()) record.tensors["input." + input.name] = mask;
      continue;
    }
    if (input.kind == "tokens") {
      const auto below = evaluate_dim(input.below, spec.dims);
      record.tensors["input." + input.name] = at::randint(below, shape_of(input, spec.dims), generator, at::kLong);
      continue;
    }
    // "logits: large" puts scores in the thousands (a softmax without its max subtracted overflows).
    const double spread = spec.trait("logits", "normal") == "large" ? 40.0 : 1.0;
    record.tensors["input." + input.name] = rounded(at::randn(shape_of(input, spec.dims), generator, options) * spread);
  }
  for (const auto& param : parameters_of(sig.parameters, spec.dims)) {
    auto shape = shape_of(param, spec.dims);
    const double bound = 1.0 / std::sqrt(static_cast<double>(shape.back()));
    record.tensors["param." + param.name] = rounded(at::empty(shape, options).uniform_(-bound, bound, generator));
  }
  describe += " " + record.strings["dtype"] + " " + spec.trait("mode", "eval");
  for (const auto& [name, value] : spec.traits) {
    if (name != "dtype" && name != "mode" && name != "mask" && name != "mask_dtype" && name != "expect")
      describe += " " + name + "=" + value;
  }
  for (const auto& input : sig.inputs) {
    if (input.kind == "attention_mask") describe += ", " + mask_text(spec, input);
  }
  record.strings["describe"] = describe;
  return record;
}

std::vector<wire::Record> Kit::plan(uint64_t seed) {
  for (const auto& check : exercise_.checks) {
    if (!custom_.count(check.kind) && !kKinds.count(check.kind)) {
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
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  int64_t case_seed = static_cast<int64_t>(seed % 1000003);
  std::set<std::string> want_grad, want_repeat, want_masked, want_moved, want_train;
  for (const auto& check : exercise_.checks) {
    for (const auto& id : check.cases) {
      if (check.kind == "gradients") want_grad.insert(id);
      if (check.kind == "deterministic" || check.kind == "masked_values" || check.kind == "dependence")
        want_repeat.insert(id);
      if (check.kind == "dependence") want_moved.insert(id);
      if (check.kind == "masked_values") want_masked.insert(id);
      if (check.kind == "dropout_in_training") want_train.insert(id);
    }
  }
  std::vector<wire::Record> cases;
  for (const auto& spec : cases_) {
    auto record = make_case(spec, generator, case_seed++);
    if (want_grad.count(spec.id)) {
      const auto& output = exercise_.signature.outputs.front();
      record.tensors["grad_output"] = at::randn(shape_of(output, spec.dims), generator, at::kDouble);
      record.strings["describe"] += ", backward";
    }
    cases.push_back(record);
    if (want_repeat.count(spec.id)) {
      auto repeat = record;
      repeat.strings["case"] = repeat_case(spec.id);
      repeat.strings["describe"] += ", run again";
      repeat.ints["seed"] = case_seed++;
      cases.push_back(repeat);
    }
    if (want_train.count(spec.id)) {
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
    if (want_moved.count(spec.id)) {
      for (auto& twin : moved_twins(spec, record, generator)) {
        twin.ints["seed"] = case_seed++;
        cases.push_back(std::move(twin));
      }
    }
    if (want_masked.count(spec.id)) {
      // Huge values behind the keys no query may attend to: nothing may move.
      const auto* mask_input = &exercise_.signature.inputs.front();
      for (const auto& input : exercise_.signature.inputs) {
        if (input.kind == "attention_mask") mask_input = &input;
      }
      if (!record.has_tensor("input." + mask_input->name)) {
        throw ConfigError("case '" + spec.id + "' is used by a masked_values check but has no mask");
      }
      const auto& mask = record.tensor("input." + mask_input->name);
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
        auto& tensor = twin.tensors["input." + input.name];
        auto noise = at::randn(tensor.sizes(), generator, tensor.scalar_type()) * 1000.0;
        std::vector<int64_t> view(tensor.dim(), 1);
        view[0] = B;
        view[axis] = Nk;
        tensor = at::where(hidden.reshape(view), noise, tensor);
      }
      cases.push_back(twin);
    }
  }
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
    record.ints["seed"] = case_seed++;
    cases.push_back(record);
  }
  if (probe_) {
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
  for (const auto& spec : refusals_) {
    auto record = make_case(spec, generator, case_seed++);
    record.strings["describe"] += ", which must be refused";
    cases.push_back(std::move(record));
  }
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
    for (const auto& path : parameters_of(held, dims_of(base))) silenced += path.name + " 0\n";
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
      for (const auto& path : paths) fixed += path + (path == site ? " 1\n" : " 0\n");
      twin.strings["dropout_p"] = fixed;
      cases.push_back(std::move(twin));
    }
  }
  for (const auto& add : extra_) add(*this, cases, generator);
  plan_isolation(cases, case_seed);
  for (auto& record : cases) record.strings["device"] = target().device;
  return cases;
}

bool Kit::is_refusal(const std::string& case_id) const {
  return std::any_of(refusals_.begin(), refusals_.end(), [&](const CaseSpec& spec) { return spec.id == case_id; });
}

std::vector<double> Kit::reference_seconds(const std::vector<wire::Record>& requests) const {
  std::vector<double> seconds;
  seconds.reserve(requests.size());
  for (const auto& request : requests) {
    double taken = -1;
    if (!is_refusal(request.string_or("case", ""))) {
      CaseRun run;
      run.request = request;
      const auto start = std::chrono::steady_clock::now();
      try {
        (void)reference_(data_of(run), {});
        taken = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      } catch (const std::exception&) {  // a case the reference does not take: no base for its limit
      }
    }
    seconds.push_back(taken);
  }
  return seconds;
}

std::vector<CheckResult> Kit::judge(const JudgeInput& input) {
  input_ = &input;
  status_.clear();
  findings_.reset();
  measured_.clear();
  references_.clear();
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
      const auto started = std::chrono::steady_clock::now();
      auto result = run_kind(spec);
      result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
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

Kit::RoundingMeasure Kit::measure_rounding(const CaseRun& run, const Tensors& reference, const Tensors& learner) const {
  RoundingMeasure measure;
  for (const auto& [name, want] : reference) {
    if (auto got = learner.find(name); got != learner.end() && got->second.sizes() == want.sizes())
      measure.deviation = std::max(measure.deviation, (got->second.to(at::kDouble) - want).abs().max().item<double>());
  }
  measure.rounding = float32_rounding(run, reference);
  return measure;
}

bool Kit::rounding_explains(const CaseRun& run) const {
  if (status(run.request.string("case")) != CaseStatus::precision || !findings().empty()) return false;
  const auto reference = expected(run);
  Tensors learner;
  for (const auto& [name, want] : reference) {
    std::string why;
    if (auto got = learner_tensor(run, name, why)) learner[name] = *got;
  }
  return measure_rounding(run, reference, learner).explains();
}

std::optional<std::string> Kit::misshapen_output() const {
  for (const auto& spec : cases_) {
    const auto& run = input_->at(spec.id);
    if (not_runnable(run)) continue;
    for (const auto& output : exercise_.signature.outputs) {
      std::string why;
      auto tensor = learner_tensor(run, output.name, why);
      if (!tensor) continue;
      const auto want = shape_of(output, spec.dims);
      if (tensor->sizes() != at::IntArrayRef(want)) {
        return "your output '" + output.name + "' has shape " + shape_string(tensor->sizes()) + " on " +
               run.describe() + ", expected " + shape_string(want) + " (see the shape checks)";
      }
    }
  }
  return std::nullopt;
}

std::optional<double> Kit::float32_rounding(const CaseRun& run, const Tensors& exact) const {
  try {
    auto data = data_of(run);
    for (auto* tensors : {&data.inputs, &data.params}) {
      for (auto& [name, tensor] : *tensors) {
        if (tensor.scalar_type() == at::kDouble) tensor = tensor.to(at::kFloat);
      }
    }
    const auto rounded = expected(data);
    double largest = 0;
    for (const auto& [name, want] : exact) {
      auto got = rounded.find(name);
      if (got == rounded.end()) return std::nullopt;
      largest = std::max(largest, (got->second.to(at::kDouble) - want).abs().max().item<double>());
    }
    return largest > 0 ? std::optional<double>(largest) : std::nullopt;
  } catch (const c10::Error&) {
    return std::nullopt;  // the reference does not run in float32 here: no claim either way
  }
}

std::optional<bool> Kit::replay_matches(const CaseRun& run, const Tensors& outputs,
                                        const std::vector<std::string>& mistakes) const {
  auto replayed = expected(run, mistakes);
  if (replayed.empty()) return std::nullopt;
  const auto& tolerance = exercise_.tolerance(run.request.string_or("dtype", "float64"));
  for (const auto& [name, tensor] : replayed) {
    auto got = outputs.find(name);
    if (got == outputs.end() || !compare(tensor, got->second, tolerance).ok) return false;
  }
  return true;
}

bool Kit::explains_every_case(const std::string& mistake) const {
  if (std::find(replayable_.begin(), replayable_.end(), mistake) == replayable_.end()) return false;
  size_t compared = 0;
  for (const auto& spec : cases_) {
    const auto s = status(spec.id);
    if (s == CaseStatus::threw || s == CaseStatus::unusable) continue;
    const auto& run = input_->at(spec.id);
    const auto matched = replay_matches(run, learner_outputs(run), {mistake});
    if (matched == false) return false;
    compared += matched.has_value();  // not replayable there: says nothing
  }
  return compared > 0;
}

void Kit::mark_consequences(std::vector<CheckResult>& results) const {
  auto set_aside = [](CheckResult& result, const std::string& why) {
    result.blames_focus = false;
    result.message += " (" + why + ")";
  };
  auto blames = [](const CheckResult& r) { return r.status == CheckStatus::failed && r.blames_focus; };
  // Parameters other than the statement's (a bias it does not have, a wrong
  // shape): every other difference may follow from them.
  for (size_t i = 0; i < results.size() && i < exercise_.checks.size(); ++i) {
    if (exercise_.checks[i].kind != "parameters" || !blames(results[i])) continue;
    const auto focus = results[i].focus_point;
    for (auto& other : results) {
      if (blames(other) && other.focus_point != focus) {
        set_aside(other, "your module's parameters differ from the statement's (see " + results[i].id +
                             "), which can cause this too: fix them first");
      }
    }
    return;
  }
  // An input dependence is a symptom: where a check of another kind names a
  // focus point, the dependence it causes names none of its own (nor do the
  // results explained by it).
  std::set<std::string> named;
  std::set<std::string> dependence_ids;
  for (size_t i = 0; i < results.size() && i < exercise_.checks.size(); ++i) {
    if (exercise_.checks[i].kind == "dependence") {
      dependence_ids.insert(results[i].id);
    } else if (blames(results[i]) && results[i].explained_by.empty()) {
      named.insert(results[i].focus_point);
    }
  }
  for (auto& result : results) {
    if (!blames(result) || named.empty() || named.count(result.focus_point)) continue;
    const bool symptom = dependence_ids.count(result.id) > 0 || dependence_ids.count(result.explained_by) > 0;
    if (symptom) set_aside(result, "a dependence another mistake found here can cause: fix that first");
  }
  std::set<std::string> mistakes;
  for (const auto& result : results) {
    if (result.status != CheckStatus::failed || result.mistake.empty()) continue;
    if (!result.also_mistakes.empty()) return;  // two mistakes at once: nothing is set aside
    mistakes.insert(result.mistake);
  }
  if (mistakes.size() != 1) return;
  const auto& mistake = exercise_.mistake(*mistakes.begin());
  if (!explains_every_case(mistake.id)) return;
  for (auto& result : results) {
    if (!blames(result) || !result.mistake.empty() || result.focus_point == mistake.focus_point) continue;
    // Its own reading of the results assumed the rest was right: what it
    // would say (no mask, a factor of -inf) may be false, so it says only this.
    result.blames_focus = false;
    result.message = "fails as the known mistake \"" + mistake.title +
                     "\" makes it fail (your results on every case are that mistake's): fix it first";
  }
}

CheckResult Kit::run_kind(const CheckSpec& spec) const {
  if (measurements_.count(spec.kind)) return measured(spec);
  auto found = custom_.find(spec.kind);
  if (found != custom_.end()) return found->second(*this, spec);
  const auto& k = spec.kind;
  if (k == "parameters") return parameters(spec);
  if (k == "rejects") return rejects(spec);
  if (k == "refuses") return refuses(spec);
  if (k == "shapes") return shapes(spec);
  if (k == "numerics") return numerics(spec);
  if (k == "gradients") return gradients(spec);
  if (k == "deterministic") return deterministic(spec);
  if (k == "masked_values") return masked_values(spec);
  if (k == "dependence") return measured(spec);
  if (k == "work_growth") return work_growth(spec);
  if (k == "dropouts") return dropouts(spec);
  if (k == "dropout_in_training") return dropout_in_training(spec);
  if (k == "dropout_sites") return dropout_sites(spec);
  if (k == "device_placement") return device_placement(spec);
  if (k == "gpu_execution") return gpu_execution(spec);
  if (k.rfind("attention_", 0) == 0) return measured(spec);
  if (k == "no_builtins") {
    auto result = check_no_builtins(results_, *input_);
    result.id = spec.id;
    return result;
  }
  throw GraderFault("check kind '" + k + "' has no implementation");
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
    if (key.rfind("input.", 0) == 0) data.inputs[key.substr(6)] = converted;
    if (key.rfind("param.", 0) == 0) data.params[key.substr(6)] = converted;
  }
  data.train = run.request.integer_or("train", 0) != 0;
  if (run.request.strings.count("dropout_p")) {
    std::istringstream lines(run.request.string("dropout_p"));
    std::string path;
    double p = 0;
    data.dropped.emplace();
    while (lines >> path >> p) {
      if (p == 1.0) data.dropped->insert(path);
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
Tensors Kit::expected(const CaseRun& run, const std::vector<std::string>& mistakes) const {
  const auto id = run.request.string_or("case", "");
  const bool ours = input_ && input_->cases.count(id) && &input_->cases.at(id) == &run;
  if (!ours) return reference_(data_of(run), mistakes);
  auto key = std::make_pair(id, mistakes);
  auto found = references_.find(key);
  if (found == references_.end()) found = references_.emplace(std::move(key), reference_(data_of(run), mistakes)).first;
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
    const auto& tolerance = exercise_.tolerance(dtype);
    for (const auto& [name, want] : expected(run)) {
      std::string why;
      auto got = learner_tensor(run, name, why);
      if (!got) {
        status = CaseStatus::differs;
        break;
      }
      if (compare(want, *got, tolerance).ok) continue;
      if (dtype == "float64" && compare(want, *got, exercise_.tolerance("float32")).ok) {
        status = CaseStatus::precision;
        continue;
      }
      status = CaseStatus::differs;
      break;
    }
  }
  status_[case_id] = status;
  return status;
}

std::optional<CheckResult> Kit::explain_error(const std::string& check, const CaseRun& run) const {
  if (auto mismatch = device_mismatch(run.error()); mismatch && has_focus_point("device_placement")) {
    auto result = results_.fail(check, "tensors on different devices met in " + *mismatch +
                                           ": a tensor of yours stays on the CPU while the input is on the GPU; "
                                           "create tensors with the input's options (x.options(), x.device()) and "
                                           "register constant ones as buffers");
    result.focus_point = "device_placement";
    result.evidence = {"your code threw on " + run.describe() + ": " + first_line(run.error())};
    return result;
  }
  for (const auto& rule : exercise_.error_rules) {
    if (run.error().find(rule.contains) == std::string::npos) continue;
    CheckResult result =
        rule.mistake.empty() ? results_.fail(check, rule.says) : results_.fail_with_mistake(check, rule.mistake, {});
    if (!rule.mistake.empty()) result.message = rule.says;
    result.focus_point = rule.focus_point;
    result.evidence = {"your code threw on " + run.describe() + ": " + first_line(run.error())};
    return result;
  }
  return std::nullopt;
}

// How two configurations differ: "mask none -> padding, Nq 5 -> 3".
std::vector<std::string> case_differences(const CaseSpec& from, const CaseSpec& to) {
  std::vector<std::string> out;
  std::set<std::string> names;
  for (const auto& [name, value] : from.dims) names.insert(name);
  for (const auto& [name, value] : to.dims) names.insert(name);
  for (const auto& name : names) {
    auto a = from.dims.find(name), b = to.dims.find(name);
    if (a == from.dims.end() || b == to.dims.end() || a->second != b->second) {
      out.push_back(name + " " + (a == from.dims.end() ? "-" : std::to_string(a->second)) + " -> " +
                    (b == to.dims.end() ? "-" : std::to_string(b->second)));
    }
  }
  names.clear();
  for (const auto& [name, value] : from.traits) names.insert(name);
  for (const auto& [name, value] : to.traits) names.insert(name);
  for (const auto& name : names) {
    const auto a = from.trait(name, name == "dtype" ? "float64" : name == "mode" ? "eval" : "none");
    const auto b = to.trait(name, name == "dtype" ? "float64" : name == "mode" ? "eval" : "none");
    if (a != b) out.push_back(name + " " + a + " -> " + b);
  }
  return out;
}

std::optional<std::string> Kit::nearest_passing(const std::string& failing_id) const {
  const auto failing =
      std::find_if(cases_.begin(), cases_.end(), [&](const CaseSpec& c) { return c.id == failing_id; });
  if (failing == cases_.end()) return std::nullopt;
  std::optional<std::string> best;
  size_t fewest = 0;
  for (const auto& spec : cases_) {
    if (status(spec.id) != CaseStatus::matches) continue;
    const auto differences = case_differences(*failing, spec);
    if (differences.empty()) continue;
    if (!best || differences.size() < fewest) {
      fewest = differences.size();
      best = fmt::format("the nearest configuration that passes: {} (it differs in {})", input_->at(spec.id).describe(),
                         fmt::join(differences, ", "));
    }
  }
  return best;
}

std::string Kit::smallest_failing(const std::string& check) const {
  // Among the check's own cases where one fails (a smaller failing case of
  // another check may fail for another reason), else among all.
  const auto ids = cases_of(exercise_.check(check));
  const std::set<std::string> own(ids.begin(), ids.end());
  bool own_fails = false;
  for (const auto& id : own) own_fails |= status(id) == CaseStatus::differs || status(id) == CaseStatus::threw;
  std::string best;
  int64_t best_size = -1;
  for (const auto& spec : cases_) {
    if (own_fails && !own.count(spec.id)) continue;
    auto s = status(spec.id);
    if (s != CaseStatus::differs && s != CaseStatus::threw) continue;
    const auto size = case_size(spec);
    if (best_size < 0 || size < best_size) {
      best_size = size;
      best = spec.id;
    }
  }
  return best;
}

std::optional<CheckResult> Kit::attribute_to_feature(const std::string& check) const {
  std::set<std::string> failing, all;
  for (const auto& spec : cases_) {
    auto s = status(spec.id);
    if (s == CaseStatus::unusable) return std::nullopt;
    all.insert(spec.id);
    if (s == CaseStatus::differs || s == CaseStatus::threw) failing.insert(spec.id);
  }
  if (failing.empty() || failing == all) return std::nullopt;
  for (const auto& feature : exercise_.features) {
    std::set<std::string> having;
    for (const auto& spec : cases_) {
      if (feature_holds(feature.when, spec)) having.insert(spec.id);
    }
    if (having != failing) continue;
    std::vector<std::string> evidence;
    for (const auto& spec : cases_) {
      const auto& run = input_->at(spec.id);
      const bool fails = failing.count(spec.id) > 0;
      evidence.push_back((fails ? "fails:  " : "passes: ") + run.describe() +
                         (fails && run.threw() ? " (threw: " + first_line(run.error()) + ")" : ""));
    }
    auto result =
        feature.mistake.empty() ? results_.fail(check, "") : results_.fail_with_mistake(check, feature.mistake, {});
    result.message = "your code fails exactly on the configurations where " + feature.when + ": " + feature.says;
    result.focus_point = feature.focus_point;
    result.evidence = evidence;
    return result;
  }
  return std::nullopt;
}

bool Kit::is_measurement(const CheckSpec& spec) const {
  return spec.kind.rfind("attention_", 0) == 0 || spec.kind == "dependence" || measurements_.count(spec.kind);
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
  CheckResult result = measurements_.count(spec.kind)   ? custom_.at(spec.kind)(*this, spec)
                       : spec.kind == "attention_scale" ? attention_scale(spec)
                       : spec.kind == "attention_axis"  ? attention_axis(spec)
                       : spec.kind == "attention_mask"  ? attention_mask(spec)
                                                        : dependence(spec);
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

std::vector<std::string> Kit::replayed_mistakes(const std::string& case_id, const Tensors& learner) const {
  using Mistakes = std::vector<std::string>;
  // Candidates that match this case; the other cases refute those whose
  // replay differs from the learner's output there (scaling by sqrt(Nq) is no
  // scaling when Nq = 1). A lone candidate is refuted only by a case the
  // learner also got wrong: a mistake made on one code path (a fast path for
  // one head, for one token) leaves the other cases right, but a case wrong
  // in another way shows the mistake is not the learner's.
  auto narrowed = [&](std::vector<Mistakes> candidates) {
    const auto& here = input_->at(case_id);
    candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                    [&](const Mistakes& m) { return replay_matches(here, learner, m) != true; }),
                     candidates.end());
    for (const auto& spec : cases_) {
      if (spec.id == case_id || candidates.empty()) continue;
      const auto s = status(spec.id);
      if (s == CaseStatus::threw || s == CaseStatus::unusable) continue;
      if (candidates.size() == 1 && s == CaseStatus::matches) continue;
      const auto& run = input_->at(spec.id);
      const auto outputs = learner_outputs(run);
      if (outputs.size() != exercise_.signature.outputs.size()) continue;
      candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                      [&](const Mistakes& m) { return replay_matches(run, outputs, m) == false; }),
                       candidates.end());
    }
    return candidates;
  };
  std::vector<Mistakes> singles, pairs;
  for (const auto& mistake : exercise_.mistakes) {
    if (std::find(replayable_.begin(), replayable_.end(), mistake.id) != replayable_.end())
      singles.push_back({mistake.id});
  }
  auto found = narrowed(singles);
  if (found.size() == 1) return found.front();
  if (!found.empty()) return {};  // ambiguous: the probes and features speak instead
  // Two mistakes at once, of different focus points (two of one focus point
  // are one thing to fix).
  for (size_t i = 0; i < singles.size(); ++i) {
    for (size_t j = i + 1; j < singles.size(); ++j) {
      if (exercise_.mistake(singles[i][0]).focus_point == exercise_.mistake(singles[j][0]).focus_point) continue;
      pairs.push_back({singles[i][0], singles[j][0]});
    }
  }
  found = narrowed(pairs);
  return found.size() == 1 ? found.front() : Mistakes{};
}

CheckResult Kit::explain(const std::string& check, const std::string& case_id) const {
  const auto& run = input_->at(case_id);
  const auto s = status(case_id);
  if (s == CaseStatus::threw) {
    if (auto ruled = explain_error(check, run)) return *ruled;
    if (auto featured = attribute_to_feature(check)) return *featured;
    return results_.threw(check, run);
  }
  if (auto why = not_runnable(run)) return results_.skip(check, "not assessed: " + *why);

  const auto dtype = run.request.string_or("dtype", "float64");
  const auto& tolerance = exercise_.tolerance(dtype);
  std::vector<std::string> evidence = {"input: " + run.describe()};
  Tensors learner;
  const auto reference = expected(run);
  for (const auto& [name, want] : reference) {
    std::string why;
    auto got = learner_tensor(run, name, why);
    if (!got) return results_.fail(check, why + " (" + run.describe() + ")");
    learner[name] = *got;
    auto cmp = compare(want, *got, tolerance);
    if (!cmp.ok) evidence.push_back(name + ": " + cmp.detail);
  }
  evidence.push_back(input_->replay_hint());
  // (Where a measurement found a mistake, a slight difference is more likely
  // its effect than float32's: the measurement speaks, below.)
  if (s == CaseStatus::precision && findings().empty()) {
    // Measured, not guessed: the reference computed in float32 shows how far
    // float32 rounding moves these results. Only a deviation of that size is
    // called a precision problem; a larger one is a different formula.
    const auto measure = measure_rounding(run, reference, learner);
    if (measure.explains()) {
      evidence.insert(evidence.end() - 1, fmt::format("largest difference {:.3g}; the reference computed in float32 "
                                                      "differs from its float64 result by up to {:.3g}",
                                                      measure.deviation, *measure.rounding));
      auto result = results_.fail(check,
                                  "your results have float32 precision in a float64 check (differences of the size "
                                  "float32 rounding makes): is a tensor or a constant computed in float32?",
                                  evidence);
      if (has_focus_point("numerics")) result.focus_point = "numerics";
      return result;
    }
    if (measure.rounding) {
      evidence.insert(evidence.end() - 1, fmt::format("largest difference {:.3g}, more than float32 rounding makes "
                                                      "here (up to {:.3g}): not a precision problem",
                                                      measure.deviation, *measure.rounding));
    }
  }
  // Parameters the signature does not name for this case are never loaded:
  // they keep their random initial values, and no replay can match.
  std::set<std::string> named;
  for (const auto& param : parameters_of(exercise_.signature.parameters, data_of(run).dims)) named.insert(param.name);
  std::vector<std::string> unloaded;
  for (const auto& line : split_lines(run.response.string_or("parameters", ""))) {
    auto name = line.substr(0, line.find(' '));
    if (!named.count(name)) unloaded.push_back(name);
  }
  if (!exercise_.signature.parameters.empty() && !unloaded.empty()) {
    std::string constructor;
    for (const auto& [name, value] : run.request.ints) {
      if (name.rfind("ctor.", 0) == 0)
        constructor += (constructor.empty() ? "" : ", ") + name.substr(5) + " = " + std::to_string(value);
    }
    std::string list;
    for (size_t i = 0; i < unloaded.size() && i < 4; ++i) list += (i ? ", " : "") + unloaded[i];
    if (unloaded.size() > 4) list += fmt::format(" and {} more", unloaded.size() - 4);
    auto result = results_.fail(check,
                                "constructed with " + constructor +
                                    ", your module registers parameters the statement "
                                    "does not have for these arguments (" +
                                    list +
                                    "): the grader cannot load them, so "
                                    "they keep random values; does the constructor use every argument?",
                                evidence);
    for (const auto& spec : exercise_.checks) {
      if (spec.kind == "parameters") result.focus_point = spec.focus_point;
    }
    return result;
  }
  const auto mistakes = replayed_mistakes(case_id, learner);
  if (mistakes.size() == 1) return results_.fail_with_mistake(check, mistakes[0], evidence);
  if (mistakes.size() == 2) {
    const auto &first = exercise_.mistake(mistakes[0]), &second = exercise_.mistake(mistakes[1]);
    auto result = results_.fail_with_mistake(check, first.id, evidence);
    auto clause = [](const Mistake& m) {
      auto why = m.explanation;
      if (!why.empty() && why.back() == '.') why.pop_back();
      return m.title + " (" + why + ")";
    };
    result.message =
        "two known mistakes together reproduce your results exactly: " + clause(first) + "; and " + clause(second);
    result.also_against = {second.focus_point};
    result.also_mistakes = {second.id};
    return result;
  }
  for (const auto& finding : findings()) {
    evidence.pop_back();  // the replay hint, said once at the end
    auto result = results_.fail(check, "explained by a measurement (" + finding.id + "): " + finding.message, evidence);
    result.focus_point = finding.focus_point;
    result.explained_by = finding.id;
    for (const auto& line : finding.evidence) {
      if (line != input_->replay_hint()) result.evidence.push_back(line);
    }
    result.evidence.push_back(input_->replay_hint());
    return result;
  }
  if (auto featured = attribute_to_feature(check)) {
    featured->evidence.insert(featured->evidence.begin(), evidence.begin(), evidence.end() - 1);
    return *featured;
  }
  // Placed by the isolation twins (of the smallest failing case, else of this
  // one, else of another of the check's cases that has twins and fails);
  // where they tie it to no focus point, the dropout twins may (a difference
  // in what the first Dropout drops: the embedding).
  std::optional<CheckResult> isolated;
  std::vector<std::string> bases = {smallest_failing(check), case_id};
  for (const auto& id : cases_of(exercise_.check(check))) bases.push_back(id);
  for (const auto& base : bases) {
    if (!base.empty() && !isolated) isolated = isolate(check, base, evidence);
  }
  if (isolated && isolated->blames_focus) return *isolated;
  if (auto localised = localise(check, evidence); localised && (localised->blames_focus || !isolated)) return *localised;
  if (isolated) return *isolated;
  // Unexplained: no focus point is named as the cause (those this check
  // covers are left not established, never missed by guess).
  const auto smallest = smallest_failing(check);
  if (auto pair = nearest_passing(smallest.empty() ? case_id : smallest)) evidence.insert(evidence.end() - 1, *pair);
  auto result = results_.fail(check,
                              "unexplained: the results differ from the reference, and neither a known mistake nor "
                              "the grader's measurements explain how; start from the smallest configuration that "
                              "fails: " +
                                  (smallest.empty() ? run.describe() : input_->at(smallest).describe()),
                              evidence);
  result.blames_focus = false;
  return result;
}

// Where an unexplained difference lies, from the dropout_sites check's
// twins: each drops one part of the module (its Dropout at p = 1, training
// mode, the others at 0). Where the eval result differs and a twin matches
// the reference with that part dropped, the difference lies inside that part
// (the narrowest such part, in the order of `names`), and its `point.<site>`
// is named. Where none matches, `evidence` says so and nothing is named.
std::optional<CheckResult> Kit::localise(const std::string& check, std::vector<std::string>& evidence) const {
  const auto spec = std::find_if(exercise_.checks.begin(), exercise_.checks.end(), [](const CheckSpec& c) {
    return c.kind == "dropout_sites" && !c.option("names").empty();
  });
  if (spec == exercise_.checks.end()) return std::nullopt;
  const auto& base = spec->cases.front();
  const auto& eval = input_->at(base);
  if (not_runnable(eval) || status(base) == CaseStatus::matches) return std::nullopt;
  const auto& name = exercise_.signature.outputs.front().name;
  const auto& tolerance = exercise_.tolerance(eval.request.string_or("dtype", "float64"));
  const auto sites = option_list(*spec, "names", "dropout");
  for (const auto& site : sites) {
    const auto& run = input_->at(dropout_site_case(base, site));
    std::string why;
    if (not_runnable(run) || run.response.strings.count("dropout_p_missing")) return std::nullopt;
    auto got = learner_tensor(run, name, why);
    if (!got || !compare(expected(run).at(name), *got, tolerance).ok) continue;
    const auto where = spec->option("at." + site, site + "'s place");
    auto result = results_.fail(
        check,
        "the difference lies in what " + site + " drops, " + where + ": with it dropped (" + site +
            " at p = 1 in "
            "training mode, the other Dropouts at 0) your results match the reference's, so the rest is right on this "
            "input; what differs there is no mistake the grader knows",
        evidence);
    result.evidence.insert(result.evidence.end() - 1,
                           fmt::format("{}: differs from the reference in eval mode; {}: matches the reference with "
                                       "{} dropped",
                                       eval.describe(), run.describe(), where));
    const auto point = spec->option("point." + site);
    if (!point.empty() && has_focus_point(point)) {
      result.focus_point = point;
    } else {
      result.blames_focus = false;
    }
    return result;
  }
  evidence.insert(
      evidence.end() - 1,
      fmt::format("{}, run again in training mode with each of {} at p = 1 in turn (the others at 0): it still "
                  "differs from the reference with that place dropped, so the difference lies in what "
                  "every one of them leaves, or in more than one place",
                  eval.describe(), fmt::join(sites, ", ")));
  return std::nullopt;
}

// ---- the kinds ----------------------------------------------------------

CheckResult Kit::parameters(const CheckSpec& spec) const {
  const auto& run = input_->at(cases_of(spec).front());
  if (!run.response.ints.count("constructed")) return results_.threw(spec.id, run);
  std::vector<std::string> evidence;
  // One line per missing name, or per sub-module when several of its names are missing.
  std::map<std::string, std::vector<std::string>> missing;
  for (const auto& name : split_lines(run.response.string_or("missing_parameters", ""))) {
    missing[name.substr(0, name.find('.'))].push_back(name);
  }
  const auto have = run.response.string_or("parameters", "");
  for (const auto& [module, names] : missing) {
    if (names.size() <= 3) {
      for (const auto& name : names) evidence.push_back("missing or wrongly shaped: " + name);
      continue;
    }
    const bool none = ("\n" + have).find("\n" + module + ".") == std::string::npos;
    evidence.push_back(fmt::format("missing or wrongly shaped: {} parameters under '{}.' ({}, {}, ...){}", names.size(),
                                   module, names[0], names[1],
                                   none ? fmt::format(": your module has nothing registered under '{}' "
                                                      "(is register_module called for it?)",
                                                      module)
                                        : ""));
  }
  std::string names;
  const auto dims = data_of(run).dims;
  for (const auto& param : exercise_.signature.parameters) {
    // A template is shown once, with its range: layers.{0..2}.linear1.weight.
    auto name = param.name;
    if (auto pattern = name_template(name, dims)) {
      const auto count = pattern->count;
      name = pattern->before + (count == 1 ? "0" : fmt::format("{{0..{}}}", count - 1)) + pattern->after;
    }
    names += (names.empty() ? "" : ", ") + name + " " + shape_string(shape_of(param, dims));
  }
  if (!evidence.empty()) {
    for (const auto& line : split_lines(run.response.string_or("parameters", ""))) {
      evidence.push_back("your module has: " + line);
    }
    return results_.fail(spec.id, "the grader loads weights by name and shape: register exactly " + names, evidence);
  }
  if (spec.option("exact") == "true") {
    // Nothing registered beyond the signature: a bias the statement leaves
    // out, or a projection wider than it says, is a different module.
    std::set<std::string> named;
    int64_t want = 0;
    for (const auto& param : parameters_of(exercise_.signature.parameters, dims)) {
      named.insert(param.name);
      int64_t count = 1;
      for (auto size : shape_of(param, dims)) count *= size;
      want += count;
    }
    std::vector<std::string> extra;
    int64_t have_count = 0;
    for (const auto& line : split_lines(have)) {
      std::istringstream in(line);
      std::string name;
      in >> name;
      int64_t count = 1, size = 0;
      while (in >> size) count *= size;
      have_count += count;
      if (!named.count(name)) extra.push_back("registered but not in the interface: " + line);
    }
    if (!extra.empty()) {
      extra.push_back(fmt::format("your module has {} parameters in all; the interface's module has {} ({})",
                                  have_count, want, names));
      return results_.fail(
          spec.id, "your module registers parameters the interface does not have: register exactly " + names, extra);
    }
  }
  auto dropout = spec.option("dropout");
  if (!dropout.empty() && !registered_dropout(run, dropout)) {
    return results_.fail(spec.id, "no Dropout submodule is registered under the name '" + dropout + "'");
  }
  return results_.pass(spec.id, "every parameter is registered under its name with its shape");
}

CheckResult Kit::dropouts(const CheckSpec& spec) const {
  const auto& run = input_->at(cases_of(spec).front());
  if (!run.response.ints.count("constructed")) return results_.threw(spec.id, run);
  const auto argument = spec.option("argument", "dropout");
  if (!run.request.reals.count("ctor." + argument)) {
    throw ConfigError("check '" + spec.id + "': the constructor has no argument '" + argument + "'");
  }
  const double p = run.request.reals.at("ctor." + argument);
  // The names, each template expanded ("layers.{L}.dropout").
  std::vector<TensorSpec> names;
  for (const auto& name : option_list(spec, "names", "dropout")) names.push_back(TensorSpec{name, {}, "randn", ""});
  std::vector<std::string> wrong;
  std::string listed;
  for (const auto& name : parameters_of(names, data_of(run).dims)) {
    listed += (listed.empty() ? "" : ", ") + name.name;
    auto found = registered_dropout(run, name.name);
    if (!found) {
      wrong.push_back("no Dropout registered as '" + name.name + "'");
    } else if (std::abs(*found - p) > 1e-12) {
      wrong.push_back(fmt::format("'{}' has p = {}", name.name, *found));
    }
  }
  if (wrong.empty()) return results_.pass(spec.id, listed + ": registered with the constructor's p");
  wrong.insert(wrong.begin(), fmt::format("constructed with {} = {}", argument, p));
  return results_.fail(spec.id,
                       "every Dropout module (" + listed +
                           ") must be registered under its name with the "
                           "constructor's " +
                           argument + " as p",
                       wrong);
}

CheckResult Kit::dropout_in_training(const CheckSpec& spec) const {
  const auto id = cases_of(spec).front();
  const auto& eval = input_->at(id);
  const auto& a = input_->at(training_case(id, 0));
  const auto& b = input_->at(training_case(id, 1));
  for (const auto* run : {&a, &b, &eval}) {
    if (auto why = not_runnable(*run)) return results_.skip(spec.id, "not assessed: " + *why);
  }
  const auto& name = exercise_.signature.outputs.front().name;
  std::string why;
  auto first = learner_tensor(a, name, why), second = learner_tensor(b, name, why);
  auto plain = learner_tensor(eval, name, why);
  if (!first || !second || !plain) return results_.skip(spec.id, "not assessed: " + why);
  if (first->sizes() != plain->sizes() || second->sizes() != plain->sizes()) {
    return results_.skip(spec.id, "not assessed: the " + name + " has shape " + shape_string(first->sizes()));
  }
  // Anything dropped moves the result by far more than rounding.
  auto moved = [](const at::Tensor& x, const at::Tensor& y) {
    return (x.to(at::kDouble) - y.to(at::kDouble)).abs().max().item<double>();
  };
  if (moved(*first, *plain) < 1e-9 || moved(*first, *second) < 1e-9) {
    return results_.fail(
        spec.id,
        "in training mode no dropout acts: call the registered Dropout modules in forward (they "
        "are the identity in eval mode, and only there)",
        {"input: " + a.describe(), fmt::format("training vs eval: max difference {:.3g}; two training runs: {:.3g}",
                                               moved(*first, *plain), moved(*first, *second))});
  }
  return results_.pass(spec.id, "dropout acts in training mode: two runs differ, and differ from eval mode");
}

// Each Dropout's place, measured: in training mode with one Dropout at p = 1
// and the others at 0 the block is deterministic, and equals the reference
// with that place zeroed; with all at 0 it equals eval mode. Judged only
// where eval mode matches the reference (else any difference could be the
// block's, not its dropouts').
CheckResult Kit::dropout_sites(const CheckSpec& spec) const {
  const auto& id = spec.cases.front();
  const auto paths = option_list(spec, "names", "dropout");
  const auto& eval = input_->at(id);
  if (auto why = not_runnable(eval)) return results_.skip(spec.id, "not assessed: " + *why);
  if (status(id) != CaseStatus::matches) {
    return results_.skip(spec.id, "not assessed: in eval mode your results differ from the reference (" +
                                      eval.describe() +
                                      "; see the numerics checks), so where the dropouts act "
                                      "cannot be told from the rest");
  }
  const auto& name = exercise_.signature.outputs.front().name;
  const auto& tolerance = exercise_.tolerance(eval.request.string_or("dtype", "float64"));
  const auto all = fmt::format("{}", fmt::join(paths, ", "));
  // Judges one twin: nothing when it matches the reference with its place zeroed.
  auto judge_twin = [&](const std::string& site) -> std::optional<CheckResult> {
    const auto& run = input_->at(dropout_site_case(id, site));
    if (auto why = not_runnable(run)) return results_.skip(spec.id, "not assessed: " + *why);
    auto missing = split_lines(run.response.string_or("dropout_p_missing", ""));
    if (!missing.empty()) {
      return results_.skip(spec.id, "not assessed: " + fmt::format("{}", fmt::join(missing, ", ")) +
                                        " is no registered Dropout (see the check of the registered dropouts)");
    }
    std::string why;
    auto got = learner_tensor(run, name, why);
    if (!got) return results_.skip(spec.id, "not assessed: " + why);
    const auto want = expected(run);
    auto cmp = compare(want.at(name), *got, tolerance);
    if (cmp.ok) return std::nullopt;
    std::vector<std::string> evidence = {"input: " + run.describe(), name + ": " + cmp.detail};
    if (paths.empty()) {
      return results_.fail(spec.id,
                           "in training mode your output differs from eval mode's on the same input: the statement "
                           "has no dropout here (nor anything else that depends on the mode); remove it",
                           evidence);
    }
    if (site.empty()) {
      return results_.fail(spec.id,
                           "with every registered Dropout at p = 0 (" + all +
                               "), training mode still changes your "
                               "output: a dropout the statement does not have acts (MultiheadAttention's own dropout "
                               "option, which the statement leaves at 0, or a functional dropout with a stored p)",
                           evidence);
    }
    const auto where = spec.option("at." + site, "its place in the statement");
    const auto unchanged = compare(expected(eval).at(name), *got, tolerance);
    if (unchanged.ok) {
      return results_.fail(spec.id,
                           site +
                               " never acts: with its p set to 1 (the other Dropouts at 0) your output is what "
                               "it is without dropout. Call " +
                               site + " in forward, on " + where,
                           evidence);
    }
    return results_.fail(spec.id,
                         "with " + site +
                             " at p = 1 (the other Dropouts at 0) your output is not the reference's "
                             "when only " +
                             where + " is dropped: " + site + " acts somewhere else. Apply it to " + where,
                         evidence);
  };
  if (auto result = judge_twin("")) return *result;
  for (const auto& site : paths) {
    if (auto result = judge_twin(site)) return *result;
  }
  if (paths.empty()) return results_.pass(spec.id, "training mode gives what eval mode gives (no dropout here)");
  if (paths.size() == 1) {
    return results_.pass(spec.id, all +
                                      " acts at its place (set to p = 1 in training mode, any other Dropout at 0), "
                                      "and at 0 training mode changes nothing");
  }
  return results_.pass(spec.id, "each of " + all +
                                    " acts at its place (set to p = 1 one at a time in training "
                                    "mode), and with all at 0 training mode changes nothing");
}

CheckResult Kit::rejects(const CheckSpec& spec) const {
  const auto& run = input_->at("rejects~" + spec.id);
  const auto& valid = input_->at(cases_.front().id);
  if (!valid.response.ints.count("constructed")) {
    return results_.skip(spec.id, "not assessed: your constructor throws for valid arguments too");
  }
  if (run.threw()) return results_.pass(spec.id, "refused with: " + first_line(run.error()));
  return results_.fail(spec.id, spec.option("says", "these arguments must be refused with an error (TORCH_CHECK)"),
                       {run.describe() + " was accepted"});
}

CheckResult Kit::refuses(const CheckSpec& spec) const {
  // Words one of which the error must contain, so that it says why ("max_len").
  const auto words = option_list(spec, "mentions", "");
  std::vector<std::string> refused;
  for (const auto& id : spec.cases) {
    const auto& run = input_->at(id);
    if (!run.threw()) {
      return results_.fail(spec.id, spec.option("says", "this input must be refused with an error (TORCH_CHECK)"),
                           {run.describe() + " was accepted"});
    }
    auto message = first_line(run.error());
    // A refusal means something only where valid inputs are accepted.
    if (!run.response.ints.count("constructed")) {
      return results_.skip(spec.id, "not assessed: your constructor throws (" + message + ")");
    }
    const auto& valid = input_->at(cases_.front().id);
    if (valid.threw() && first_line(valid.error()) == message) {
      return results_.skip(spec.id, "not assessed: your code throws the same error on valid inputs (" + message + ")");
    }
    const bool says_why = words.empty() || mentions_any(message, words);
    if (!says_why) {
      return results_.fail(spec.id,
                           "refused, but the error does not say why: check the input yourself and say what is wrong "
                           "(mention " +
                               fmt::format("{}", fmt::join(words, " or ")) + ")",
                           {"input: " + run.describe(), "your error: " + message});
    }
    refused.push_back(message);
  }
  return results_.pass(spec.id, "refused with: " + refused.front());
}

CheckResult Kit::shapes(const CheckSpec& spec) const {
  std::vector<std::string> evidence;
  for (const auto& id : cases_of(spec)) {
    const auto& run = input_->at(id);
    if (not_runnable(run)) return explain(spec.id, id);
    const auto dims = data_of(run).dims;
    for (const auto& output : exercise_.signature.outputs) {
      if (!spec.option("output").empty() && spec.option("output") != output.name) continue;
      std::string why;
      auto tensor = learner_tensor(run, output.name, why);
      if (!tensor) return results_.fail(spec.id, why + " (" + run.describe() + ")");
      auto want = shape_of(output, dims);
      if (tensor->sizes() != at::IntArrayRef(want)) {
        evidence.push_back(run.describe() + ": " + output.name + " " + shape_string(tensor->sizes()) + ", expected " +
                           shape_string(want));
      }
    }
  }
  if (!evidence.empty()) return results_.fail(spec.id, "an output has the wrong shape", evidence);
  return results_.pass(spec.id, "the right shapes in every configuration");
}

CheckResult Kit::numerics(const CheckSpec& spec) const {
  const auto ids = cases_of(spec);
  for (const auto& id : ids) {
    const auto& run = input_->at(id);
    if (!not_runnable(run)) {
      const auto dtype = run.request.string_or("dtype", "float64");
      const std::string want = c10::toString(dtype_of(dtype));
      for (const auto& output : exercise_.signature.outputs) {
        auto got = run.response.string_or(output.name + ".dtype", want);
        if (got != want && got != "undefined") {
          auto result = results_.fail(spec.id,
                                      dtype + " inputs gave the " + output.name + " in dtype " + got +
                                          ": keep the inputs' dtype (do not hard-code one)",
                                      {"input: " + run.describe()});
          if (has_focus_point("numerics")) result.focus_point = "numerics";
          return result;
        }
      }
    }
    if (status(id) != CaseStatus::matches) return explain(spec.id, id);
    // Matching within tolerance is not enough where the mask hides a key: its weight must be exactly 0.
    auto zero_in = spec.option("zero_where_masked");
    if (!zero_in.empty() && run.request.has_tensor("input.mask")) {
      std::string why;
      auto weights = learner_tensor(run, zero_in, why);
      auto hidden = (run.request.tensor("input.mask") == 0).expand_as(*weights);
      auto leaked = weights->masked_select(hidden).ne(0).sum().item<int64_t>();
      if (leaked > 0) {
        return results_.fail(
            spec.id, "masked positions must get exactly zero weight (fill with -inf before the softmax)",
            {"input: " + run.describe(), std::to_string(leaked) + " masked weights are not exactly 0"});
      }
    }
  }
  return results_.pass(spec.id, "matches the reference in " + std::to_string(ids.size()) + " configuration" +
                                    (ids.size() == 1 ? "" : "s"));
}

CheckResult Kit::gradients(const CheckSpec& spec) const {
  const auto id = cases_of(spec).front();
  const auto& run = input_->at(id);
  if (not_runnable(run)) return explain(spec.id, id);
  const auto s = status(id);
  if (s != CaseStatus::matches && s != CaseStatus::precision) {
    return results_.skip(spec.id, "not assessed: the forward results are wrong for this input (" + run.describe() +
                                      "), so gradients cannot be compared");
  }
  auto data = data_of(run);
  for (auto& [name, tensor] : data.inputs) {
    if (tensor.is_floating_point()) tensor = tensor.clone().requires_grad_(true);
  }
  for (auto& [name, tensor] : data.params) tensor = tensor.clone().requires_grad_(true);
  auto outputs = expected(data);
  outputs.at(exercise_.signature.outputs.front().name).backward(run.request.tensor("grad_output"));
  std::vector<std::string> missing, differ, precise;
  const auto& tight = exercise_.tolerance("float64");
  const auto& loose = exercise_.tolerance("float32");
  auto compare_grad = [&](const std::string& label, const std::string& field, const at::Tensor& want) {
    std::string why;
    auto got = learner_tensor(run, field, why);
    if (!got) {
      missing.push_back(label);
      return;
    }
    auto cmp = compare(want, *got, tight);
    if (cmp.ok) return;
    (compare(want, *got, loose).ok ? precise : differ).push_back(label + ": " + cmp.detail);
  };
  for (const auto& [name, tensor] : data.inputs) {
    if (tensor.is_floating_point()) compare_grad("input " + name, "grad.input." + name, tensor.grad());
  }
  for (const auto& [name, tensor] : data.params) compare_grad(name, "grad.param." + name, tensor.grad());
  std::vector<std::string> evidence = {"input: " + run.describe()};
  if (!missing.empty()) {
    for (const auto& name : missing) evidence.push_back("no gradient reached " + name);
    return results_.fail(spec.id,
                         "no gradient reaches some inputs or parameters: something cuts them from the autograd "
                         "graph (detach(), .data(), NoGradGuard) or they are not used",
                         evidence);
  }
  // The forward only matched loosely: the gradients of a slightly different
  // function differ too, which says nothing of the graph; nor of precision,
  // unless the forward's own difference is float32 rounding.
  if (s == CaseStatus::precision && (!differ.empty() || (!precise.empty() && !rounding_explains(run)))) {
    evidence.insert(evidence.end(), differ.begin(), differ.end());
    evidence.insert(evidence.end(), precise.begin(), precise.end());
    auto result = results_.fail(spec.id,
                                "unexplained: the gradients differ from the reference, and so does the forward, "
                                "slightly (see the forward checks): fix the forward first",
                                evidence);
    result.blames_focus = false;
    return result;
  }
  if (!differ.empty()) {
    evidence.insert(evidence.end(), differ.begin(), differ.end());
    return results_.fail(spec.id,
                         "the gradients differ from the reference although the forward results match: part of the "
                         "computation is cut from the graph (detach(), .data(), NoGradGuard) or not differentiable",
                         evidence);
  }
  if (!precise.empty()) {
    evidence.insert(evidence.end(), precise.begin(), precise.end());
    auto result = results_.fail(spec.id,
                                "the gradients have float32 precision in a float64 check: is a tensor or a constant "
                                "computed in float32?",
                                evidence);
    if (has_focus_point("numerics")) result.focus_point = "numerics";  // a precision matter, not the graph
    return result;
  }
  return results_.pass(spec.id, "gradients of every input and parameter match the reference");
}

CheckResult Kit::deterministic(const CheckSpec& spec) const {
  const auto id = cases_of(spec).front();
  const auto& a = input_->at(id);
  const auto& b = input_->at(repeat_case(id));
  for (const auto* run : {&a, &b}) {
    if (not_runnable(*run)) return explain(spec.id, id);
  }
  const auto& name = exercise_.signature.outputs.front().name;
  std::string why;
  auto first = learner_tensor(a, name, why);
  auto second = learner_tensor(b, name, why);
  if (!first || !second) return results_.fail(spec.id, why);
  auto repeat = compare(*first, *second, exercise_.tolerance("float64"));
  if (!repeat.ok) {
    return results_.fail(spec.id,
                         "in eval mode the " + name +
                             " changes between two runs on identical inputs: something random is active outside "
                             "training (dropout must be off in eval mode: use the registered Dropout module or pass "
                             "is_training())",
                         {"input: " + a.describe(), "two runs: " + repeat.detail});
  }
  const auto s = status(id);
  if (s == CaseStatus::matches || s == CaseStatus::precision) {
    return results_.pass(spec.id, "eval mode is deterministic and matches the reference");
  }
  for (const auto& other : cases_) {
    if (status(other.id) == CaseStatus::matches) return explain(spec.id, id);
  }
  return results_.skip(spec.id, "not assessed: deterministic, but the eval-mode results are wrong in every case");
}

std::vector<wire::Record> Kit::moved_twins(const CaseSpec& spec, const wire::Record& record,
                                           at::Generator& generator) const {
  const auto& sig = exercise_.signature;
  std::vector<wire::Record> twins;
  auto twin_of = [&](const std::string& what, const std::string& says) {
    auto twin = record;
    twin.strings["case"] = moved_case(spec.id, what);
    twin.strings["describe"] += ", " + says;
    twin.tensors.erase("grad_output");
    return twin;
  };
  auto redraw_as = [&](const TensorSpec& what, const at::Tensor& t) {
    if (what.kind == "tokens") return at::randint(evaluate_dim(what.below, spec.dims), t.sizes(), generator, at::kLong);
    return (at::randn(t.sizes(), generator, at::kDouble) * t.to(at::kDouble).std().clamp_min(0.1)).to(t.scalar_type());
  };
  auto redraw = [&](const at::Tensor& t) { return redraw_as(TensorSpec{}, t); };
  for (const auto& input : sig.inputs) {
    if (input.kind == "attention_mask") continue;
    auto twin = twin_of(input.name, input.name + " redrawn");
    auto& tensor = twin.tensors["input." + input.name];
    tensor = redraw_as(input, tensor);
    twins.push_back(std::move(twin));
  }
  for (const auto& param : parameters_of(sig.parameters, spec.dims)) {
    auto twin = twin_of(param.name, param.name + " redrawn");
    auto& tensor = twin.tensors["param." + param.name];
    tensor = redraw(tensor);
    twins.push_back(std::move(twin));
  }
  // Batch elements are independent problems: redraw all but the first.
  bool batched = spec.dims.count("B") && spec.dims.at("B") > 1;
  for (const auto& t : sig.inputs) batched &= !t.shape.empty() && t.shape.front() == "B";
  for (const auto& t : sig.outputs) batched &= !t.shape.empty() && t.shape.front() == "B";
  if (batched) {
    auto twin = twin_of("batch", "batch elements 1.. redrawn");
    for (const auto& input : sig.inputs) {
      if (input.kind == "attention_mask") continue;
      auto& tensor = twin.tensors["input." + input.name];
      auto others = tensor.narrow(0, 1, tensor.size(0) - 1);
      tensor = at::cat({tensor.narrow(0, 0, 1), redraw_as(input, others)}, 0);
    }
    twins.push_back(std::move(twin));
  }
  return twins;
}

CheckResult Kit::dependence(const CheckSpec& spec) const {
  const auto id = cases_of(spec).front();
  const auto& base = input_->at(id);
  for (const auto* run : {&base, &input_->at(repeat_case(id))}) {
    if (not_runnable(*run)) return results_.skip(spec.id, "not assessed: " + *not_runnable(*run));
  }
  const auto& tolerance = exercise_.tolerance(base.request.string_or("dtype", "float64"));
  auto learner_of = [&](const CaseRun& run) {
    Tensors outputs = learner_outputs(run);
    return outputs.size() == exercise_.signature.outputs.size() ? outputs : Tensors{};
  };
  // Largest change between two sets of outputs, beyond the tolerance; 0 if none.
  auto moved = [&](const Tensors& before, const Tensors& after, bool first_element_only) -> std::optional<double> {
    double most = 0;
    bool moves = false;
    for (const auto& [name, tensor] : before) {
      auto b = first_element_only ? tensor.narrow(0, 0, 1) : tensor;
      auto a = first_element_only ? after.at(name).narrow(0, 0, 1) : after.at(name);
      if (a.sizes() != b.sizes()) return std::nullopt;
      moves |= !compare(b, a, tolerance).ok;
      most = std::max(most, (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>());
    }
    return moves ? most : 0.0;
  };
  const auto learner_base = learner_of(base);
  if (learner_base.empty()) return results_.skip(spec.id, "not assessed: no usable output on " + base.describe());
  for (const auto& [name, tensor] : learner_base) {
    if (tensor.is_floating_point() && at::isnan(tensor).any().item<bool>()) {
      return results_.skip(spec.id, "not assessed: your " + name + " has NaN values on " + base.describe() +
                                        ", so what moves it cannot be measured (see the other checks)");
    }
  }
  if (auto again = moved(learner_base, learner_of(input_->at(repeat_case(id))), false); !again || *again > 0) {
    return results_.skip(spec.id,
                         "not assessed: your output changes between two runs on identical inputs "
                         "(something random runs in forward), so what it depends on cannot be isolated");
  }
  const auto reference_base = expected(base);
  std::vector<std::string> ignored, spurious, evidence;
  std::map<std::string, double> ignored_moves;  // how far each ignored one moved the reference
  std::string focus;
  auto focus_of = [&](const std::string& what) {
    for (std::string key = what;; key = key.substr(0, key.rfind('.'))) {
      auto given = spec.option("focus." + key);
      if (!given.empty()) return given;
      if (key.find('.') == std::string::npos) return spec.focus_point;
    }
  };
  std::vector<std::string> names;
  for (const auto& input : exercise_.signature.inputs) {
    if (input.kind != "attention_mask") names.push_back(input.name);
  }
  const auto parameters = parameters_of(exercise_.signature.parameters, data_of(base).dims);
  for (const auto& param : parameters) names.push_back(param.name);
  names.push_back("batch");
  for (const auto& what : names) {
    auto found = input_->cases.find(moved_case(id, what));
    if (found == input_->cases.end() || not_runnable(found->second)) continue;
    const bool batch = what == "batch";
    auto learner_after = learner_of(found->second);
    if (learner_after.empty()) continue;
    auto learner_moves = moved(learner_base, learner_after, batch);
    auto reference_moves = moved(reference_base, expected(found->second), batch);
    if (!learner_moves || !reference_moves) continue;
    const bool should = *reference_moves > 0, does = *learner_moves > 0;
    if (should == does) continue;
    if (focus.empty()) focus = focus_of(what);
    if (batch) {
      spurious.push_back("the other batch elements (keep the batch axis first through every reshape)");
      evidence.push_back("redrawing batch elements 1.. moved batch element 0's output by up to " +
                         fmt::format("{:.3g}", *learner_moves) + " (the reference's does not move)");
    } else if (should) {
      ignored.push_back(what);
      ignored_moves[what] = *reference_moves;
    } else {
      spurious.push_back(what);
      evidence.push_back("redrawing " + what + " moved your output by up to " + fmt::format("{:.3g}", *learner_moves) +
                         " (the reference's does not move)");
    }
  }
  if (ignored.empty() && spurious.empty()) {
    return results_.pass(spec.id, "the output depends on exactly what the reference's depends on");
  }
  // Ignored parameters that are every parameter of one sub-module of a stack
  // ("layers.0.…") are said once, as that module.
  std::map<std::string, std::vector<std::string>> by_module, declared;
  auto module_of = [](const std::string& name) {
    const auto first = name.find('.');
    const auto second = first == std::string::npos ? std::string::npos : name.find('.', first + 1);
    return second == std::string::npos ? std::string() : name.substr(0, second);
  };
  for (const auto& name : ignored) by_module[module_of(name)].push_back(name);
  for (const auto& param : parameters) declared[module_of(param.name)].push_back(param.name);
  std::vector<std::string> said;
  std::vector<std::string> ignored_evidence;
  for (const auto& name : ignored) {
    const auto module = module_of(name);
    const auto& group = by_module[module];
    if (!module.empty() && group.size() >= 4 && group.size() == declared[module].size()) {
      if (group.front() != name) continue;  // said once, at its first name
      double most = 0;
      for (const auto& member : group) most = std::max(most, ignored_moves[member]);
      said.push_back(fmt::format("any of the {} weights of {}", group.size(), module));
      ignored_evidence.push_back(
          fmt::format("redrawing each of {}'s {} weights moved the reference's output (by up "
                      "to {:.3g}), yours not at all",
                      module, group.size(), most));
      continue;
    }
    said.push_back(name);
    ignored_evidence.push_back("redrawing " + name + " moved the reference's output by up to " +
                               fmt::format("{:.3g}", ignored_moves[name]) + ", yours not at all");
  }
  evidence.insert(evidence.begin(), ignored_evidence.begin(), ignored_evidence.end());
  ignored = said;
  auto list = [](const std::vector<std::string>& items) {
    std::string text;
    for (size_t i = 0; i < items.size(); ++i) text += (i ? (i + 1 == items.size() ? " and " : ", ") : "") + items[i];
    return text;
  };
  std::string message;
  if (!ignored.empty()) message = "your output does not depend on " + list(ignored) + ", the reference's does";
  if (!spurious.empty()) {
    message += std::string(message.empty() ? "your output" : "; and it") + " depends on " + list(spurious) +
               ", the reference's does not";
  }
  evidence.insert(evidence.begin(), "input: " + base.describe());
  evidence.push_back(input_->replay_hint());
  auto result = results_.fail(spec.id, message, evidence);
  result.focus_point = focus;
  return result;
}

CheckResult Kit::masked_values(const CheckSpec& spec) const {
  const auto id = cases_of(spec).front();
  const auto& base = input_->at(id);
  const auto& repeat = input_->at(repeat_case(id));
  const auto& changed = input_->at(masked_values_case(id));
  for (const auto* run : {&base, &repeat, &changed}) {
    if (not_runnable(*run)) return explain(spec.id, id);
  }
  // Results wrong for a reason of another focus point (a scrambled matmul
  // mixes masked keys in too) say nothing about masking.
  const auto s = status(id);
  if (s == CaseStatus::differs) {
    auto reason = explain(spec.id, id);
    if (reason.focus_point != spec.focus_point) {
      return results_.skip(spec.id, "not assessed: your results on this input are wrong for another reason (" +
                                        reason.focus_point + ": " + first_line(reason.message) + ")");
    }
  }
  const auto& name = exercise_.signature.outputs.front().name;
  std::string why;
  auto first = learner_tensor(base, name, why);
  auto again = learner_tensor(repeat, name, why);
  auto second = learner_tensor(changed, name, why);
  if (!first || !again || !second) return results_.fail(spec.id, why);
  if (!compare(*first, *again, exercise_.tolerance("float64")).ok) {
    return results_.skip(spec.id,
                         "not assessed: your " + name +
                             " changes between two runs on identical inputs (something random runs in forward), "
                             "so the influence of masked keys cannot be isolated");
  }
  auto cmp = compare(*first, *second, exercise_.tolerance("float64"));
  if (cmp.ok) return results_.pass(spec.id, "values behind fully masked keys have no influence");
  return results_.fail(spec.id,
                       "changing only the keys and values that every query must ignore changed the " + name +
                           ": masked keys still contribute (masked scores must become -inf before the softmax)",
                       {"input: " + changed.describe(), name + " before vs after: " + cmp.detail});
}

CheckResult Kit::work_growth(const CheckSpec& spec) const {
  const auto ids = cases_of(spec);
  if (ids.size() != 2) throw ConfigError("check '" + spec.id + "' (work_growth) needs exactly two cases");
  std::vector<int64_t> counts;
  for (const auto& id : ids) {
    const auto& run = input_->at(id);
    if (not_runnable(run)) return explain(spec.id, id);
    int64_t total = 0;
    for (const auto& [op, count] : op_counts(run.response)) {
      if (is_matrix_product(op) || op == "aten::softmax" || op == "aten::_softmax" || op == "aten::mul" ||
          op == "aten::div") {
        total += count;
      }
    }
    counts.push_back(total);
  }
  if (counts[1] > counts[0]) {
    return results_.fail(spec.id,
                         spec.option("says", "the number of matmul/softmax operations grows with the configuration"),
                         {input_->at(ids[0]).describe() + ": " + std::to_string(counts[0]) + " operations",
                          input_->at(ids[1]).describe() + ": " + std::to_string(counts[1]) + " operations"});
  }
  return results_.pass(spec.id, "the same operations run in both configurations");
}

namespace {

std::map<std::string, double> quantities_of(const AttentionProbe& probe) {
  std::map<std::string, double> out;
  for (const auto& [name, expression] : probe.quantities) out[name] = evaluate(expression, probe.dims);
  return out;
}

}  // namespace

CheckResult Kit::attention_scale(const CheckSpec& spec) const {
  const auto& run = input_->at(probe_case("scale"));
  if (auto why = not_runnable(run)) return results_.skip(spec.id, "not assessed: " + *why);
  std::string why;
  auto weights = probe_->read(run, why);
  if (!weights) return results_.skip(spec.id, "not assessed: " + why);
  auto w = weights->to(at::kDouble);
  // Only a softmax over the keys (perhaps times the scale, applied late) has a scale to read.
  const double want = 1.0 / std::sqrt(evaluate(probe_->head_dim, probe_->dims));
  auto rows = w.sum(-1);
  const double low = rows.min().item<double>(), high = rows.max().item<double>();
  const bool distribution = std::abs(low - 1) < 1e-6 && std::abs(high - 1) < 1e-6;
  // A softmax over the queries has its scale too, read along the queries
  // (the softmax check names the axis).
  const bool over_queries = !distribution && (w.sum(-2) - 1).abs().max().item<double>() < 1e-6;
  if (!distribution && !over_queries && !(near(low, high) && (near(low, want) || near(low, 1 / want)))) {
    return results_.skip(spec.id,
                         "not assessed: your attention weights are not a distribution over the keys, so no "
                         "scale can be read from them (see the softmax check)");
  }
  // The weights a softmax over the keys gives weight: all, or under a causal
  // exercise's own mask the keys up to the query's position (key 0 always).
  auto kept =
      probe_->causal ? at::ones({w.size(-2), w.size(-1)}, at::kBool).tril().expand_as(w) : at::ones_like(w, at::kBool);
  if (probe_->causal && over_queries) {
    return results_.skip(spec.id, "not assessed: your softmax normalises over the queries (see the softmax check)");
  }
  if (!(w.masked_select(kept) > 0).all().item<bool>() || !at::isfinite(w).all().item<bool>()) {
    return results_.skip(spec.id,
                         std::string("not assessed: some attention weights are zero, negative or not finite ") +
                             (probe_->causal ? "at keys a query may see" : "without a mask") +
                             ", so no scale can be read from them (see the other checks)");
  }
  // log(w_ij / w_i0) = scale * a_i * (b_j - b_0) for a softmax over the keys of scale * q.k
  // (over the queries: log(w_ij / w_0j) = scale * (a_i - a_0) * b_j).
  auto a = run.request.tensor("probe.a"), b = run.request.tensor("probe.b");
  auto x = over_queries ? ((a - a.narrow(-1, 0, 1)).unsqueeze(-1) * b.unsqueeze(1)).unsqueeze(1).expand_as(w)
                        : (a.unsqueeze(-1) * (b - b.narrow(-1, 0, 1)).unsqueeze(1)).unsqueeze(1).expand_as(w);
  auto y = over_queries ? w.log() - w.narrow(-2, 0, 1).log() : w.log() - w.narrow(-1, 0, 1).log();
  x = x.masked_select(kept);
  y = y.masked_select(kept);
  const double scale = (x * y).sum().item<double>() / (x * x).sum().item<double>();
  const double residual = (y - x * scale).abs().max().item<double>();
  if (residual > 1e-6 * std::max(1.0, y.abs().max().item<double>())) {
    return results_.skip(spec.id,
                         "not assessed: your attention weights do not follow softmax(c * q.k) over the keys "
                         "for any single constant c (see the other checks)");
  }
  const auto quantities = quantities_of(*probe_);
  std::vector<std::string> evidence = {"input: " + run.describe(),
                                       over_queries
                                           ? "measured from the ratios of your attention weights along the queries, "
                                             "where your softmax normalises: log(w_ij / w_0j) = c * (q_i.k_j - "
                                             "q_0.k_j), fitted over " +
                                                 std::to_string(w.numel()) + " weights"
                                           : "measured from the ratios of your attention weights: log(w_ij / w_i0) = "
                                             "c * (q_i.k_j - q_i.k_0), fitted over " +
                                                 std::to_string(x.numel()) + " weights"};
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

std::vector<AttentionFigure> Kit::figures(const JudgeInput& input) {
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
    CaseRun answer{run.request, {}};
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

// ---- device placement ----

std::vector<Kit::DeviceProblem> Kit::gpu_device_problems() const {
  std::vector<DeviceProblem> problems;
  std::set<std::string> seen;
  const auto wanted = target().device;
  const auto& outputs = exercise_.signature.outputs;
  for (const auto& [id, run] : input_->cases) {
    if (auto op = device_mismatch(run.error())) {
      if (seen.insert(*op).second) {
        problems.push_back(
            {"tensors on different devices met in " + *op + ": " + first_line(run.error()), run.describe()});
      }
      continue;
    }
    if (run.threw()) continue;
    // The forward's own outputs (what a driver reports besides, like a fit's losses, is the grader's).
    for (const auto& output : outputs) {
      const auto device = run.response.string_or(output.name + ".device", wanted);
      if (device.rfind(wanted, 0) == 0 || !seen.insert("output " + output.name).second) continue;
      problems.push_back(
          {"your " + output.name + " came back on " + device + " while the inputs were on " + wanted, run.describe()});
    }
  }
  return problems;
}

CheckResult Kit::device_placement(const CheckSpec& spec) const {
  // What the runner's device watch saw (grader/runner/op_recorder.h), first case of each.
  std::map<std::string, std::string> first_seen;
  for (const auto& [id, run] : input_->cases) {
    std::istringstream lines(run.response.string_or("device_events", ""));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && !first_seen.count(line)) first_seen[line] = run.describe();
    }
  }
  auto short_op = [](std::string op) { return op.rfind("aten::", 0) == 0 ? op.substr(6) : op; };
  std::vector<std::string> evidence;
  std::string message;
  for (const auto& [event, where] : first_seen) {
    std::istringstream words(event);
    std::string kind, op, origin;
    words >> kind >> op >> origin;
    if (kind == "mixed") {
      evidence.push_back(short_op(op) + " received a tensor that " + short_op(origin) +
                         " made on the CPU (no device given) together with the input's data (" + where + ")");
      if (message.empty()) {
        message = "a tensor made inside forward with torch::" + short_op(origin) +
                  " and no device stays on the CPU: on a GPU, " + short_op(op) +
                  " would fail with a device mismatch; create it with the input's options (x.options(), "
                  "x.device()) or register it as a buffer";
      }
    } else if (kind == "item") {
      evidence.push_back(short_op(op) + " read a value of the input's data back to the host (" + where + ")");
      if (message.empty()) {
        message =
            "forward reads a tensor's value back to the host (.item()): on a GPU every call waits for the "
            "device; keep the computation in tensors";
      }
    } else if (kind == "to_host") {
      evidence.push_back(short_op(op) + " moved the input's data to the CPU (" + where + ")");
      if (message.empty()) {
        message =
            "forward moves data to the CPU (.cpu(), .to(torch::kCPU)): a silent round trip; keep every "
            "tensor on the input's device";
      }
    }
  }
  if (target().on_gpu()) {
    for (const auto& problem : gpu_device_problems()) {
      if (message.empty()) message = "on the GPU, " + problem.what;
      evidence.push_back("on " + problem.where + ", " + problem.what);
    }
  }
  if (!message.empty()) return results_.fail(spec.id, message, evidence);
  const bool any_ran =
      std::any_of(input_->cases.begin(), input_->cases.end(), [](const auto& entry) { return !entry.second.threw(); });
  if (!any_ran) return results_.skip(spec.id, "not assessed: every case stopped with an error, so nothing was traced");
  return results_.pass(spec.id, target().on_gpu()
                                    ? "every case ran on the GPU; nothing was made on a fixed device or read back "
                                      "to the host inside forward"
                                    : "inside forward nothing made on a fixed device meets the input's data and "
                                      "nothing is read back to the host (operator trace on the CPU; not "
                                      "GPU-verified)");
}

CheckResult Kit::gpu_execution(const CheckSpec& spec) const {
  if (!target().on_gpu()) {
    auto skipped = results_.skip(spec.id, "not GPU-verified: " + target().no_gpu);
    skipped.needs_gpu = true;
    return skipped;
  }
  auto problems = gpu_device_problems();
  if (!problems.empty()) {
    std::vector<std::string> evidence;
    for (const auto& problem : problems) evidence.push_back("on " + problem.where + ", " + problem.what);
    return results_.fail(spec.id, "on the GPU, " + problems.front().what, evidence);
  }
  size_t ran = 0;
  for (const auto& [id, run] : input_->cases) ran += run.threw() ? 0 : 1;
  return results_.pass(spec.id, fmt::format("{} cases ran on the GPU, their outputs on the inputs' device", ran));
}

}  // namespace grader::kit
