#include "exercise/questions.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "checks/kit/kit.h"
#include "base/errors.h"

namespace grader {
namespace fs = std::filesystem;

namespace {

std::string trim(std::string text) {
  text.erase(0, text.find_first_not_of(" \t\r\n"));
  text.erase(text.find_last_not_of(" \t\r\n") + 1);
  return text;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// The integers of a typed shape: "(2, 8, 10, 64)", "[2,8,10,64]", "2 8 10 64".
std::optional<std::vector<int64_t>> parse_shape(const std::string& given) {
  std::vector<int64_t> out;
  static const std::regex allowed(R"(^[\s\(\)\[\]\{\},x0-9]*$)");
  if (!std::regex_match(given, allowed)) return std::nullopt;
  static const std::regex number(R"([0-9]+)");
  for (std::sregex_iterator it(given.begin(), given.end(), number), end; it != end; ++it) {
    out.push_back(std::stoll(it->str()));
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::optional<double> parse_number(const std::string& given) {
  try {
    size_t used = 0;
    double value = std::stod(given, &used);
    if (trim(given.substr(used)).empty() && std::isfinite(value)) return value;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// A number as a learner types it: a literal, or an expression over numbers
// (1/0.8, 5/4, 1/sqrt(64), 2^-3): the grader evaluates it.
std::optional<double> number_typed(const std::string& given) {
  if (given.empty()) return std::nullopt;
  try {
    const double value = kit::evaluate(given, {});
    if (std::isfinite(value)) return value;
  } catch (const ConfigError&) {
  }
  return std::nullopt;
}

// How far a typed answer may be from the right one: a whole number exactly
// (up to the rounding of an expression that gives it), others to the two or
// three digits a person types (half a percent). The prompt says so.
double number_tolerance(double number) {
  if (number == std::round(number)) return 1e-9 * std::max(1.0, std::abs(number));
  return std::max(0.005, 0.005 * std::abs(number));
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + ")";
}

std::string number_text(double value) {
  if (value == std::round(value) && std::abs(value) < 1e15) return fmt::format("{}", static_cast<int64_t>(value));
  return fmt::format("{:.4g}", value);
}

kit::Dims dims_of(const YAML::Node& node) {
  kit::Dims dims;
  if (!node) return dims;
  for (const auto& entry : node) dims[entry.first.as<std::string>()] = entry.second.as<int64_t>();
  return dims;
}

Question parse_question(const YAML::Node& node, const Exercise& exercise, const fs::path& file,
                        std::set<std::string>& ids) {
  Question q;
  auto error_of = [&](const std::string& what) { return ConfigError(file.string() + ": question '" + q.id + "': " + what); };
  auto fail = [&](const std::string& what) { throw error_of(what); };
  auto text = [&](const char* key) {
    if (!node[key] || !node[key].IsScalar() || trim(node[key].Scalar()).empty()) fail(std::string("needs '") + key + "'");
    return trim(node[key].Scalar());
  };
  if (!node.IsMap()) throw ConfigError(file.string() + ": each question must be a mapping");
  q.id = node["id"] && node["id"].IsScalar() ? node["id"].Scalar() : "";
  if (q.id.empty()) throw ConfigError(file.string() + ": a question has no id");
  if (!ids.insert(q.id).second) fail("the id is used twice");
  q.focus_point = text("focus_point");
  const auto& points = exercise.focus_points;
  if (std::none_of(points.begin(), points.end(), [&](const auto& p) { return p.id == q.focus_point; })) {
    fail("focus point '" + q.focus_point + "' is not one of " + exercise.id + "'s");
  }
  q.ask = text("ask");
  q.explain = text("explain");
  // An expression over dimensions the grader cannot evaluate is this question's fault.
  auto computed = [&](const auto& compute) {
    try {
      return compute();
    } catch (const ConfigError& error) {
      throw error_of(error.what());
    }
  };
  int kinds = 0;
  try {
    if (node["choices"]) {
      ++kinds;
      q.kind = Question::Kind::choice;
      for (const auto& choice : node["choices"]) q.choices.push_back(trim(choice.as<std::string>()));
      if (q.choices.size() < 3 || q.choices.size() > 6) fail("a choice question has 3 to 6 choices");
      std::set<std::string> distinct;
      for (const auto& c : q.choices) distinct.insert(lower(c));
      if (distinct.size() != q.choices.size()) fail("two choices are the same: exactly one may be right");
      const auto letter = lower(text("answer"));
      if (letter.size() != 1 || letter[0] < 'a' || letter[0] >= 'a' + static_cast<char>(q.choices.size()))
        fail("answer must be the letter of one of the choices");
      q.answer = static_cast<size_t>(letter[0] - 'a');
    }
    if (auto number = node["number"]) {
      ++kinds;
      q.kind = Question::Kind::number;
      if (number["softmax"]) {  // the weight of one entry of a softmax: computed, not typed
        std::vector<double> scores = number["softmax"].as<std::vector<double>>();
        auto index = number["index"].as<size_t>();
        if (index >= scores.size()) fail("softmax index outside the scores");
        q.number = at::softmax(at::tensor(scores, at::kDouble), 0)[static_cast<int64_t>(index)].item<double>();
      } else {
        if (!number["expression"]) fail("number needs an expression (or softmax and index)");
        q.number = computed([&] { return kit::evaluate(number["expression"].as<std::string>(), dims_of(number["dims"])); });
        if (number["sqrt"] && number["sqrt"].as<bool>()) q.number = std::sqrt(q.number);
      }
    }
    if (auto shape = node["shape"]) {
      ++kinds;
      q.kind = Question::Kind::shape;
      const auto dims = dims_of(shape["dims"]);
      for (const auto& expression : shape["expressions"]) {
        q.shape.push_back(computed([&] { return kit::evaluate_dim(expression.as<std::string>(), dims); }));
      }
      if (q.shape.empty()) fail("shape needs expressions");
    }
    if (node["listing"]) {
      ++kinds;
      q.kind = Question::Kind::line;
      std::istringstream lines(node["listing"].as<std::string>());
      for (std::string line; std::getline(lines, line);) q.listing.push_back(line);
      q.answer = node["line"] ? node["line"].as<size_t>() : 0;
      if (q.listing.size() < 3) fail("a listing has at least 3 lines");
      if (q.answer < 1 || q.answer > q.listing.size()) fail("line must be a line of the listing (1-based)");
    }
  } catch (const YAML::Exception& error) {
    fail(std::string("malformed: ") + error.what());
  }
  if (kinds != 1) fail("needs exactly one kind of answer: choices, number, shape or listing");
  return q;
}

}  // namespace

std::string Question::prompt() const {
  std::string text = ask + "\n";
  switch (kind) {
    case Kind::choice:
      for (size_t i = 0; i < choices.size(); ++i) text += fmt::format("  {}) {}\n", static_cast<char>('a' + i), choices[i]);
      text += "Your answer (a letter): ";
      break;
    case Kind::number:
      text += number == std::round(number)
                  ? "Your answer (a whole number, or an expression such as 64/8): "
                  : "Your answer (a number to 3 digits, or an expression such as 1/0.8 or 1/sqrt(8)): ";
      break;
    case Kind::shape:
      text += "Your answer (a shape, e.g. (2, 3, 4)): ";
      break;
    case Kind::line:
      for (size_t i = 0; i < listing.size(); ++i) text += fmt::format("  {} | {}\n", i + 1, listing[i]);
      text += "Your answer (a line number): ";
      break;
  }
  return text;
}

bool Question::accepts(const std::string& typed) const {
  auto given = lower(trim(typed));
  switch (kind) {
    case Kind::choice: {
      if (given.size() == 2 && given[1] == ')') given.pop_back();  // "b)" as shown
      return given.size() == 1 && given[0] >= 'a' && static_cast<size_t>(given[0] - 'a') == answer;
    }
    case Kind::number: {
      auto value = number_typed(given);
      if (!value) return false;
      return std::abs(*value - number) <= number_tolerance(number);
    }
    case Kind::shape: {
      auto value = parse_shape(given);
      return value && *value == shape;
    }
    case Kind::line: {
      auto value = parse_number(given);
      return value && *value == static_cast<double>(answer);
    }
  }
  return false;
}

std::string Question::right_answer() const {
  switch (kind) {
    case Kind::choice:
      return fmt::format("{}) {}", static_cast<char>('a' + answer), choices[answer]);
    case Kind::number:
      return number_text(number);
    case Kind::shape:
      return shape_text(shape);
    case Kind::line:
      return fmt::format("line {}: {}", answer, trim(listing[answer - 1]));
  }
  return "";
}

std::vector<Question> load_questions(const Exercise& exercise) {
  auto questions_of = [](const fs::path& file) {
    YAML::Node root;
    try {
      root = YAML::LoadFile(file.string());
    } catch (const YAML::Exception& error) {
      throw ConfigError(file.string() + ": " + error.what());
    }
    if (!root["questions"] || !root["questions"].IsSequence())
      throw ConfigError(file.string() + ": 'questions' must be a list");
    return root["questions"];
  };
  std::vector<Question> bank;
  std::set<std::string> ids;
  const auto file = exercise.dir / kQuestionsFile;
  if (fs::exists(file)) {
    for (const auto& node : questions_of(file)) bank.push_back(parse_question(node, exercise, file, ids));
  }
  // The questions on shared focus points (exercises/shared.yaml) this exercise has.
  std::set<std::string> shared;
  for (const auto& point : exercise.focus_points) {
    if (point.shared) shared.insert(point.id);
  }
  if (!shared.empty()) {
    const auto shared_file = exercise.dir.parent_path() / "shared.yaml";
    for (const auto& node : questions_of(shared_file)) {
      if (node.IsMap() && node["focus_point"] && shared.count(node["focus_point"].as<std::string>()))
        bank.push_back(parse_question(node, exercise, shared_file, ids));
    }
  }
  return bank;
}

std::vector<const Question*> select_follow_ups(const std::vector<Question>& bank, const GradeReport& report,
                                               uint64_t seed, size_t per_missed, size_t met_sample) {
  std::mt19937_64 random(seed);
  auto of_point = [&](const std::string& id) {
    std::vector<const Question*> found;
    for (const auto& q : bank) {
      if (q.focus_point == id) found.push_back(&q);
    }
    std::shuffle(found.begin(), found.end(), random);
    return found;
  };
  std::vector<const Question*> chosen;
  std::vector<const Question*> met;
  const bool assessed = std::any_of(report.focus_points.begin(), report.focus_points.end(),
                                    [](const auto& f) { return f.status != FocusStatus::not_assessed; });
  for (const auto& focus : report.focus_points) {
    auto questions = of_point(focus.point.id);
    if (focus.status == FocusStatus::missed) {
      questions.resize(std::min(questions.size(), per_missed));
      chosen.insert(chosen.end(), questions.begin(), questions.end());
    } else if ((focus.status == FocusStatus::met || !assessed) && !questions.empty()) {
      met.push_back(questions.front());  // one per point, then a sample of those
    }
  }
  if (!assessed) met_sample += per_missed;  // nothing measured: a wider sample
  std::shuffle(met.begin(), met.end(), random);
  met.resize(std::min(met.size(), met_sample));
  chosen.insert(chosen.end(), met.begin(), met.end());
  return chosen;
}

}  // namespace grader
