// The isolation twins' rule (where a difference lies, from which twins match)
// as a table, the neutral values, and exercise.yaml's `isolate:` refusals.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "checks/kit/isolation.h"
#include "base/errors.h"
#include "exercise/exercise.h"

namespace grader::kit {
namespace {

constexpr auto M = TwinMatch::matches;
constexpr auto D = TwinMatch::differs;
constexpr auto U = TwinMatch::unknown;
using Where = Placement::Where;

struct Row {
  const char* name;
  TwinMatch every_off;
  std::vector<PartOutcome> parts;
  Where where;
  std::string part;
  bool inside;
};

TEST(Isolation, PlaceDifferenceTable) {
  const std::vector<Row> table = {
      {"rest still differs", D, {{"a", D, D}, {"b", D, D}}, Where::rest, "", false},
      {"rest decides before the parts are read", D, {{"a", U, U}}, Where::rest, "", false},
      {"every-off twin not judged", U, {{"a", D, D}}, Where::unknown, "", false},
      {"no parts", M, {}, Where::unknown, "", false},
      {"a part alone not judged", M, {{"a", U, U}, {"b", D, D}}, Where::unknown, "", false},
      {"one part, blind differs: inside", M, {{"a", D, D}}, Where::part, "a", true},
      {"one part, blind matches: what it is given", M, {{"a", D, M}}, Where::part, "a", false},
      {"one part, no blind settings", M, {{"a", D, U}}, Where::part, "a", false},
      {"second of two", M, {{"a", M, M}, {"b", D, D}}, Where::part, "b", true},
      {"second of two, fed the wrong tensor", M, {{"a", M, M}, {"b", D, M}}, Where::part, "b", false},
      {"each alone right, together wrong", M, {{"a", M, M}, {"b", M, M}}, Where::combination, "", false},
      {"both alone wrong", M, {{"a", D, D}, {"b", D, M}}, Where::several, "", false},
  };
  for (const auto& row : table) {
    const auto placed = place_difference(row.every_off, row.parts);
    EXPECT_EQ(placed.where, row.where) << row.name;
    EXPECT_EQ(placed.part, row.part) << row.name;
    EXPECT_EQ(placed.inside, row.inside) << row.name;
  }
  EXPECT_EQ(place_difference(M, {{"a", D, D}, {"b", D, M}}).parts, (std::vector<std::string>{"a", "b"}));
}

TEST(Isolation, NeutralValues) {
  const auto like = at::randn({3, 2}, at::kDouble);
  EXPECT_TRUE(neutral_value("zero", like).equal(at::zeros({3, 2}, at::kDouble)));
  EXPECT_TRUE(neutral_value("one", like).equal(at::ones({3, 2}, at::kDouble)));
  // A non-square weight's identity is its rectangle: the first features pass through.
  const auto eye = neutral_value("identity", like);
  EXPECT_TRUE(eye.equal(at::eye(3, 2, at::kDouble)));
  EXPECT_EQ(eye.scalar_type(), at::kDouble);
  EXPECT_THROW(neutral_value("identity", at::randn({4})), ConfigError);
  EXPECT_THROW(neutral_value("half", like), ConfigError);
}

namespace fs = std::filesystem;

class IsolateSection : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("grader-isolate-" + std::to_string(::getpid())) / "exercise_x";
    fs::create_directories(dir_);
    std::ofstream(dir_ / "x.cpp") << "";
    std::ofstream(dir_ / "x.h") << "";
  }
  void TearDown() override { fs::remove_all(dir_.parent_path()); }
  Exercise load(const std::string& isolate) {
    std::ofstream(dir_ / "exercise.yaml")
        << "id: exercise_x\ntitle: X\nlearner_files: [x.cpp]\ninterface: x.h\n"
           "tolerances: {float32: {rtol: 1e-4, atol: 1e-5}, float64: {rtol: 1e-7, atol: 1e-9}}\n"
           "focus_points:\n  - {id: a, title: A, explanation: why}\n"
           "checks:\n  - {id: c, focus_point: a, title: C}\n"
           "signature:\n  inputs: {x: [B, D]}\n  outputs: {y: [B, D]}\n"
           "  parameters: {w.weight: [D, D], w.bias: [D], \"layers.{L}.v\": [D, D]}\n"
        << isolate;
    return load_exercise(dir_);
  }
  std::string error(const std::string& isolate) {
    try {
      load(isolate);
    } catch (const ConfigError& error) {
      return error.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(IsolateSection, ReadsParts) {
  auto exercise = load(
      "isolate:\n  rest: the rest\n  parts:\n"
      "    - {id: w, says: the layer, off: {w.weight: identity, w.bias: zero}, blind: {w.weight: zero}, focus_point: a}\n"
      "    - {id: v, says: the layers' v, off: {\"layers.{L}.v\": zero}}\n");
  ASSERT_EQ(exercise.isolation.parts.size(), 2u);
  EXPECT_EQ(exercise.isolation.rest, "the rest");
  EXPECT_EQ(exercise.isolation.parts[0].off.size(), 2u);
  EXPECT_EQ(exercise.isolation.parts[0].focus_point, "a");
  EXPECT_TRUE(exercise.isolation.parts[1].blind.empty());
}

TEST_F(IsolateSection, RefusesWhatItCannotDo) {
  const std::string head = "isolate:\n  rest: r\n  parts:\n";
  const std::vector<std::pair<std::string, std::string>> table = {
      {head + "    - {id: w, says: s, off: {nope.weight: zero}}\n", "no signature parameter"},
      {head + "    - {id: w, says: s, off: {w.weight: half}}\n", "zero, one or identity"},
      {head + "    - {id: w, says: s}\n", "needs 'off'"},
      {head + "    - {id: w, says: s, off: {w.bias: identity}}\n", "no identity"},
      {head + "    - {id: w, says: s, off: {w.weight: zero}, focus_point: a}\n", "no 'blind'"},
      {head + "    - {id: w, says: s, off: {w.weight: zero}, blind: {w.weight: zero}, focus_point: b}\n",
       "unknown focus point"},
      {head + "    - {id: w, says: s, off: {w.weight: zero}, colour: red}\n", "unknown 'colour'"},
      {head + "    - {id: w, says: s, off: {w.weight: zero}}\n    - {id: w, says: t, off: {w.bias: zero}}\n",
       "declared twice"},
      {"isolate:\n  rest: r\n  parts: []\n", "non-empty list"},
      {"isolate:\n  parts: []\n", "'rest'"},
      {"isolate: [1]\n", "must be a mapping"},
  };
  for (const auto& [yaml, words] : table) {
    const auto said = error(yaml);
    EXPECT_NE(said.find(words), std::string::npos) << yaml << "\nsaid: " << said;
  }
}

}  // namespace
}  // namespace grader::kit
