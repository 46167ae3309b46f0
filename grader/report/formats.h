// The report in the formats grading platforms read, rendered from the same
// GradeReport as the terminal and JSON reports (report.h):
//
//   exercism      results.json, version 3 (exercism.org/docs/building/tooling/test-runners/interface)
//   gradescope    results.json of an autograder (gradescope.com/help#help-center-item-autograder-specifications)
//   prairielearn  results.json of an external grader (prairielearn.readthedocs.io, externalGrading)
//   junit         JUnit XML: one testsuite, one testcase per check, classname = focus point
//   html          one self-contained page for a learner (html.cpp), with heatmaps of
//                 the attention weights when the grade computed figures
//
// A check that could not run is never reported as passed: it is skipped where
// the format has a skip, else a failure (Gradescope) or an error (Exercism)
// scoring nothing. A grade where no check ran (a compile error, a crash
// before any case, a grader fault) is the format's "could not run" state.
#pragma once

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "report/report.h"

namespace grader {

// A JSON document as every report file writes it: indented, one newline at
// the end; learner text that is not UTF-8 replaced rather than refused.
std::string json_text(const nlohmann::ordered_json& json);

// A report format, listed once (formats.cpp): its name, its renderer, and
// what the command line needs to know of it.
struct ReportFormat {
  std::string name;
  std::string (*render)(const GradeReport& report, bool color);
  bool draws_figures;     // shows the attention figures (the grade must compute them)
  bool errors_on_stdout;  // machine-read: an error before a report is written in it on standard output too
  const char* file_kind;  // what its files are: text, json, xml or html (a --output name that says another is a slip)
  const char* extension;  // a batch's file of one submission in it: <stem><extension>
};
const std::vector<ReportFormat>& report_format_table();
// The format called `name`, or nullptr.
const ReportFormat* find_report_format(const std::string& name);

// Every name --format and --output accept, text and json included.
const std::vector<std::string>& report_formats();

// Where one --output value sends which format. "FORMAT=FILE" names both;
// a bare FILE takes the --format given on the command line (`format_option`,
// empty when none was), else its extension's (.html, .htm: html; .json: json;
// .xml: junit; .txt: text). Throws UsageError when neither says.
struct OutputTarget {
  std::string format;
  std::filesystem::path file;
  bool took_format_option = false;  // the bare FILE took --format's (standard output then gets text)
};
OutputTarget output_target(const std::string& value, const std::string& format_option);

// Whether an error before a report is written in `format` on standard output
// too (the machine-read formats: a CI job that asked for JSON gets JSON);
// text and HTML readers get the error on standard error only.
bool errors_on_stdout(const std::string& format);

// `report` in `format` (one of report_formats()).
std::string render(const GradeReport& report, const std::string& format, bool color = false);

// The verdict's counts, agreeing with each other: "score 9 of 15: 9 of the 15
// scored checks passed" (a check that cannot run here is outside both; text.cpp).
std::string check_counts(const GradeReport& report);
// The terminal's report (text.cpp), the grader's JSON (json.cpp), the HTML page (html.cpp).
std::string render_text(const GradeReport& report, bool color);
// The version of render_json's layout: raised when a field changes meaning or goes.
constexpr int kJsonSchemaVersion = 5;  // 5: starter; 4: verdict not_assessed; score out of what a full answer earns here; checks marked informational
std::string render_json(const GradeReport& report);
// For --format json when no grade could happen (usage or grader error).
std::string render_json_error(const std::string& exercise, const std::string& verdict, const std::string& message);
std::string render_html(const GradeReport& report);

// Each drawn attention figure as one standalone SVG image (the three heatmaps
// side by side), for platforms that show images (PrairieLearn's `images`).
struct FigureImage {
  std::string label;
  std::string svg;
};
std::vector<FigureImage> figure_images(const GradeReport& report);
// Whether a report in `format` shows the attention figures (the grade must compute them).
bool draws_figures(const std::string& format);
// How much of PrairieLearn's 1 MB of results the figures' images may take.
constexpr size_t kPrairieLearnImageBytes = 512 * 1024;
// For other pages in the same style and under the same policy (nothing loads
// or runs): text escaped for HTML, and the page up to its <body> (close it
// with "</body></html>").
std::string html_escape(const std::string& text);
std::string html_page_start(const std::string& title);

// A grade that could not happen (usage or grader error) in `format`.
std::string render_error(const std::string& exercise, const std::string& verdict, const std::string& message,
                         const std::string& format);

// Writes a report to `path` whole or not at all (a temporary file beside it,
// renamed over it): a reader never sees half a report, and writing it again
// replaces it. Throws UsageError when it cannot be written.
void write_report_file(const std::filesystem::path& path, const std::string& text);

// Exercism caps each test's output at 500 characters.
constexpr size_t kExercismOutputLimit = 500;

}  // namespace grader
