// The grading platforms' published field lists and limits, as checks on a
// rendered report: each returns what is wrong (empty: valid). Used on made-up
// reports (formats_test.cpp) and on every corpus grade (corpus_test.cpp), so
// learner output of every kind (control characters, invalid UTF-8, huge
// messages) goes through them.
//
//   Exercism      exercism.org/docs/building/tooling/test-runners/interface (results.json, version 3)
//   Gradescope    gradescope.com/help#help-center-item-autograder-specifications (results.json)
//   PrairieLearn  prairielearn.readthedocs.io/en/latest/externalGrading/ (results.json)
//   JUnit         the XML of Ant's JUnit task, as GitLab and GitHub reporters read it
//   HTML          the learner's page: well-formed (it is written as XHTML-compatible
//                 HTML, so an XML parser reads it), self-contained, and every
//                 figure whole: three heatmaps of one size, or a note
#pragma once

#include <tinyxml2.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace format_checks {

using Json = nlohmann::json;
using Problems = std::vector<std::string>;

inline void only_keys(const Json& object, const std::set<std::string>& allowed, const std::string& where,
                      Problems& out) {
  for (const auto& item : object.items()) {
    if (!allowed.count(item.key())) out.push_back(where + ": field '" + item.key() + "' is not in the format");
  }
}

inline Json parse(const std::string& text, Problems& out) {
  auto json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) out.push_back("not a JSON object");
  return json;
}

inline Problems exercism(const std::string& text) {
  Problems out;
  auto json = parse(text, out);
  if (!out.empty()) return out;
  only_keys(json, {"version", "status", "message", "tests"}, "top level", out);
  if (json.value("version", 0) != 3) out.push_back("version must be 3");
  if (text.size() > 500 * 1000) out.push_back("over Exercism's 500 KB of results");
  const std::set<std::string> statuses = {"pass", "fail", "error"};
  if (!statuses.count(json.value("status", ""))) out.push_back("status must be pass, fail or error");
  if (json.value("status", "") == "error" && !json.value("message", Json()).is_string()) {
    out.push_back("an error needs a message");
  }
  if (json.value("status", "") != "error" && json.contains("message")) out.push_back("a message only with an error");
  if (!json["tests"].is_array()) return out.push_back("tests must be an array"), out;
  std::set<std::string> names;
  bool all_pass = true;
  for (const auto& test : json["tests"]) {
    only_keys(test, {"name", "status", "message", "output", "test_code", "task_id"}, "test", out);
    if (!test.value("name", Json()).is_string()) out.push_back("a test without a name");
    if (!names.insert(test.value("name", "")).second) out.push_back("duplicate test name " + test.value("name", ""));
    if (!statuses.count(test.value("status", ""))) out.push_back("test status must be pass, fail or error");
    all_pass &= test.value("status", "") == "pass";
    if (test.contains("output") && test["output"].get<std::string>().size() > 500) {
      out.push_back("test output over 500 characters");
    }
    if (!test.value("test_code", Json()).is_string()) out.push_back("test_code must be a string");
    if (test.value("status", "") == "pass" && test.contains("message")) out.push_back("a passing test has no message");
    if (test.contains("task_id") && !(test["task_id"].is_number_integer() && test["task_id"] >= 1)) {
      out.push_back("task_id must be a positive integer");
    }
  }
  if ((json["status"] == "pass") != (all_pass && !json["tests"].empty() && json["status"] != "error")) {
    out.push_back("the status must be pass exactly when every test passed");
  }
  return out;
}

inline Problems gradescope(const std::string& text) {
  Problems out;
  auto json = parse(text, out);
  if (!out.empty()) return out;
  only_keys(json,
            {"score", "execution_time", "output", "output_format", "test_output_format",
             "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"},
            "top level", out);
  const std::set<std::string> visibility = {"hidden", "after_due_date", "after_published", "visible"};
  if (!json["score"].is_number()) out.push_back("score must be a number");
  if (!visibility.count(json.value("visibility", "")) || !visibility.count(json.value("stdout_visibility", ""))) {
    out.push_back("visibility and stdout_visibility must be one of Gradescope's four");
  }
  if (!json["execution_time"].is_number()) out.push_back("execution_time must be a number");
  double sum = 0;
  for (const auto& test : json["tests"]) {
    only_keys(test,
              {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format", "tags",
               "visibility", "extra_data"},
              "test", out);
    const auto status = test.value("status", "");
    if (status != "passed" && status != "failed") out.push_back("test status must be passed or failed");
    if (test.value("score", 0.0) > test.value("max_score", 0.0) + 1e-9) out.push_back("a test over its max_score");
    if (status == "passed" && test.value("score", 0.0) < test.value("max_score", 0.0)) {
      out.push_back("a passed test without its points");
    }
    if (!test["tags"].is_array() || test["tags"].empty()) out.push_back("tags must list the focus points");
    if (!visibility.count(test.value("visibility", ""))) out.push_back("test visibility");
    sum += test.value("score", 0.0);
  }
  if (json["score"].is_number() && std::abs(sum - json["score"].get<double>()) > 1e-9) {
    out.push_back("score must be the sum of the tests' scores");
  }
  return out;
}

inline Problems prairielearn(const std::string& text) {
  Problems out;
  auto json = parse(text, out);
  if (!out.empty()) return out;
  only_keys(json, {"gradable", "score", "message", "output", "tests", "format_errors", "images", "partial_scores"},
            "top level", out);
  if (!json["gradable"].is_boolean()) out.push_back("gradable must be a boolean");
  if (!json["score"].is_number() || json["score"] < 0 || json["score"] > 1) out.push_back("score must be in [0, 1]");
  if (text.size() > 1000 * 1000) out.push_back("over PrairieLearn's 1 MB of results");
  if (!json.value("gradable", true) && !json["format_errors"].is_array()) out.push_back("not gradable without format_errors");
  for (const auto& image : json.value("images", Json::array())) {
    only_keys(image, {"label", "url"}, "image", out);
    if (!image.value("url", Json()).is_string() || image["url"].get<std::string>().rfind("data:image/", 0) != 0)
      out.push_back("an image's url must be a data:image/ URI");
  }
  for (const auto& test : json["tests"]) {
    only_keys(test, {"name", "description", "points", "max_points", "message", "output", "images"}, "test", out);
    if (!test["name"].is_string()) out.push_back("a test without a name");
    if (test.value("points", 0.0) > test.value("max_points", 0.0) + 1e-9) out.push_back("a test over its max_points");
  }
  return out;
}

// GitHub Classroom's grading reporter (classroom-resources/autograding-grading-reporter):
// a runner's result has status pass|fail|error, max_score, and tests, each
// with name, status and score; the points are the sum of the scores.
inline Problems classroom(const std::string& text) {
  Problems out;
  auto json = parse(text, out);
  if (!out.empty()) return out;
  only_keys(json, {"version", "status", "max_score", "tests"}, "top level", out);
  const std::set<std::string> statuses = {"pass", "fail", "error"};
  if (!statuses.count(json.value("status", ""))) out.push_back("status must be pass, fail or error");
  if (!json["max_score"].is_number()) out.push_back("max_score must be a number");
  if (!json["tests"].is_array()) return out.push_back("tests must be an array"), out;
  double points = 0;
  for (const auto& test : json["tests"]) {
    only_keys(test, {"name", "status", "score", "message", "test_code", "filename", "line_no", "duration"}, "test", out);
    if (!test.value("name", Json()).is_string()) out.push_back("a test without a name");
    if (!statuses.count(test.value("status", ""))) out.push_back("test status must be pass, fail or error");
    if (!test["score"].is_number()) out.push_back("a test without a score");
    points += test.value("score", 0.0);
  }
  if (points > json.value("max_score", 0.0) + 1e-9) out.push_back("the points exceed max_score");
  return out;
}

struct JUnitCounts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
};

inline Problems junit(const std::string& text, JUnitCounts* counts = nullptr) {
  Problems out;
  tinyxml2::XMLDocument doc;
  if (doc.Parse(text.c_str()) != tinyxml2::XML_SUCCESS) return {"not well-formed XML: " + std::string(doc.ErrorStr())};
  auto* suites = doc.FirstChildElement("testsuites");
  if (!suites) return {"no <testsuites> root"};
  JUnitCounts total;
  for (auto* suite = suites->FirstChildElement("testsuite"); suite; suite = suite->NextSiblingElement("testsuite")) {
    if (!suite->Attribute("name")) out.push_back("a testsuite without a name");
    JUnitCounts here;
    std::set<std::string> names;
    for (auto* testcase = suite->FirstChildElement("testcase"); testcase;
         testcase = testcase->NextSiblingElement("testcase")) {
      ++here.tests;
      const char* name = testcase->Attribute("name");
      if (!name || !names.insert(name).second) out.push_back("testcase names must exist and be unique");
      if (!testcase->Attribute("classname")) out.push_back("a testcase without a classname (focus point)");
      double time = -1;
      if (testcase->QueryDoubleAttribute("time", &time) != tinyxml2::XML_SUCCESS || time < 0) {
        out.push_back("testcase time must be seconds >= 0");
      }
      int outcomes = !!testcase->FirstChildElement("failure") + !!testcase->FirstChildElement("error") +
                     !!testcase->FirstChildElement("skipped");
      if (outcomes > 1) out.push_back("a testcase with more than one outcome");
      here.failures += !!testcase->FirstChildElement("failure");
      here.errors += !!testcase->FirstChildElement("error");
      here.skipped += !!testcase->FirstChildElement("skipped");
    }
    if (suite->IntAttribute("tests", -1) != here.tests || suite->IntAttribute("failures", -1) != here.failures ||
        suite->IntAttribute("errors", -1) != here.errors || suite->IntAttribute("skipped", -1) != here.skipped) {
      out.push_back("the testsuite's counts disagree with its testcases");
    }
    double time = -1;
    if (suite->QueryDoubleAttribute("time", &time) != tinyxml2::XML_SUCCESS || time < 0) {
      out.push_back("testsuite time must be seconds >= 0");
    }
    total.tests += here.tests;
    total.failures += here.failures;
    total.errors += here.errors;
    total.skipped += here.skipped;
  }
  if (total.tests == 0) out.push_back("no testcase");
  if (counts) *counts = total;
  return out;
}

// What every format must agree on with the grader's own JSON report of the
// same grade: passed exactly when the verdict is passed, the same score, a
// pass earns the maximum on any machine, a check outside the score
// (informational, or needing a GPU the grade did not have) is never a failed
// test, and a check that was not assessed never counted as passed.
inline Problems agree(const Json& report, const std::string& exercism_text, const std::string& gradescope_text,
                      const std::string& prairielearn_text, const std::string& junit_text,
                      const std::string& classroom_text = "") {
  Problems out;
  const bool passed = report.value("verdict", "") == "passed";
  const double score = report.value("score", 0.0), max_score = report.value("max_score", 0.0);
  const bool assessed = report.value("verdict", "") != "not_assessed";
  // outside: not in the score (a note, not a test, where a format can);
  // unrun: in the score, and skipped.
  size_t not_assessed = 0, outside = 0, unrun = 0;
  for (const auto& check : report["checks"]) {
    const bool skipped = check.value("status", "") == "skipped";
    const bool out_of_score = !assessed || check.value("needs_gpu", false) || check.value("informational", false);
    not_assessed += skipped;
    outside += out_of_score;
    unrun += skipped && !out_of_score;
  }
  auto ex = Json::parse(exercism_text, nullptr, false);
  auto gs = Json::parse(gradescope_text, nullptr, false);
  auto pl = Json::parse(prairielearn_text, nullptr, false);
  if (ex.is_discarded() || gs.is_discarded() || pl.is_discarded()) return {"a format is not JSON"};
  if ((ex.value("status", "") == "pass") != passed) out.push_back("exercism status disagrees with the verdict");
  if (!assessed && ex.value("status", "") != "error") out.push_back("exercism: a grade not assessed is an error");
  if (!assessed && pl.value("gradable", true)) out.push_back("prairielearn: a grade not assessed is not gradable");
  if (gs["tests"].size() != report["checks"].size() - outside)
    out.push_back("gradescope has a test for a check outside the score, or lacks one in it");
  for (const auto& test : gs["tests"]) {
    if (passed && test.value("status", "") != "passed") out.push_back("gradescope: a failed test in a pass");
  }
  double gs_max = 0;
  for (const auto& test : gs["tests"]) gs_max += test.value("max_score", 0.0);
  // Its tests' maximum: the report's in a pass; no more where a grade stopped
  // early (forbidden code is graded on one check).
  if (std::abs(gs.value("score", -1.0) - score) > 1e-9 || gs_max > max_score + 1e-9 ||
      (passed && std::abs(gs_max - max_score) > 1e-9)) {
    out.push_back("gradescope score (or its tests' maximum) disagrees with the report's");
  }
  if (max_score > 0 && std::abs(pl.value("score", -1.0) - score / max_score) > 1e-9) {
    out.push_back("prairielearn score disagrees with the report's");
  }
  size_t exercism_errors = 0;
  for (const auto& test : ex["tests"]) exercism_errors += test.value("status", "") == "error";
  if (exercism_errors < unrun)
    out.push_back("exercism shows a check that was not assessed as run");
  if (ex["tests"].size() != report["checks"].size() - outside)
    out.push_back("exercism shows a check outside the score, or leaves out one in it");
  JUnitCounts counts;
  if (junit(junit_text, &counts).empty()) {
    if ((passed || !assessed) != (counts.failures == 0 && counts.errors == 0))
      out.push_back("junit failures disagree with the verdict (a grade not assessed has none)");
    if (counts.skipped != static_cast<int>(not_assessed)) out.push_back("junit skips are not the checks not assessed");
  }
  if (passed && (score != max_score || max_score <= 0)) out.push_back("a pass must score the maximum, which is > 0");
  if (!classroom_text.empty()) {
    auto cl = Json::parse(classroom_text, nullptr, false);
    double points = 0;
    for (const auto& test : cl["tests"]) points += test.value("score", 0.0);
    if (std::abs(points - score) > 1e-9 || std::abs(cl.value("max_score", -1.0) - max_score) > 1e-9)
      out.push_back("classroom points disagree with the report's score");
    if ((cl.value("status", "") == "pass") != passed) out.push_back("classroom status disagrees with the verdict");
  }
  if (!assessed && (score != 0 || max_score != 0)) out.push_back("a grade not assessed scores 0 of 0");
  return out;
}

struct HtmlFigures {
  int drawn = 0;     // figures with their three heatmaps
  int noted = 0;     // figures with a note instead
  int matching = 0;  // drawn figures that say the weights match
};

inline bool has_class(const tinyxml2::XMLElement* element, const char* name) {
  const char* value = element->Attribute("class");
  if (!value) return false;
  std::string classes = std::string(" ") + value + " ";
  return classes.find(std::string(" ") + name + " ") != std::string::npos;
}

inline void each_element(const tinyxml2::XMLElement* element,
                         const std::function<void(const tinyxml2::XMLElement*)>& visit) {
  for (; element; element = element->NextSiblingElement()) {
    visit(element);
    each_element(element->FirstChildElement(), visit);
  }
}

inline Problems html(const std::string& text, HtmlFigures* counts = nullptr) {
  Problems out;
  if (text.rfind("<!DOCTYPE html>", 0) != 0) out.push_back("the page does not start with <!DOCTYPE html>");
  tinyxml2::XMLDocument doc;
  if (doc.Parse(text.c_str()) != tinyxml2::XML_SUCCESS) return {"not well-formed: " + std::string(doc.ErrorStr())};
  auto* root = doc.FirstChildElement("html");
  if (!root || !root->FirstChildElement("head") || !root->FirstChildElement("body")) return {"no html/head/body"};
  bool policy = false;
  HtmlFigures found;
  each_element(root, [&](const tinyxml2::XMLElement* element) {
    const std::string name = element->Name();
    // Self-contained: nothing is fetched, nothing runs.
    for (const char* attribute : {"src", "href", "srcset", "action", "formaction", "data"}) {
      if (element->Attribute(attribute)) out.push_back("<" + name + "> has a " + attribute + " attribute");
    }
    for (auto* a = element->FirstAttribute(); a; a = a->Next()) {
      if (std::strncmp(a->Name(), "on", 2) == 0) out.push_back("<" + name + "> has an event handler");
    }
    if (name == "script" || name == "iframe" || name == "link" || name == "object" || name == "embed") {
      out.push_back("the page has a <" + name + "> element");
    }
    if (name == "style" && element->GetText() && std::strstr(element->GetText(), "url(")) {
      out.push_back("the style sheet loads a url()");
    }
    if (name == "meta" && element->Attribute("http-equiv", "Content-Security-Policy") &&
        element->Attribute("content") && std::strstr(element->Attribute("content"), "default-src 'none'")) {
      policy = true;
    }
    if (name != "section" || !has_class(element, "figure")) return;
    std::vector<const tinyxml2::XMLElement*> maps;
    bool note = false, same = false;
    for (auto* child = element->FirstChildElement(); child; child = child->NextSiblingElement()) {
      note |= has_class(child, "note");
      same |= has_class(child, "same");
      if (has_class(child, "maps")) {
        for (auto* figure = child->FirstChildElement("figure"); figure; figure = figure->NextSiblingElement("figure")) {
          maps.push_back(figure->FirstChildElement("svg"));
        }
      }
    }
    if (note) {
      if (!maps.empty()) out.push_back("a figure with both a note and heatmaps");
      ++found.noted;
      return;
    }
    if (maps.size() != 3) {
      out.push_back("a figure with " + std::to_string(maps.size()) + " heatmaps instead of 3");
      return;
    }
    std::vector<int> cells;
    for (auto* svg : maps) {
      if (!svg) {
        out.push_back("a heatmap without its svg");
        return;
      }
      int count = 0;
      each_element(svg->FirstChildElement(), [&](const tinyxml2::XMLElement* e) {
        if (std::strcmp(e->Name(), "rect") != 0 || !has_class(e, "cell")) return;
        ++count;
        const char* fill = e->Attribute("fill");
        if (!fill || std::strlen(fill) != 7 || fill[0] != '#') out.push_back("a heatmap cell without a #rrggbb fill");
      });
      cells.push_back(count);
    }
    if (cells[0] == 0 || cells[0] != cells[1] || cells[1] != cells[2]) {
      out.push_back("the three heatmaps of a figure have different sizes (or none)");
    }
    ++found.drawn;
    found.matching += same;
  });
  if (!policy) out.push_back("no Content-Security-Policy with default-src 'none'");
  if (!root->FirstChildElement("head")->FirstChildElement("title")) out.push_back("no <title>");
  if (counts) *counts = found;
  return out;
}

}  // namespace format_checks
