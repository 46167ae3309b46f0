#include "checks/kit/kit.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/version.h>

#include <time.h>

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
  record.reals[wire::key::ctor(name)] = value;
  if (value == std::floor(value)) record.ints[wire::key::ctor(name)] = static_cast<int64_t>(value);
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
  for (const auto& dim : spec.shape) {
    // "?A": a leading dimension the interface allows but does not require
    // ((..., D)); a case that gives no A has a tensor without that axis.
    if (!dim.empty() && dim.front() == '?') {
      if (dims.count(dim.substr(1))) shape.push_back(evaluate_dim(dim.substr(1), dims));
      continue;
    }
    shape.push_back(evaluate_dim(dim, dims));
  }
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

double evaluate(const std::string& expression, const Dims& dims) {
  // expression = term (('+' | '-') term)*; term = power (('*' | '/') power)*;
  // power = factor ('^' power)?; factor = ('-' | '+') factor | number |
  // dimension | 'sqrt' '(' expression ')' | '(' expression ')'.
  size_t at = 0;
  auto fail = [&](const std::string& why) -> double {
    throw ConfigError("cannot evaluate '" + expression + "': " + why);
  };
  auto skip = [&] {
    while (at < expression.size() && expression[at] == ' ') ++at;
  };
  auto is_word = [&](size_t i) {
    return i < expression.size() &&
           (std::isalnum(static_cast<unsigned char>(expression[i])) || expression[i] == '_' || expression[i] == '.');
  };
  std::function<double()> sum, power;
  auto parenthesised = [&]() -> double {
    ++at;  // '('
    double value = sum();
    skip();
    if (at >= expression.size() || expression[at] != ')') return fail("a '(' without ')'");
    ++at;
    return value;
  };
  auto factor = [&]() -> double {
    skip();
    if (at < expression.size() && (expression[at] == '-' || expression[at] == '+')) {
      const bool negative = expression[at++] == '-';
      const double value = power();
      return negative ? -value : value;
    }
    if (at < expression.size() && expression[at] == '(') return parenthesised();
    const size_t start = at;
    while (is_word(at)) ++at;
    // A number's exponent: 1e-5, 2.5E+3.
    if (at > start && std::isdigit(static_cast<unsigned char>(expression[start])) &&
        (expression[at - 1] == 'e' || expression[at - 1] == 'E') && at + 1 < expression.size() &&
        (expression[at] == '-' || expression[at] == '+') && std::isdigit(static_cast<unsigned char>(expression[at + 1]))) {
      ++at;
      while (is_word(at)) ++at;
    }
    const auto token = expression.substr(start, at - start);
    if (token.empty()) return fail("expected a number or a dimension at position " + std::to_string(start));
    if (dims.count(token)) return static_cast<double>(dims.at(token));
    if (token == "sqrt") {
      skip();
      if (at >= expression.size() || expression[at] != '(') return fail("sqrt needs '(' after it");
      const double value = parenthesised();
      if (value < 0) return fail("the square root of a negative number");
      return std::sqrt(value);
    }
    try {
      size_t used = 0;
      double value = std::stod(token, &used);
      if (used == token.size()) return value;
    } catch (const std::exception&) {
    }
    return fail("'" + token + "' is neither a dimension nor a number");
  };
  power = [&]() -> double {
    const double base = factor();
    skip();
    if (at < expression.size() && expression[at] == '^') {
      ++at;
      return std::pow(base, power());
    }
    return base;
  };
  auto product = [&]() -> double {
    double value = power();
    for (skip(); at < expression.size() && (expression[at] == '*' || expression[at] == '/'); skip()) {
      const char op = expression[at++];
      const double operand = power();
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

std::optional<NameTemplate> name_template(const std::string& name, const Dims& dims) {
  const auto open = name.find('{');
  if (open == std::string::npos) return std::nullopt;
  const auto close = name.find('}', open);
  if (close == std::string::npos) throw ConfigError("parameter '" + name + "': '{' without '}'");
  return NameTemplate{name.substr(0, open), name.substr(close + 1),
                      evaluate_dim(name.substr(open + 1, close - open - 1), dims)};
}

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
  // Fields "<path> <p>" (wire/fields.h): a path is the learner's text.
  for (const auto& fields : wire::field_lines(run.response.string_or("dropouts", ""))) {
    if (fields.size() == 2 && fields[0] == path) return wire::number_field(fields[1]);
  }
  return std::nullopt;
}

namespace {

// Sizes from `first` on; false when one does not read as a size.
bool sizes_from(const std::vector<std::string>& fields, size_t first, std::vector<int64_t>& sizes) {
  for (size_t i = first; i < fields.size(); ++i) {
    const auto size = wire::integer_field(fields[i]);
    if (!size || *size < 0) return false;
    sizes.push_back(*size);
  }
  return true;
}

}  // namespace

std::string Registered::describe() const { return name + " " + shape_string(sizes); }

std::vector<Registered> module_parameters(const CaseRun& run) {
  std::vector<Registered> out;
  for (const auto& fields : wire::field_lines(run.response.string_or("parameters", ""))) {
    Registered one;
    one.name = fields[0];
    if (sizes_from(fields, 1, one.sizes)) out.push_back(std::move(one));
  }
  return out;
}

std::vector<Registered> module_buffers(const CaseRun& run) {
  std::vector<Registered> out;
  for (const auto& fields : wire::field_lines(run.response.string_or("buffers", ""))) {
    if (fields.size() < 3 || (fields[2] != "0" && fields[2] != "1")) continue;
    Registered one;
    one.name = fields[0];
    one.dtype = fields[1];
    one.requires_grad = fields[2] == "1";
    if (sizes_from(fields, 3, one.sizes)) out.push_back(std::move(one));
  }
  return out;
}

std::vector<std::string> listed_names(const CaseRun& run, const std::string& key) {
  std::vector<std::string> names;
  for (const auto& fields : wire::field_lines(run.response.string_or(key, ""))) names.push_back(fields[0]);
  return names;
}

std::string repeat_case(const std::string& id) { return id + "~repeat"; }
std::string masked_values_case(const std::string& id) { return id + "~masked_values"; }
std::string probe_case(const std::string& which) { return "probe~" + which; }
std::string moved_case(const std::string& id, const std::string& what) { return id + "~moved." + what; }
std::string training_case(const std::string& id, int run) { return id + (run == 0 ? "~train" : "~train_again"); }
double float32_inverse_sqrt(double d) { return static_cast<double>(1.0f / std::sqrt(static_cast<float>(d))); }
double inverse_of_float32_sqrt(double d) { return 1.0 / static_cast<double>(std::sqrt(static_cast<float>(d))); }

std::optional<double> held_beyond(const OutsideMemory& memory, double allowance) {
  if (!memory.unavailable.empty() || memory.learner_peak == 0 || memory.control_peak == 0) return std::nullopt;
  const double beyond = static_cast<double>(memory.learner_peak) - static_cast<double>(memory.control_peak);
  if (beyond > allowance) return beyond;
  return std::nullopt;
}

namespace {
double median(std::vector<double> values) {
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}
}  // namespace

std::optional<double> cpu_growth_per_token(const std::vector<CpuPair>& pairs) {
  std::vector<double> slopes;
  for (const auto& pair : pairs) {
    const double more = pair.far_tokens - pair.near_tokens;
    if (more != 0) slopes.push_back((pair.far_seconds - pair.near_seconds) / more);
  }
  if (slopes.empty()) return std::nullopt;
  return median(std::move(slopes));
}

double median_of(const std::vector<CpuPair>& pairs, double CpuPair::*field) {
  std::vector<double> values;
  for (const auto& pair : pairs) values.push_back(pair.*field);
  return values.empty() ? 0.0 : median(std::move(values));
}

std::optional<double> projections_per_token(double growth, double projection_seconds) {
  if (!(projection_seconds > 0)) return std::nullopt;
  const double projections = growth / projection_seconds;
  if (std::abs(projections) >= kReprojectionFloor) return projections;
  return std::nullopt;
}

double projection_cpu_seconds(int64_t batch, int64_t dim) {
  constexpr int64_t kTokens = 256;  // at once, as a cache projected again would be
  auto generator = at::make_generator<at::CPUGeneratorImpl>(1);
  const auto x = at::randn({kTokens * batch, dim}, generator, at::kDouble);
  const auto w = at::randn({dim, dim}, generator, at::kDouble);
  auto thread_seconds = [] {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
  };
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < 15; ++i) {
    const double start = thread_seconds();
    const auto y = at::mm(x, w.t());
    best = std::min(best, thread_seconds() - start);
  }
  return best / kTokens;
}

bool operators_grow(const OperatorCount& first, const OperatorCount& second) {
  if (second.named > first.named || second.products > first.products) return true;
  return first.traced && second.traced && second.own > first.own;
}

bool too_many_products(const OperatorCount& first, const OperatorCount& second) {
  return std::max(first.products, second.products) > kProductCeiling;
}

ProbeReading read_probe(std::vector<std::pair<double, int64_t>> errors, double tolerance) {
  std::sort(errors.begin(), errors.end());
  if (errors.empty() || errors[0].first > tolerance) return {ProbeReading::Kind::none, 0};
  if (errors.size() > 1 && (errors[1].first <= tolerance || errors[1].first < 100 * errors[0].first)) {
    return {ProbeReading::Kind::several, errors[0].second};
  }
  return {ProbeReading::Kind::one, errors[0].second};
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

Dims dims_of(const wire::Record& record) {
  Dims dims;
  for (const auto& [key, value] : record.ints) {
    if (const auto name = wire::key::dim_name(key)) dims[*name] = value;
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

std::optional<std::string> modified_inputs(const CaseRun& run) {
  const auto names = split_lines(run.response.string_or("inputs_modified", ""));
  if (names.empty()) return std::nullopt;
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + ("'" + names[i] + "'");
  }
  return text;
}

}  // namespace grader::kit
