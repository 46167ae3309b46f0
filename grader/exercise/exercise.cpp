#include "exercise/exercise.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "base/errors.h"
#include "base/text.h"

namespace grader {
namespace fs = std::filesystem;
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Reads fields with messages that name the file and the field.
class Reader {
 public:
  explicit Reader(fs::path file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& what) const { throw ConfigError(file_.string() + ": " + what); }
  std::string text(const YAML::Node& node, const std::string& key) const {
    auto value = node[key];
    if (!value || !value.IsScalar() || value.Scalar().empty()) fail("'" + key + "' must be a non-empty string");
    return value.Scalar();
  }
  double number(const YAML::Node& node, const std::string& key, double fallback) const {
    auto value = node[key];
    if (!value) return fallback;
    try {
      return value.as<double>();
    } catch (const YAML::Exception&) {
      fail("'" + key + "' must be a number");
    }
  }
  std::vector<std::string> texts(const YAML::Node& node, const std::string& key, bool required) const {
    auto value = node[key];
    std::vector<std::string> out;
    if (!value) {
      if (required) fail("'" + key + "' is missing");
      return out;
    }
    if (!value.IsSequence()) fail("'" + key + "' must be a list");
    for (const auto& item : value) {
      if (!item.IsScalar()) fail("'" + key + "' must be a list of strings");
      out.push_back(item.Scalar());
    }
    return out;
  }
  YAML::Node list(const YAML::Node& node, const std::string& key) const {
    auto value = node[key];
    if (!value || !value.IsSequence() || value.size() == 0) fail("'" + key + "' must be a non-empty list");
    return value;
  }

 private:
  fs::path file_;
};

}  // namespace

bool Exercise::gpu_only() const {
  return !learner_files.empty() && fs::path(learner_files.front()).extension() == ".cu";
}

bool Exercise::needs_gpu(const CheckSpec& check) const {
  return check.kind == "gpu_execution" || (gpu_only() && check.kind != "compiles");
}

double Exercise::max_score(bool on_gpu) const {
  double total = 0;
  for (const auto& check : checks) {
    if (!check.informational && (on_gpu || !needs_gpu(check))) total += check.weight;
  }
  return total;
}

const FocusPoint& Exercise::focus_point(const std::string& wanted) const {
  for (const auto& point : focus_points) {
    if (point.id == wanted) return point;
  }
  throw GraderFault("exercise " + id + " has no focus point '" + wanted + "'");
}

const CheckSpec& Exercise::check(const std::string& wanted) const {
  for (const auto& spec : checks) {
    if (spec.id == wanted) return spec;
  }
  throw GraderFault("exercise " + id + " declares no check '" + wanted + "'");
}

const Mistake& Exercise::mistake(const std::string& wanted) const {
  for (const auto& entry : mistakes) {
    if (entry.id == wanted) return entry;
  }
  throw GraderFault("exercise " + id + " declares no mistake '" + wanted + "'");
}

const CaseSpec& Exercise::case_spec(const std::string& wanted) const {
  for (const auto& spec : cases) {
    if (spec.id == wanted) return spec;
  }
  throw GraderFault("exercise " + id + " declares no case '" + wanted + "'");
}

const Tolerance& Exercise::tolerance(const std::string& dtype) const {
  auto found = tolerances.find(dtype);
  if (found == tolerances.end()) throw GraderFault("exercise " + id + " has no tolerance for " + dtype);
  return found->second;
}

Exercise load_exercise(const fs::path& dir) {
  auto file = dir / "exercise.yaml";
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  if (!(in && text << in.rdbuf())) throw ConfigError(file.string() + ": cannot read the file");
  return parse_exercise(text.str(), dir);
}

namespace {

// A focus point of exercises/shared.yaml, by id.
FocusPoint shared_focus_point(const fs::path& file, const std::string& id) {
  Reader read(file);
  YAML::Node root;
  try {
    root = YAML::LoadFile(file.string());
  } catch (const YAML::Exception& error) {
    read.fail(std::string("cannot read the shared focus points: ") + error.what());
  }
  for (const auto& node : read.list(root, "focus_points")) {
    if (read.text(node, "id") != id) continue;
    FocusPoint point{id, read.text(node, "title"), read.text(node, "explanation"), read.texts(node, "hints", false)};
    point.shared = true;
    return point;
  }
  read.fail("no shared focus point '" + id + "'");
}

std::vector<TensorSpec> tensor_specs(const Reader& read, const YAML::Node& node, const std::string& where) {
  std::vector<TensorSpec> specs;
  if (!node) return specs;
  if (!node.IsMap()) read.fail("'" + where + "' must map names to shapes");
  for (const auto& entry : node) {
    TensorSpec spec;
    spec.name = entry.first.as<std::string>();
    auto shape = entry.second;
    if (shape.IsMap()) {
      if (shape["kind"]) spec.kind = read.text(shape, "kind");
      if (spec.kind != "randn" && spec.kind != "attention_mask" && spec.kind != "tokens")
        read.fail("'" + where + "." + spec.name + "': unknown kind '" + spec.kind + "' (randn, attention_mask, tokens)");
      if (spec.kind == "tokens") spec.below = read.text(shape, "below");
      shape = shape["shape"];
    }
    if (!shape || !shape.IsSequence() || shape.size() == 0)
      read.fail("'" + where + "." + spec.name + "' needs a shape: a list of dimensions");
    for (const auto& dim : shape) {
      if (!dim.IsScalar()) read.fail("'" + where + "." + spec.name + "': a dimension must be a name or a number");
      spec.shape.push_back(dim.Scalar());
    }
    specs.push_back(spec);
  }
  return specs;
}

void parse_speed(const Reader& read, const YAML::Node& node, Exercise& exercise) {
  if (!node.IsMap()) read.fail("'speed' must be a mapping (baseline, sizes, ...)");
  for (const auto& entry : node) {
    auto key = entry.first.as<std::string>();
    if (key != "baseline" && key != "heads" && key != "causal" && key != "sizes")
      read.fail("'speed." + key + "' is not known (baseline, heads, causal, sizes)");
  }
  auto& speed = exercise.speed;
  speed.baseline = read.text(node, "baseline");
  const auto& inputs = exercise.signature.inputs;
  auto has_input = [&](const char* name) {
    return std::any_of(inputs.begin(), inputs.end(), [&](const TensorSpec& t) { return t.name == name; });
  };
  if (speed.baseline == "attention") {
    if (!has_input("query") || !has_input("key") || !has_input("value"))
      read.fail("'speed.baseline: attention' needs signature inputs query, key and value");
  } else if (speed.baseline == "self_attention") {
    if (inputs.empty() || inputs.front().shape.size() != 3)
      read.fail("'speed.baseline: self_attention' needs a first signature input of shape (B, N, D)");
    speed.heads = read.text(node, "heads");
  } else {
    read.fail("'speed.baseline' must be attention or self_attention");
  }
  if (auto causal = node["causal"]) {
    if (!YAML::convert<bool>::decode(causal, speed.causal)) read.fail("'speed.causal' must be true or false");
  }
  auto sizes = node["sizes"];
  if (!sizes || !sizes.IsSequence() || sizes.size() == 0) read.fail("'speed.sizes' must be a non-empty list");
  for (const auto& size : sizes) {
    if (!size.IsMap()) read.fail("each of 'speed.sizes' must map dimensions to numbers");
    std::map<std::string, int64_t> dims;
    for (const auto& entry : size) {
      int64_t number = 0;
      if (!entry.second.IsScalar() || !YAML::convert<int64_t>::decode(entry.second, number) || number < 0)
        read.fail("'speed.sizes': '" + entry.first.as<std::string>() + "' must be a number, not negative");
      dims[entry.first.as<std::string>()] = number;
    }
    speed.sizes.push_back(dims);
  }
}

// `isolate:`: rest and parts, each part's settings naming signature parameters.
void parse_isolation(const Reader& read, const YAML::Node& node, Exercise& exercise,
                     const std::set<std::string>& points) {
  if (!node.IsMap()) read.fail("'isolate' must be a mapping (rest, parts)");
  for (const auto& entry : node) {
    auto key = entry.first.as<std::string>();
    if (key != "rest" && key != "parts") read.fail("'isolate." + key + "' is not known (rest, parts)");
  }
  auto& isolation = exercise.isolation;
  isolation.rest = read.text(node, "rest");
  std::map<std::string, size_t> parameters;  // name -> rank
  std::set<std::string> ids;
  for (const auto& parameter : exercise.signature.parameters) parameters[parameter.name] = parameter.shape.size();
  auto settings = [&](const YAML::Node& part, const std::string& id, const char* key) {
    std::vector<std::pair<std::string, std::string>> out;
    const auto& given = part[key];
    if (!given) return out;
    if (!given.IsMap() || given.size() == 0)
      read.fail("part '" + id + "': '" + key + "' must map parameters to zero, one or identity");
    for (const auto& entry : given) {
      auto name = entry.first.as<std::string>();
      auto value = entry.second.IsScalar() ? entry.second.Scalar() : "";
      if (!parameters.count(name)) read.fail("part '" + id + "': '" + name + "' is no signature parameter");
      if (value != "zero" && value != "one" && value != "identity")
        read.fail("part '" + id + "': '" + name + "' must be set to zero, one or identity");
      if (value == "identity" && parameters.at(name) != 2)
        read.fail("part '" + id + "': '" + name + "' is not a matrix, so it has no identity");
      out.emplace_back(name, value);
    }
    return out;
  };
  const auto& parts = node["parts"];
  if (!parts || !parts.IsSequence() || parts.size() == 0) read.fail("'isolate.parts' must be a non-empty list");
  for (const auto& part : parts) {
    if (!part.IsMap()) read.fail("each of 'isolate.parts' must be a mapping");
    for (const auto& entry : part) {
      auto key = entry.first.as<std::string>();
      if (key != "id" && key != "says" && key != "off" && key != "blind" && key != "focus_point")
        read.fail("'isolate.parts' has unknown '" + key + "' (id, says, off, blind, focus_point)");
    }
    PartSpec spec;
    spec.id = read.text(part, "id");
    if (!ids.insert(spec.id).second) read.fail("part '" + spec.id + "' is declared twice");
    spec.says = read.text(part, "says");
    spec.off = settings(part, spec.id, "off");
    if (spec.off.empty()) read.fail("part '" + spec.id + "' needs 'off': the parameters that switch it off");
    spec.blind = settings(part, spec.id, "blind");
    if (part["focus_point"]) {
      spec.focus_point = read.text(part, "focus_point");
      if (!points.count(spec.focus_point)) read.fail("part '" + spec.id + "' names an unknown focus point");
      if (spec.blind.empty())
        read.fail("part '" + spec.id + "' names a focus point but has no 'blind' settings to confirm it with");
    }
    isolation.parts.push_back(spec);
  }
}

void parse_kit_sections(const Reader& read, const YAML::Node& root, Exercise& exercise,
                        const std::set<std::string>& points) {
  if (auto signature = root["signature"]) {
    if (!signature.IsMap()) read.fail("'signature' must be a mapping");
    if (auto ctor = signature["constructor"]) {
      if (!ctor.IsMap()) read.fail("'signature.constructor' must map argument names to expressions");
      for (const auto& entry : ctor) {
        if (!entry.second.IsScalar()) read.fail("'signature.constructor' values must be expressions");
        exercise.signature.constructor.emplace_back(entry.first.as<std::string>(), entry.second.Scalar());
      }
    }
    if (auto arguments = signature["arguments"]) {
      if (!arguments.IsMap()) read.fail("'signature.arguments' must map argument names to expressions");
      for (const auto& entry : arguments) {
        if (!entry.second.IsScalar()) read.fail("'signature.arguments' values must be expressions");
        exercise.signature.arguments.emplace_back(entry.first.as<std::string>(), entry.second.Scalar());
      }
    }
    exercise.signature.inputs = tensor_specs(read, signature["inputs"], "signature.inputs");
    exercise.signature.outputs = tensor_specs(read, signature["outputs"], "signature.outputs");
    exercise.signature.parameters = tensor_specs(read, signature["parameters"], "signature.parameters");
    if (exercise.signature.outputs.empty()) read.fail("'signature.outputs' is missing");
  }
  std::set<std::string> case_ids;
  if (auto cases = root["cases"]) {
    if (!cases.IsSequence()) read.fail("'cases' must be a list");
    for (const auto& node : cases) {
      if (!node.IsMap()) read.fail("each of 'cases' must be a mapping");
      CaseSpec spec{};
      spec.id = read.text(node, "id");
      if (!case_ids.insert(spec.id).second) read.fail("case '" + spec.id + "' is declared twice");
      for (const auto& entry : node) {
        auto key = entry.first.as<std::string>();
        if (key == "id") continue;
        if (!entry.second.IsScalar()) read.fail("case '" + spec.id + "': '" + key + "' must be a scalar");
        int64_t number = 0;
        if (YAML::convert<int64_t>::decode(entry.second, number)) {
          if (number < 0) read.fail("case '" + spec.id + "': '" + key + "' must not be negative");
          spec.dims[key] = number;
        } else {
          spec.traits[key] = entry.second.Scalar();
        }
      }
      exercise.cases.push_back(spec);
    }
  }
  if (auto features = root["features"]) {
    if (!features.IsSequence()) read.fail("'features' must be a list");
    for (const auto& node : features) {
      FeatureSpec spec{read.text(node, "id"), read.text(node, "when"), read.text(node, "focus_point"),
                       read.text(node, "says"), node["mistake"] ? read.text(node, "mistake") : ""};
      if (!points.count(spec.focus_point)) read.fail("feature '" + spec.id + "' names an unknown focus point");
      exercise.features.push_back(spec);
    }
  }
  if (auto errors = root["errors"]) {
    if (!errors.IsSequence()) read.fail("'errors' must be a list");
    for (const auto& node : errors) {
      ErrorRule rule{read.text(node, "contains"), read.text(node, "focus_point"), read.text(node, "says"),
                     node["mistake"] ? read.text(node, "mistake") : ""};
      if (!points.count(rule.focus_point)) read.fail("error rule '" + rule.contains + "' names an unknown focus point");
      exercise.error_rules.push_back(rule);
    }
  }
  if (auto speed = root["speed"]) parse_speed(read, speed, exercise);
  if (auto isolate = root["isolate"]) parse_isolation(read, isolate, exercise, points);
  std::set<std::string> mistakes;
  for (const auto& mistake : exercise.mistakes) mistakes.insert(mistake.id);
  for (const auto& feature : exercise.features) {
    if (!feature.mistake.empty() && !mistakes.count(feature.mistake))
      read.fail("feature '" + feature.id + "' names unknown mistake '" + feature.mistake + "'");
  }
  for (const auto& rule : exercise.error_rules) {
    if (!rule.mistake.empty() && !mistakes.count(rule.mistake))
      read.fail("error rule '" + rule.contains + "' names unknown mistake '" + rule.mistake + "'");
  }
  for (const auto& check : exercise.checks) {
    for (const auto& id : check.cases) {
      if (!case_ids.count(id)) read.fail("check '" + check.id + "' names unknown case '" + id + "'");
    }
  }
}

// `limits:` compile and run, each with its seconds, CPU, memory, processes and output.
void parse_limits(const Reader& read, const YAML::Node& root, Exercise& exercise) {
  if (auto limits = root["limits"]) {
    if (!limits.IsMap()) read.fail("'limits' must map compile/run to their limits");
    for (const auto& entry : limits) {
      auto step = entry.first.as<std::string>();
      if (step != "compile" && step != "run") read.fail("'limits' has '" + step + "': only compile and run");
      auto& into = step == "compile" ? exercise.limits.compile : exercise.limits.run;
      const auto& node = entry.second;
      if (!node.IsMap()) read.fail("'limits." + step + "' must be a mapping");
      for (const auto& key : node) {
        auto name = key.first.as<std::string>();
        if (name != "seconds" && name != "cpu_seconds" && name != "memory_mb" && name != "processes" &&
            name != "output_kb") {
          read.fail("'limits." + step + "' has unknown '" + name +
                    "' (known: seconds, cpu_seconds, memory_mb, processes, output_kb)");
        }
      }
      bool cpu_given = static_cast<bool>(node["cpu_seconds"]);
      into.seconds = read.number(node, "seconds", into.seconds);
      into.cpu_seconds = cpu_given ? read.number(node, "cpu_seconds", into.cpu_seconds) : into.seconds;
      into.memory_mb = read.number(node, "memory_mb", into.memory_mb);
      into.processes = static_cast<int>(read.number(node, "processes", into.processes));
      into.output_kb = read.number(node, "output_kb", into.output_kb);
    }
  }
  for (const auto* step : {&exercise.limits.compile, &exercise.limits.run}) {
    if (step->seconds <= 0 || step->cpu_seconds <= 0 || step->memory_mb < 64 || step->processes < 4 ||
        step->output_kb < 1) {
      read.fail("limits must be positive (memory_mb at least 64, processes at least 4)");
    }
  }

}

// `tolerances:` float32 and float64 (replays and explanations match at these),
// `exact` (a float64 case passes only within it: float64 precision, which
// float32 arithmetic cannot reach; the float64 entry where it is not given) and
// a narrow dtype where a case runs in it.
void read_tolerance(const Reader& read, const YAML::Node& root, Exercise& exercise, const std::string& dtype,
                    const std::string& missing) {
  auto entry = root["tolerances"][dtype];
  if (!entry || !entry.IsMap()) read.fail(missing);
  Tolerance tolerance{read.number(entry, "rtol", -1), read.number(entry, "atol", -1)};
  if (tolerance.rtol < 0 || tolerance.atol < 0) read.fail("tolerance for " + dtype + " needs rtol and atol >= 0");
  exercise.tolerances[dtype] = tolerance;
}

void parse_tolerances(const Reader& read, const YAML::Node& root, Exercise& exercise) {
  auto tolerances = root["tolerances"];
  if (!tolerances || !tolerances.IsMap()) read.fail("'tolerances' must map float32/float64 to {rtol, atol}");
  for (const std::string dtype : {"float32", "float64"})
    read_tolerance(read, root, exercise, dtype, "'tolerances' has no " + dtype + " entry");
  if (tolerances["exact"]) {
    read_tolerance(read, root, exercise, "exact", "'tolerances.exact' must be {rtol, atol}");
    const auto& exact = exercise.tolerances.at("exact");
    const auto& loose = exercise.tolerances.at("float64");
    if (exact.rtol > loose.rtol || exact.atol > loose.atol)
      read.fail("'tolerances.exact' must not be looser than 'tolerances.float64'");
  } else {
    exercise.tolerances["exact"] = exercise.tolerances.at("float64");
  }
}

// `focus_points:` each its own, or `- shared: ID` from exercises/shared.yaml; their ids.
std::set<std::string> parse_focus_points(const Reader& read, const YAML::Node& root, Exercise& exercise) {
  const auto& dir = exercise.dir;
  std::set<std::string> points;
  for (const auto& node : read.list(root, "focus_points")) {
    // `- shared: device_placement`: a focus point every exercise words the same
    // way, defined once in exercises/shared.yaml.
    if (node.IsMap() && node["shared"]) {
      auto point = shared_focus_point(dir.parent_path() / "shared.yaml", read.text(node, "shared"));
      if (!points.insert(point.id).second) read.fail("focus point '" + point.id + "' is declared twice");
      exercise.focus_points.push_back(point);
      continue;
    }
    FocusPoint point{read.text(node, "id"), read.text(node, "title"), read.text(node, "explanation"),
                     read.texts(node, "hints", false)};
    point.giveaways = read.texts(node, "giveaways", false);
    if (!points.insert(point.id).second) read.fail("focus point '" + point.id + "' is declared twice");
    exercise.focus_points.push_back(point);
  }
  return points;
}

// One entry of `checks:` (its options: every key the kit does not read itself).
CheckSpec parse_check(const Reader& read, const YAML::Node& node) {
  CheckSpec spec;
  spec.id = read.text(node, "id");
  spec.focus_point = read.text(node, "focus_point");
  spec.covers = read.texts(node, "covers", false);
  spec.title = read.text(node, "title");
  spec.kind = node["kind"] ? read.text(node, "kind") : spec.id;
  spec.cases = read.texts(node, "cases", false);
  if (node["weight"]) {
    try {
      spec.weight = node["weight"].as<double>();
    } catch (const YAML::Exception&) {
      spec.weight = -1;
    }
    if (!(spec.weight > 0) || !std::isfinite(spec.weight)) {
      read.fail("check '" + spec.id + "': weight must be a positive number");
    }
  }
  if (node["visibility"]) {
    spec.visibility = node["visibility"].Scalar();
    if (spec.visibility != "visible" && spec.visibility != "hidden" && spec.visibility != "after_due_date" &&
        spec.visibility != "after_published") {
      read.fail("check '" + spec.id + "': visibility must be visible, hidden, after_due_date or after_published");
    }
  }
  if (node["informational"]) {
    const auto flag = node["informational"].Scalar();
    if (flag != "true" && flag != "false") read.fail("check '" + spec.id + "': informational must be true or false");
    spec.informational = flag == "true";
    if (spec.informational && node["weight"]) {
      read.fail("check '" + spec.id + "': an informational check is outside the score, so it has no weight");
    }
    if (spec.informational) spec.weight = 0;
  }
  for (const auto& entry : node) {
    auto key = entry.first.as<std::string>();
    if (key == "id" || key == "focus_point" || key == "covers" || key == "title" || key == "kind" || key == "cases" ||
        key == "weight" || key == "informational" || key == "visibility")
      continue;
    if (entry.second.IsScalar()) {
      spec.options[key] = entry.second.Scalar();
    } else if (entry.second.IsMap()) {
      for (const auto& sub : entry.second) {
        if (!sub.second.IsScalar()) read.fail("check '" + spec.id + "': '" + key + "' must hold scalars");
        spec.options[key + "." + sub.first.as<std::string>()] = sub.second.Scalar();
      }
    } else {
      read.fail("check '" + spec.id + "': '" + key + "' must be a scalar or a mapping");
    }
  }
  return spec;
}

// `mistakes:` the known mistakes the reference replays; `tolerated:` variants of
// the reference that are no mistake (a constant rounded to float32), which a
// float64 case may match instead of the reference.
void parse_mistakes(const Reader& read, const YAML::Node& root, Exercise& exercise,
                    const std::function<void(const std::string&, const std::string&)>& known_point) {
  std::set<std::string> mistake_ids;
  if (root["mistakes"]) {
    for (const auto& node : read.list(root, "mistakes")) {
      Mistake mistake{read.text(node, "id"), read.text(node, "focus_point"), read.text(node, "title"),
                      read.text(node, "explanation")};
      if (!mistake_ids.insert(mistake.id).second) read.fail("mistake '" + mistake.id + "' is declared twice");
      known_point(mistake.focus_point, "mistake '" + mistake.id + "'");
      exercise.mistakes.push_back(mistake);
    }
  }
  if (!root["tolerated"]) return;
  for (const auto& node : read.list(root, "tolerated")) {
    TolerableVariant variant{read.text(node, "id"), read.text(node, "title")};
    if (!mistake_ids.insert(variant.id).second)
      read.fail("'" + variant.id + "' is declared twice (mistakes, tolerated)");
    exercise.tolerated.push_back(variant);
  }
}

// `contract:` promises of the interface the kit turns into cases besides
// those listed. `may_be_one: {dims, cases}`: each of these dims may be 1 (a
// batch of one, one head): a twin of each listed case with the dim set to 1
// (id <case>_<dim>1), judged by the numerics and shape checks of its base case.
void expand_contract(const Reader& read, const YAML::Node& root, Exercise& exercise) {
  const auto node = root["contract"];
  if (!node) return;
  if (!node.IsMap()) read.fail("'contract' must be a mapping (may_be_one)");
  for (const auto& entry : node) {
    if (entry.first.as<std::string>() != "may_be_one")
      read.fail("'contract." + entry.first.as<std::string>() + "' is not known (may_be_one)");
  }
  const auto one = node["may_be_one"];
  if (!one.IsMap()) read.fail("'contract.may_be_one' must be a mapping (dims, cases)");
  for (const auto& base_id : read.texts(one, "cases", true)) {
    const auto base = std::find_if(exercise.cases.begin(), exercise.cases.end(),
                                   [&](const CaseSpec& spec) { return spec.id == base_id; });
    if (base == exercise.cases.end()) read.fail("'contract.may_be_one' names unknown case '" + base_id + "'");
    const CaseSpec copy = *base;
    for (const auto& dim : read.texts(one, "dims", true)) {
      if (!copy.dims.count(dim)) read.fail("'contract.may_be_one': case '" + base_id + "' has no dim '" + dim + "'");
      if (copy.dims.at(dim) == 1) continue;
      CaseSpec twin = copy;
      twin.id = base_id + "_" + dim + "1";
      twin.dims[dim] = 1;
      twin.traits["contract"] = dim + "1";  // features may name it: when: "contract == B1"
      for (const auto& spec : exercise.cases) {
        if (spec.id == twin.id) read.fail("'contract.may_be_one' makes case '" + twin.id + "', which is listed");
      }
      exercise.cases.push_back(twin);
      // Judged for its outputs: the numerics and shape checks of its base case
      // (their twins, a dependence check's redraws say, stay with the base).
      for (auto& check : exercise.checks) {
        if (check.kind != "numerics" && check.kind != "shapes") continue;
        if (std::find(check.cases.begin(), check.cases.end(), base_id) != check.cases.end())
          check.cases.push_back(twin.id);
      }
    }
  }
}

Exercise parse_exercise_yaml(const std::string& text, const fs::path& dir) {
  auto file = dir / "exercise.yaml";
  Reader read(file);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& error) {
    throw ConfigError(file.string() + ": not valid YAML: " + error.what());
  }
  if (!root.IsMap()) read.fail("the top level must be a mapping");

  Exercise exercise;
  exercise.dir = dir;
  exercise.id = read.text(root, "id");
  if (exercise.id != dir.filename().string()) read.fail("id '" + exercise.id + "' differs from its folder name");
  exercise.title = read.text(root, "title");
  if (root["order"]) {
    try {
      exercise.order = root["order"].as<int>();
    } catch (const YAML::Exception&) {
      read.fail("'order' must be a whole number (the exercise's place in the learning order)");
    }
  }
  if (root["difficulty"]) {
    exercise.difficulty = read.text(root, "difficulty");
    if (exercise.difficulty != "easy" && exercise.difficulty != "medium" && exercise.difficulty != "hard")
      read.fail("'difficulty' must be easy, medium or hard, not '" + exercise.difficulty + "'");
  }
  if (root["minutes"]) {
    try {
      exercise.minutes = root["minutes"].as<int>();
    } catch (const YAML::Exception&) {
      exercise.minutes = 0;
    }
    if (exercise.minutes < 1 || exercise.minutes > 240)
      read.fail("'minutes' must be a whole number of minutes from 1 to 240 (the time an interview gives it)");
  }
  exercise.learner_files = read.texts(root, "learner_files", true);
  if (exercise.learner_files.empty()) read.fail("'learner_files' is empty");
  exercise.interface_header = read.text(root, "interface");
  for (const auto& name : exercise.learner_files) {
    if (!fs::exists(dir / name)) read.fail("learner file '" + name + "' does not exist");
  }
  if (!fs::exists(dir / exercise.interface_header))
    read.fail("interface '" + exercise.interface_header + "' does not exist");

  parse_limits(read, root, exercise);
  parse_tolerances(read, root, exercise);
  exercise.forbidden_operators = read.texts(root, "forbidden_operators", false);
  exercise.forbidden_symbols = read.texts(root, "forbidden_symbols", false);


  const auto points = parse_focus_points(read, root, exercise);
  auto known_point = [&](const std::string& id, const std::string& where) {
    if (!points.count(id)) read.fail(where + " names unknown focus point '" + id + "'");
  };
  std::set<std::string> check_ids;
  for (const auto& node : read.list(root, "checks")) {
    auto spec = parse_check(read, node);
    if (!check_ids.insert(spec.id).second) read.fail("check '" + spec.id + "' is declared twice");
    known_point(spec.focus_point, "check '" + spec.id + "'");
    for (const auto& covered : spec.covers) known_point(covered, "check '" + spec.id + "'");
    exercise.checks.push_back(spec);
  }
  parse_mistakes(read, root, exercise, known_point);
  parse_kit_sections(read, root, exercise, points);
  expand_contract(read, root, exercise);
  for (const auto& spec : exercise.cases) {
    auto dtype = spec.trait("dtype", "float64");
    if (dtype != "float32" && dtype != "float64" && dtype != "bfloat16" && dtype != "float16") {
      read.fail("case '" + spec.id + "': dtype '" + dtype + "' is not one of float64, float32, bfloat16, float16");
    }
    if (!exercise.tolerances.count(dtype)) {
      read_tolerance(read, root, exercise, dtype, "case '" + spec.id + "' runs in " + dtype + ": 'tolerances' has no entry for it");
    }
  }
  return exercise;
}

}  // namespace

Exercise parse_exercise(const std::string& text, const fs::path& dir) {
  // yaml-cpp throws for a node of the wrong kind anywhere (a scalar where a
  // mapping belongs, found by fuzzing): every one is a malformed file.
  try {
    auto exercise = parse_exercise_yaml(text, dir);
    exercise.definition = text;
    return exercise;
  } catch (const YAML::Exception& error) {
    throw ConfigError((dir / "exercise.yaml").string() + ": malformed: " + error.what());
  }
}

bool is_starter(const Exercise& exercise, const std::string& name, const std::string& text,
                const std::optional<fs::path>& path) {
  if (std::find(exercise.learner_files.begin(), exercise.learner_files.end(), name) == exercise.learner_files.end())
    return false;
  std::ifstream in(exercise.dir / ".starter" / name, std::ios::binary);
  if (!in) return false;
  std::stringstream starter;
  starter << in.rdbuf();
  if (starter.str() == text) return true;
  const auto blank = blank_starter(starter.str());
  return blank == text || (path && interview_starter(exercise, blank, *path) == text);
}

namespace {

// The texts an interview's copy of a starter changes: each as the starter has
// it, and as the copy at `attempt` has it. `starter` gives the opening line.
std::vector<std::pair<std::string, std::string>> interview_changes(const Exercise& exercise, const std::string& starter,
                                                                   const fs::path& attempt) {
  const auto name = attempt.filename().string();
  // The file and its folder (exercise-date-time: plain characters, safe in a
  // string literal); the whole path in a comment, unless it would end it.
  const auto short_name = (attempt.parent_path().filename() / attempt.filename()).string();
  auto whole = attempt.string();
  if (whole.find_first_of("\n\r") != std::string::npos) whole = short_name;
  std::vector<std::pair<std::string, std::string>> changes;
  std::istringstream lines(starter);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("// Read README.md in this folder", 0) != 0) continue;
    changes.emplace_back(line, "// This interview's copy of the starter (" + whole +
                                   "):\n// write your answer here, then type 'submit' in the interview that opened "
                                   "it.\n// Graded on its own:  ./grade " + exercise.id + " --submission " + whole);
    break;
  }
  // Wherever the starter names the learner's own file ("edit exercises/<id>/<name>",
  // its string split over lines or not): this copy instead.
  changes.emplace_back("exercises/" + exercise.id + "/" + name, short_name);
  return changes;
}

}  // namespace

std::string interview_starter(const Exercise& exercise, const std::string& blank, const fs::path& attempt) {
  auto text = blank;
  for (const auto& [own, copy] : interview_changes(exercise, blank, attempt)) text = replace_all(text, own, copy);
  return text;
}

std::string own_from_interview(const Exercise& exercise, const std::string& text, const fs::path& attempt) {
  std::ifstream in(exercise.dir / ".starter" / attempt.filename(), std::ios::binary);
  std::stringstream starter;
  starter << in.rdbuf();
  auto own = text;
  for (const auto& [mine, copy] : interview_changes(exercise, starter.str(), attempt)) own = replace_all(own, copy, mine);
  return own;
}

std::string blank_starter(const std::string& guided) {
  std::string blank;
  bool heading = true;  // still in the comments the file opens with
  std::istringstream lines(guided);
  for (std::string line; std::getline(lines, line);) {
    const auto first = line.find_first_not_of(" \t");
    const bool comment_only = first != std::string::npos && line.compare(first, 2, "//") == 0;
    if (first != std::string::npos && !comment_only) heading = false;
    if (comment_only && !heading) continue;
    blank += line;
    if (!lines.eof()) blank += '\n';
  }
  return blank;
}

std::vector<std::string> list_exercises(const fs::path& exercises_root) {
  std::vector<std::string> ids;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(exercises_root, error)) {
    if (entry.is_directory() && fs::exists(entry.path() / "exercise.yaml"))
      ids.push_back(entry.path().filename().string());
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<Exercise> load_exercises_in_order(const fs::path& exercises_root) {
  std::vector<Exercise> exercises;
  for (const auto& id : list_exercises(exercises_root)) exercises.push_back(load_exercise(exercises_root / id));
  std::stable_sort(exercises.begin(), exercises.end(), [](const auto& a, const auto& b) { return a.order < b.order; });
  return exercises;
}

fs::path find_exercise_dir(const fs::path& exercises_root, const std::string& id) {
  auto ids = list_exercises(exercises_root);
  if (std::find(ids.begin(), ids.end(), id) != ids.end()) return exercises_root / id;
  std::string message = "unknown exercise '" + id + "'";
  if (!ids.empty()) {
    auto closest = *std::min_element(ids.begin(), ids.end(), [&](const auto& a, const auto& b) {
      return edit_distance(id, a) < edit_distance(id, b);
    });
    message += "; did you mean '" + closest + "'? (./grade list shows them all)";
  }
  throw UsageError(message);
}

}  // namespace grader
