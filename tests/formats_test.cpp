// The platforms' report formats, each checked against its published field
// list and limits: Exercism results.json v3, Gradescope results.json,
// PrairieLearn results.json and JUnit XML. A check that could not run is
// never reported as passed in any of them.
#include "formats.h"

#include <gtest/gtest.h>
#include <tinyxml2.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

namespace grader {
namespace {

using Json = nlohmann::json;

CheckResult check(const std::string& id, const std::string& focus, CheckStatus status, double weight = 1) {
  CheckResult result;
  result.id = id;
  result.focus_point = focus;
  result.status = status;
  result.title = "title of " + id;
  result.message = status == CheckStatus::passed ? "fine" : "something about " + id;
  result.evidence = {"input: B=2", "max abs error 0.5"};
  result.weight = weight;
  return result;
}

// A failed grade: one check passed (weight 2), one failed, one not assessed;
// the program printed more than Exercism takes, with control characters.
GradeReport failed_grade() {
  GradeReport report;
  report.exercise = "exercise_demo";
  report.verdict = Verdict::failed;
  report.summary = "1 focus point(s) missed";
  report.checks = {check("shapes", "head_split", CheckStatus::passed, 2),
                   check("scale", "scaling", CheckStatus::failed), check("mask", "masking", CheckStatus::skipped)};
  report.checks[1].mistake = "no_scaling";
  report.max_score = 4;
  report.program_stdout = std::string(2000, 'x') + "\x1b[2J\x01 <&> \xc3\xa9";
  report.total_seconds = 2.4;
  report.assess_focus_points({{"head_split", "Split heads", ""}, {"scaling", "Scale", ""}, {"masking", "Mask", ""}});
  return report;
}

GradeReport compile_error() {
  GradeReport report;
  report.exercise = "exercise_demo";
  report.verdict = Verdict::compile_error;
  report.summary = "Your code does not compile.";
  report.compiler_output = "sdpa.cpp:3: error: expected ';'";
  report.max_score = 4;
  return report;
}

Json parsed(const GradeReport& report, const std::string& format) {
  auto json = Json::parse(render(report, format));
  EXPECT_TRUE(json.is_object());
  return json;
}

void expect_only_keys(const Json& object, const std::set<std::string>& allowed, const std::string& where) {
  for (const auto& [key, value] : object.items()) EXPECT_TRUE(allowed.count(key)) << where << ": unknown key " << key;
}

TEST(Formats, ExercismVersion3) {
  auto json = parsed(failed_grade(), "exercism");
  expect_only_keys(json, {"version", "status", "message", "tests"}, "top level");
  EXPECT_EQ(json["version"], 3);
  EXPECT_EQ(json["status"], "fail");
  ASSERT_EQ(json["tests"].size(), 3u);
  std::set<std::string> names;
  for (const auto& test : json["tests"]) {
    expect_only_keys(test, {"name", "status", "message", "output", "test_code", "task_id"}, "test");
    EXPECT_TRUE(names.insert(test["name"]).second) << "test names must be unique";
    EXPECT_TRUE(test["status"] == "pass" || test["status"] == "fail" || test["status"] == "error");
    EXPECT_LE(test["output"].get<std::string>().size(), kExercismOutputLimit);
    EXPECT_TRUE(test["task_id"].is_number_integer() && test["task_id"] >= 1);
    EXPECT_TRUE(test["test_code"].is_string());
  }
  EXPECT_EQ(json["tests"][0]["status"], "pass");
  EXPECT_EQ(json["tests"][1]["status"], "fail");
  EXPECT_EQ(json["tests"][2]["status"], "error") << "not assessed is never a pass";
  EXPECT_EQ(json["tests"][1]["task_id"], 2);  // the focus point's place

  auto stopped = parsed(compile_error(), "exercism");
  EXPECT_EQ(stopped["status"], "error") << "no test could run";
  EXPECT_NE(stopped["message"].get<std::string>().find("expected ';'"), std::string::npos);
}

TEST(Formats, GradescopeResults) {
  auto json = parsed(failed_grade(), "gradescope");
  expect_only_keys(json,
                   {"score", "max_score", "execution_time", "output", "visibility", "stdout_visibility", "tests",
                    "extra_data", "output_format", "leaderboard"},
                   "top level");
  EXPECT_DOUBLE_EQ(json["score"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(json["max_score"].get<double>(), 4);
  EXPECT_TRUE(json["execution_time"].is_number());
  const std::set<std::string> visibility = {"hidden", "after_due_date", "after_published", "visible"};
  EXPECT_TRUE(visibility.count(json["visibility"]));
  EXPECT_TRUE(visibility.count(json["stdout_visibility"]));
  double sum = 0;
  for (const auto& test : json["tests"]) {
    expect_only_keys(test,
                     {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format",
                      "tags", "visibility", "extra_data"},
                     "test");
    EXPECT_TRUE(test["status"] == "passed" || test["status"] == "failed");
    EXPECT_LE(test["score"].get<double>(), test["max_score"].get<double>());
    EXPECT_TRUE(test["tags"].is_array() && !test["tags"].empty());
    EXPECT_TRUE(visibility.count(test["visibility"]));
    sum += test["score"].get<double>();
  }
  EXPECT_DOUBLE_EQ(sum, json["score"].get<double>());
  EXPECT_EQ(json["tests"][2]["status"], "failed") << "not assessed is never a pass";
  EXPECT_DOUBLE_EQ(json["tests"][2]["score"].get<double>(), 0);
  EXPECT_EQ(json["tests"][1]["tags"][0], "scaling");

  auto stopped = parsed(compile_error(), "gradescope");
  EXPECT_DOUBLE_EQ(stopped["score"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(stopped["max_score"].get<double>(), 4) << "the same maximum for every submission";
}

TEST(Formats, PrairieLearnResults) {
  auto json = parsed(failed_grade(), "prairielearn");
  expect_only_keys(json,
                   {"gradable", "score", "message", "output", "tests", "format_errors", "images", "partial_scores"},
                   "top level");
  EXPECT_EQ(json["gradable"], true);
  EXPECT_DOUBLE_EQ(json["score"].get<double>(), 0.5);
  for (const auto& test : json["tests"]) {
    expect_only_keys(test, {"name", "description", "points", "max_points", "message", "output", "images"}, "test");
    EXPECT_LE(test["points"].get<double>(), test["max_points"].get<double>());
  }
  EXPECT_DOUBLE_EQ(json["tests"][2]["points"].get<double>(), 0);
  auto stopped = parsed(compile_error(), "prairielearn");
  EXPECT_EQ(stopped["gradable"], false) << "code that does not compile costs no attempt";
  EXPECT_DOUBLE_EQ(stopped["score"].get<double>(), 0);
}

TEST(Formats, JUnitXml) {
  auto report = failed_grade();
  tinyxml2::XMLDocument doc;
  ASSERT_EQ(doc.Parse(render(report, "junit").c_str()), tinyxml2::XML_SUCCESS) << "well-formed XML, control characters "
                                                                                  "of learner output included";
  auto* suites = doc.FirstChildElement("testsuites");
  ASSERT_NE(suites, nullptr);
  auto* suite = suites->FirstChildElement("testsuite");
  ASSERT_NE(suite, nullptr);
  EXPECT_STREQ(suite->Attribute("name"), "exercise_demo");
  int testcases = 0, failures = 0, skipped = 0;
  std::set<std::string> names;
  for (auto* testcase = suite->FirstChildElement("testcase"); testcase;
       testcase = testcase->NextSiblingElement("testcase")) {
    ++testcases;
    EXPECT_TRUE(names.insert(testcase->Attribute("name")).second) << "unique names";
    EXPECT_NE(testcase->Attribute("classname"), nullptr);
    double time = -1;
    EXPECT_EQ(testcase->QueryDoubleAttribute("time", &time), tinyxml2::XML_SUCCESS);
    EXPECT_GE(time, 0);
    failures += testcase->FirstChildElement("failure") != nullptr;
    skipped += testcase->FirstChildElement("skipped") != nullptr;
  }
  EXPECT_EQ(testcases, 3);
  EXPECT_EQ(failures, 1);
  EXPECT_EQ(skipped, 1);
  EXPECT_EQ(suite->IntAttribute("tests"), testcases);
  EXPECT_EQ(suite->IntAttribute("failures"), failures);
  EXPECT_EQ(suite->IntAttribute("skipped"), skipped);
  EXPECT_EQ(suite->IntAttribute("errors"), 0);
  EXPECT_NEAR(suite->DoubleAttribute("time"), 2.4, 1e-9);

  // Forbidden code: its numerically passing checks do not pass.
  report.verdict = Verdict::forbidden;
  ASSERT_EQ(doc.Parse(render(report, "junit").c_str()), tinyxml2::XML_SUCCESS);
  EXPECT_EQ(doc.FirstChildElement("testsuites")->FirstChildElement("testsuite")->IntAttribute("failures"), 2);
  EXPECT_DOUBLE_EQ(report.score(), 0);

  ASSERT_EQ(doc.Parse(render(compile_error(), "junit").c_str()), tinyxml2::XML_SUCCESS);
  auto* error = doc.FirstChildElement("testsuites")->FirstChildElement("testsuite")->FirstChildElement("testcase");
  ASSERT_NE(error, nullptr);
  EXPECT_NE(error->FirstChildElement("error"), nullptr) << "no check ran: an error, not a pass";
}

TEST(Formats, ScoreIsTheWeightOfPassedChecks) {
  auto report = failed_grade();
  EXPECT_DOUBLE_EQ(report.score(), 2);
  report.verdict = Verdict::timeout;
  EXPECT_DOUBLE_EQ(report.score(), 0);
}

TEST(Formats, ErrorsInEveryFormat) {
  for (const auto& format : report_formats()) {
    if (format == "text") continue;
    auto text = render_error("exercise_demo", "grader_error", "no build folder", format);
    EXPECT_NE(text.find("no build folder"), std::string::npos) << format;
  }
}

}  // namespace
}  // namespace grader
