// The platforms' report formats, each checked against its published field
// list and limits: Exercism results.json v3, Gradescope results.json,
// PrairieLearn results.json and JUnit XML. A check that could not run is
// never reported as passed in any of them.
#include "report/formats.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <tinyxml2.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "base/errors.h"
#include "format_checks.h"

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
  // Invalid UTF-8 first: each byte grows to three when a JSON writer replaces it.
  report.program_stdout = std::string(300, '\xff') + std::string(2000, 'x') + "\x1b[2J\x01 <&> \xc3\xa9";
  report.total_seconds = 2.4;
  report.assess_focus_points(
      {{"head_split", "Split heads", "", {}}, {"scaling", "Scale", "", {}}, {"masking", "Mask", "", {}}});
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

// A full answer graded without a GPU: its GPU check skipped and outside the
// score, an informational measurement beside it (failed: it decides nothing).
GradeReport pass_without_gpu() {
  GradeReport report;
  report.exercise = "exercise_demo";
  report.verdict = Verdict::passed;
  report.summary = "Every check that runs without a GPU passed.";
  report.checks = {check("shapes", "head_split", CheckStatus::passed, 2),
                   check("gpu_execution", "head_split", CheckStatus::skipped),
                   check("bandwidth", "head_split", CheckStatus::failed, 0)};
  report.checks[1].needs_gpu = true;
  report.checks[2].informational = true;
  report.max_score = 2;
  report.assess_focus_points({{"head_split", "Split heads", "", {}}});
  return report;
}

// A CUDA kernel graded without a GPU: it compiled, nothing else could run.
GradeReport not_assessed() {
  GradeReport report;
  report.exercise = "exercise_demo";
  report.verdict = Verdict::not_assessed;
  report.summary = "Not assessed here: 1 check(s) need a GPU to run your code.";
  report.checks = {check("compiles", "launch", CheckStatus::passed),
                   check("rows", "launch", CheckStatus::skipped)};
  report.checks[1].needs_gpu = true;
  report.max_score = 0;
  report.assess_focus_points({{"launch", "Launch", "", {}}});
  return report;
}

Json parsed(const GradeReport& report, const std::string& format) {
  auto json = Json::parse(render(report, format));
  EXPECT_TRUE(json.is_object());
  return json;
}

// Each format against its field list (format_checks.h), then what this grade must say in it.
void expect_valid(const format_checks::Problems& problems, const std::string& format) {
  for (const auto& problem : problems) ADD_FAILURE() << format << ": " << problem;
}

// --output: where each value sends which format (one row per rule).
TEST(Formats, OutputTargets) {
  struct Row {
    std::string value, format_option;
    std::string format, file;  // empty format: a usage error
    bool took_format_option;
  };
  const std::vector<Row> rows = {
      {"html=r.html", "", "html", "r.html", false},           // FORMAT=FILE
      {"junit=out/report", "json", "junit", "out/report", false},  // FORMAT=FILE beats --format
      {"r.html", "", "html", "r.html", false},                // the extension's
      {"R.HTM", "", "html", "R.HTM", false},
      {"report.json", "", "json", "report.json", false},
      {"tests.xml", "", "junit", "tests.xml", false},
      {"notes.txt", "", "text", "notes.txt", false},
      {"r.html", "html", "html", "r.html", true},             // --format html --output r.html
      {"page", "gradescope", "gradescope", "page", true},     // --format names it
      {"results.json", "gradescope", "gradescope", "results.json", true},  // a JSON format in a .json file
      {"r.html", "json", "", "", false},                      // the name and --format disagree
      {"b.json", "html", "", "", false},
      {"report.xml", "junit", "junit", "report.xml", true},
      {"out/a=b.html", "", "html", "out/a=b.html", false},    // '=' inside a folder's name: part of the name
      {"html=a=b.html", "", "html", "a=b.html", false},
      {"xml=report.xml", "", "", "", false},                  // a word before '=' that is no format
      {"report", "", "", "", false},                          // nothing says the format
      {"r.pdf", "", "", "", false},
      {"html=", "", "", "", false},                           // no file
      {"", "", "", "", false},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE("--output '" + row.value + "' --format '" + row.format_option + "'");
    if (row.format.empty()) {
      EXPECT_THROW(output_target(row.value, row.format_option), UsageError);
      continue;
    }
    auto target = output_target(row.value, row.format_option);
    EXPECT_EQ(target.format, row.format);
    EXPECT_EQ(target.file, row.file);
    EXPECT_EQ(target.took_format_option, row.took_format_option);
  }
  EXPECT_FALSE(errors_on_stdout("html"));
  EXPECT_FALSE(errors_on_stdout("text"));
  for (const char* machine : {"json", "junit", "gradescope", "exercism", "prairielearn", "classroom"})
    EXPECT_TRUE(errors_on_stdout(machine)) << machine;
}

TEST(Formats, ExercismVersion3) {
  expect_valid(format_checks::exercism(render(failed_grade(), "exercism")), "exercism");
  auto json = parsed(failed_grade(), "exercism");
  EXPECT_EQ(json["status"], "fail");
  ASSERT_EQ(json["tests"].size(), 3u);
  EXPECT_EQ(json["tests"][0]["status"], "pass");
  EXPECT_EQ(json["tests"][1]["status"], "fail");
  EXPECT_EQ(json["tests"][2]["status"], "error") << "not assessed is never a pass";
  // The interface: a message on the tests that did not pass only, no
  // top-level message but for an error, no invented task ids; the one run's
  // output once (with the first test), and test_code that reproduces it.
  EXPECT_FALSE(json.contains("message"));
  EXPECT_FALSE(json["tests"][0].contains("message"));
  EXPECT_NE(json["tests"][1]["message"].get<std::string>().find("something about scale"), std::string::npos);
  for (const auto& test : json["tests"]) EXPECT_FALSE(test.contains("task_id"));
  EXPECT_GE(json["tests"][0]["output"].get<std::string>().size(), kExercismOutputLimit - 4) << "cut near the limit";
  EXPECT_FALSE(json["tests"][1].contains("output")) << "the same output on every test";
  EXPECT_EQ(json["tests"][1]["test_code"].get<std::string>().rfind("./grade exercise_demo --seed ", 0), 0u)
      << json["tests"][1]["test_code"];

  expect_valid(format_checks::exercism(render(compile_error(), "exercism")), "exercism");
  auto stopped = parsed(compile_error(), "exercism");
  EXPECT_EQ(stopped["status"], "error") << "no test could run";
  EXPECT_NE(stopped["message"].get<std::string>().find("expected ';'"), std::string::npos);
}

TEST(Formats, GradescopeVisibility) {
  auto report = failed_grade();
  report.visibility = "after_due_date";
  auto json = parsed(report, "gradescope");
  EXPECT_EQ(json["visibility"], "after_due_date");
  for (const auto& test : json["tests"]) EXPECT_EQ(test["visibility"], "after_due_date");
  expect_valid(format_checks::gradescope(render(report, "gradescope")), "gradescope");
  // A check's own (exercise.yaml `visibility:`) wins over the grade's.
  report.checks[1].visibility = "hidden";
  json = parsed(report, "gradescope");
  EXPECT_EQ(json["tests"][1]["visibility"], "hidden");
  EXPECT_EQ(json["tests"][0]["visibility"], "after_due_date");
}

TEST(Formats, GradescopeResults) {
  expect_valid(format_checks::gradescope(render(failed_grade(), "gradescope")), "gradescope");
  auto json = parsed(failed_grade(), "gradescope");
  EXPECT_DOUBLE_EQ(json["score"].get<double>(), 2);
  EXPECT_FALSE(json.contains("max_score")) << "not a field of Gradescope's results";
  double max = 0;
  for (const auto& test : json["tests"]) max += test["max_score"].get<double>();
  EXPECT_DOUBLE_EQ(max, 4);
  EXPECT_EQ(json["tests"][2]["status"], "failed") << "not assessed is never a pass";
  EXPECT_DOUBLE_EQ(json["tests"][2]["score"].get<double>(), 0);
  EXPECT_EQ(json["tests"][1]["tags"][0], "scaling");

  expect_valid(format_checks::gradescope(render(compile_error(), "gradescope")), "gradescope");
  auto stopped = parsed(compile_error(), "gradescope");
  EXPECT_DOUBLE_EQ(stopped["score"].get<double>(), 0);
}

TEST(Formats, PrairieLearnResults) {
  expect_valid(format_checks::prairielearn(render(failed_grade(), "prairielearn")), "prairielearn");
  auto json = parsed(failed_grade(), "prairielearn");
  EXPECT_EQ(json["gradable"], true);
  EXPECT_DOUBLE_EQ(json["score"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(json["tests"][2]["points"].get<double>(), 0);
  expect_valid(format_checks::prairielearn(render(compile_error(), "prairielearn")), "prairielearn");
  auto stopped = parsed(compile_error(), "prairielearn");
  EXPECT_EQ(stopped["gradable"], false) << "code that does not compile costs no attempt";
  EXPECT_DOUBLE_EQ(stopped["score"].get<double>(), 0);
}

TEST(Formats, JUnitXml) {
  auto report = failed_grade();
  report.checks[1].seconds = 0.25;  // the time its judging took
  format_checks::JUnitCounts counts;
  expect_valid(format_checks::junit(render(report, "junit"), &counts), "junit");
  EXPECT_EQ(counts.tests, 3);
  EXPECT_EQ(counts.failures, 1);
  EXPECT_EQ(counts.skipped, 1);
  EXPECT_EQ(counts.errors, 0);
  tinyxml2::XMLDocument doc;
  ASSERT_EQ(doc.Parse(render(report, "junit").c_str()), tinyxml2::XML_SUCCESS);
  auto* suite = doc.FirstChildElement("testsuites")->FirstChildElement("testsuite");
  EXPECT_STREQ(suite->Attribute("name"), "exercise_demo");
  EXPECT_NEAR(suite->DoubleAttribute("time"), 2.4, 1e-9);
  EXPECT_STREQ(suite->FirstChildElement("testcase")->Attribute("classname"), "head_split");
  EXPECT_NEAR(suite->FirstChildElement("testcase")->NextSiblingElement("testcase")->DoubleAttribute("time"), 0.25, 1e-9);

  // Forbidden code: its numerically passing checks do not pass.
  report.verdict = Verdict::forbidden;
  expect_valid(format_checks::junit(render(report, "junit"), &counts), "junit");
  EXPECT_EQ(counts.failures, 2);
  EXPECT_DOUBLE_EQ(report.score(), 0);

  expect_valid(format_checks::junit(render(compile_error(), "junit"), &counts), "junit");
  EXPECT_EQ(counts.errors, 1) << "no check ran: an error, not a pass";
}

// The first code point of `text` that XML 1.0 does not allow (its Char
// production, which strict readers such as expat enforce), as U+XXXX; "" if none.
std::string first_xml_illegal(const std::string& text) {
  for (size_t at = 0; at < text.size();) {
    const auto lead = static_cast<unsigned char>(text[at]);
    const size_t length = lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
    uint32_t c = length == 1 ? lead : length == 2 ? lead & 0x1f : length == 3 ? lead & 0x0f : lead & 0x07;
    for (size_t i = 1; i < length && at + i < text.size(); ++i) c = (c << 6) | (text[at + i] & 0x3f);
    const bool legal = c == 0x9 || c == 0xa || c == 0xd || (c >= 0x20 && c <= 0xd7ff) ||
                       (c >= 0xe000 && c <= 0xfffd) || (c >= 0x10000 && c <= 0x10ffff);
    if (!legal) return fmt::format("U+{:04X}", c);
    at += length;
  }
  return "";
}

// Learner text holding noncharacters (U+FFFE, U+FFFF: valid UTF-8, not XML)
// leaves a JUnit file every reader can parse.
TEST(Formats, JUnitHoldsOnlyXmlCharacters) {
  auto report = failed_grade();
  report.program_stdout = "before \xef\xbf\xbe \xef\xbf\xbf \xef\xb7\x90 after";
  report.checks[1].message = "your code threw: \xef\xbf\xbf";
  const auto xml = render(report, "junit");
  EXPECT_EQ(first_xml_illegal(xml), "") << xml;
  EXPECT_NE(xml.find("\\ufffe"), std::string::npos) << "the character is shown escaped, not dropped";
}

// The four formats agree with the grader's own JSON on verdict and score.
TEST(Formats, AgreeWithTheJsonReport) {
  for (auto report : {failed_grade(), compile_error(), pass_without_gpu(), not_assessed()}) {
    auto json = Json::parse(render(report, "json"));
    expect_valid(format_checks::classroom(render(report, "classroom")), "classroom");
    expect_valid(format_checks::agree(json, render(report, "exercism"), render(report, "gradescope"),
                                      render(report, "prairielearn"), render(report, "junit"),
                                      render(report, "classroom")),
                 verdict_name(report.verdict));
  }
}

// A pass without a GPU earns full marks in every format; its GPU check and
// its informational one are notes, never a failed test.
TEST(Formats, APassWithoutAGpuEarnsFullMarks) {
  const auto report = pass_without_gpu();
  EXPECT_DOUBLE_EQ(report.score(), report.max_score);
  auto gradescope = parsed(report, "gradescope");
  EXPECT_DOUBLE_EQ(gradescope["score"].get<double>(), 2);
  ASSERT_EQ(gradescope["tests"].size(), 1u);
  EXPECT_EQ(gradescope["tests"][0]["status"], "passed");
  EXPECT_NE(gradescope["output"].get<std::string>().find("gpu_execution (not assessed here, outside the score)"),
            std::string::npos);
  auto exercism = parsed(report, "exercism");
  EXPECT_EQ(exercism["status"], "pass");
  EXPECT_EQ(exercism["tests"].size(), 1u);
  EXPECT_DOUBLE_EQ(parsed(report, "prairielearn")["score"].get<double>(), 1.0);
  format_checks::JUnitCounts counts;
  expect_valid(format_checks::junit(render(report, "junit"), &counts), "junit");
  EXPECT_EQ(counts.failures + counts.errors, 0);
}

// Not assessed here: no score of no maximum, Exercism's error, PrairieLearn's
// ungradable with the reason, JUnit neither red nor green.
TEST(Formats, NotAssessedIsNeitherPassNorFail) {
  const auto report = not_assessed();
  EXPECT_DOUBLE_EQ(report.score(), 0);
  auto gradescope = parsed(report, "gradescope");
  EXPECT_DOUBLE_EQ(gradescope["score"].get<double>(), 0);
  EXPECT_TRUE(gradescope["tests"].empty());
  EXPECT_EQ(parsed(report, "exercism")["status"], "error");
  auto prairielearn = parsed(report, "prairielearn");
  EXPECT_FALSE(prairielearn["gradable"].get<bool>());
  EXPECT_EQ(prairielearn["format_errors"][0], report.summary);
  format_checks::JUnitCounts counts;
  expect_valid(format_checks::junit(render(report, "junit"), &counts), "junit");
  EXPECT_EQ(counts.failures + counts.errors, 0);
  EXPECT_EQ(counts.skipped, 1);
  EXPECT_EQ(exit_code_for(report.verdict), 4);
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

AttentionFigure drawn_figure() {
  AttentionFigure figure;
  figure.title = "probe with a padding mask";
  figure.input = "B=2 H=2 Nq=3 Nk=5, padding mask";
  figure.source = "the weights your function returned";
  figure.batch = 1;
  figure.head = 0;
  figure.reference = {{0.2, 0.3, 0.5, 0, 0}, {0.1, 0.6, 0.3, 0, 0}, {0.3, 0.3, 0.4, 0, 0}};
  figure.learner = figure.reference;
  figure.learner[0][3] = 0.25;  // a masked key leaks
  figure.learner[2][4] = std::nan("");
  figure.learner[1][0] += 1e-4;  // off by less than the two decimals show
  figure.masked_keys = {false, false, false, true, true};
  figure.max_difference = std::numeric_limits<double>::infinity();
  return figure;
}

TEST(Formats, HtmlIsSelfContainedAndLearnerTextStaysText) {
  auto report = failed_grade();
  const std::string attack = "</pre><script>alert(1)</script><img src=x onerror=alert(2)><a href='http://x'>";
  report.program_stdout += attack;
  report.program_stderr = attack;
  report.checks[1].evidence.push_back(attack);
  report.submission = "\"><script>alert(3)</script>.cpp";
  auto page = render(report, "html");
  expect_valid(format_checks::html(page), "failed grade");
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(page.find("\\x1b[2J"), std::string::npos) << "control characters must be shown escaped";
  for (auto* other : {"compile error", "grader error"}) {
    auto stopped = std::string(other) == "compile error" ? compile_error() : GradeReport{};
    expect_valid(format_checks::html(render(stopped, "html")), other);
  }
}

// PrairieLearn shows the drawn figures as images (an SVG of the three
// heatmaps each, well-formed and standalone); a figure with a note has none.
TEST(Formats, PrairieLearnShowsTheFiguresAsImages) {
  auto report = failed_grade();
  report.figures.push_back(drawn_figure());
  AttentionFigure noted;
  noted.note = "your code threw an error";
  report.figures.push_back(noted);
  const auto text = render(report, "prairielearn");
  expect_valid(format_checks::prairielearn(text), "prairielearn");
  auto json = Json::parse(text);
  ASSERT_EQ(json["images"].size(), 1u);
  const auto url = json["images"][0]["url"].get<std::string>();
  ASSERT_EQ(url.rfind("data:image/svg+xml;base64,", 0), 0u);
  const auto images = figure_images(report);
  ASSERT_EQ(images.size(), 1u);
  tinyxml2::XMLDocument svg;
  ASSERT_EQ(svg.Parse(images[0].svg.c_str()), tinyxml2::XML_SUCCESS) << images[0].svg.substr(0, 300);
  EXPECT_STREQ(svg.RootElement()->Name(), "svg");
  size_t cells = 0;
  for (size_t at = images[0].svg.find("class=\"cell\""); at != std::string::npos;
       at = images[0].svg.find("class=\"cell\"", at + 1))
    ++cells;
  EXPECT_EQ(cells, 3u * 15u);
  EXPECT_NE(images[0].svg.find("<style>"), std::string::npos) << "standalone: its own style";
}

TEST(Formats, HtmlDrawsEachFigureAsThreeHeatmapsOrANote) {
  auto report = failed_grade();
  report.figures.push_back(drawn_figure());
  AttentionFigure matching = drawn_figure();
  matching.learner = matching.reference;
  matching.max_difference = 0;
  report.figures.push_back(matching);
  AttentionFigure noted;
  noted.title = "probe without a mask";
  noted.note = "your code threw an error: <boom>";
  report.figures.push_back(noted);
  auto page = render(report, "html");
  format_checks::HtmlFigures counts;
  expect_valid(format_checks::html(page, &counts), "figures");
  EXPECT_EQ(counts.drawn, 2);
  EXPECT_EQ(counts.matching, 1);
  EXPECT_EQ(counts.noted, 1);
  size_t cells = 0;
  for (size_t at = page.find("class=\"cell\""); at != std::string::npos; at = page.find("class=\"cell\"", at + 1))
    ++cells;
  EXPECT_EQ(cells, 2u * 3u * 15u);
  EXPECT_NE(page.find(">NaN<"), std::string::npos) << "a NaN weight is written as such";
  EXPECT_NE(page.find("Largest difference not finite"), std::string::npos);
  EXPECT_NE(page.find(">+0.00<"), std::string::npos) << "a difference that rounds to 0 keeps its sign";
  EXPECT_NE(page.find("k3✕"), std::string::npos) << "masked keys are marked";
  EXPECT_NE(page.find("no difference"), std::string::npos);
  EXPECT_NE(page.find("&lt;boom&gt;"), std::string::npos);
  // Weights are white at 0 and the darkest blue at 1.
  EXPECT_NE(page.find("fill=\"#ffffff\""), std::string::npos);
}

}  // namespace
}  // namespace grader
