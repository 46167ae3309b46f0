#include "report/formats.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <openssl/evp.h>
#include <tinyxml2.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "base/errors.h"
#include "judge/stop.h"

namespace grader {
namespace {

using Json = nlohmann::ordered_json;

// At most `limit` bytes (so at most `limit` characters), cut at a character
// boundary, the cut said. Give it printable() text: invalid UTF-8 would grow
// when the JSON writer replaces it.
std::string cut_to(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text;
  const std::string note = "\n[... cut]";
  size_t end = limit - note.size();
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end) + note;
}

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                      reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(written));
  return out;
}

// No check could run: the grade stopped before any (compile error, crash,
// limits, grader fault), so the platforms' "could not run" state applies.
bool nothing_ran(const GradeReport& report) { return report.checks.empty(); }

// The message of a check and its evidence, as one text.
std::string details(const CheckResult& check) {
  std::string text = check.message;
  for (const auto& line : check.evidence) text += "\n  " + line;
  return text;
}

// What a grade that ran no check has to say: its summary and the compiler's words.
std::string stopped_output(const GradeReport& report) {
  std::string text = report.summary;
  if (!report.compiler_output.empty()) text += "\n\n" + report.compiler_output;
  if (!report.program_stderr.empty()) text += "\n\n" + report.program_stderr;
  return text;
}

std::string test_name(const CheckResult& check) {
  return check.title.empty() ? check.id : check.id + ": " + check.title;
}

double ratio(const GradeReport& report) { return report.max_score > 0 ? report.score() / report.max_score : 0; }

// The checks outside the score (informational, or needing a GPU this grade
// did not have), one line each: a note beside the tests, never a test.
std::string outside_score_note(const GradeReport& report) {
  std::string note;
  for (const auto& check : report.checks) {
    if (report.scored(check)) continue;
    const char* why = check.informational ? "informational, outside the score"
                      : check.needs_gpu   ? "not assessed here, outside the score"
                                          : "not assessed here";
    note += "\n" + check.id + " (" + why + "): " + check.message;
  }
  return note.empty() ? note : "\n" + note;
}

// The command that replays a grade: the same file on the same inputs.
std::string replay_command(const GradeReport& report) {
  return "./grade " + report.exercise + " --seed " + std::to_string(report.seed);
}

std::string exercism(const GradeReport& report) {
  Json json;
  json["version"] = 3;
  if (nothing_ran(report)) {
    json["status"] = "error";
    json["message"] = stopped_output(report);
    json["tests"] = Json::array();
    return json_text(json);
  }
  // Not assessed here (a CUDA exercise without a GPU): the tests could not
  // run, which is Exercism's error, with the reason.
  if (report.verdict == Verdict::not_assessed) {
    json["status"] = "error";
    json["message"] = report.summary;
    json["tests"] = Json::array();
    return json_text(json);
  }
  // The interface's top-level message is for an error only; a failure says
  // its reasons in the tests' messages.
  json["status"] = report.verdict == Verdict::passed ? "pass" : "fail";
  json["tests"] = Json::array();
  bool first = true;
  for (const auto& check : report.checks) {
    // Exercism's statuses are pass, fail and error, and a pass means every
    // test passed: a check outside the score (informational, or needing a GPU
    // the grade did not have) is left out rather than shown as an error.
    if (!report.scored(check)) continue;
    Json test;
    test["name"] = test_name(check);
    test["status"] = check.status == CheckStatus::passed   ? "pass"
                     : check.status == CheckStatus::failed ? "fail"
                                                           : "error";
    if (test["status"] != "pass") test["message"] = details(check);  // the interface: none on a pass
    // Every check judges one run of the code: its output goes with the first.
    if (first && !report.program_stdout.empty()) {
      test["output"] = cut_to(printable(report.program_stdout), kExercismOutputLimit);
    }
    first = false;
    // What reproduces it: the same inputs, and the check to read.
    test["test_code"] = replay_command(report) + "   # then read check " + check.id + " [" + check.focus_point + "]";
    json["tests"].push_back(test);
  }
  return json_text(json);
}

std::string gradescope(const GradeReport& report) {
  Json json;
  // Gradescope's results have no top-level maximum: the assignment's points
  // are set in Gradescope, and each test states its own.
  json["score"] = report.score();
  json["execution_time"] = static_cast<int64_t>(std::ceil(report.total_seconds));
  json["output"] = nothing_ran(report) ? stopped_output(report) : report.summary + outside_score_note(report);
  json["visibility"] = report.visibility;
  json["stdout_visibility"] = "hidden";
  json["tests"] = Json::array();
  for (const auto& check : report.checks) {
    if (!report.scored(check)) continue;  // in the output's note: never a failed test
    const bool passed = report.credits(check);
    Json test;
    test["name"] = test_name(check);
    test["score"] = passed ? check.weight : 0.0;
    test["max_score"] = check.weight;
    test["status"] = passed ? "passed" : "failed";
    test["output"] = check.status == CheckStatus::skipped ? "not assessed: " + details(check) : details(check);
    std::vector<std::string> tags = {check.focus_point};
    for (const auto& more : check.also_against) tags.push_back(more);
    test["tags"] = tags;
    test["visibility"] = check.visibility.empty() ? report.visibility : check.visibility;
    json["tests"].push_back(test);
  }
  return json_text(json);
}

std::string prairielearn(const GradeReport& report) {
  Json json;
  // A submission that does not compile is not gradable (it costs no attempt);
  // neither is one the grader itself failed on.
  json["gradable"] = report.verdict != Verdict::compile_error && report.verdict != Verdict::grader_error &&
                     report.verdict != Verdict::not_assessed;
  // PrairieLearn shows why a submission could not be graded from format_errors.
  if (!json["gradable"].get<bool>()) json["format_errors"] = Json::array({report.summary});
  json["score"] = ratio(report);
  json["message"] = report.summary;
  json["output"] = nothing_ran(report) ? stopped_output(report) : report.program_stdout;
  // The attention figures, as long as they leave room in PrairieLearn's 1 MB.
  size_t image_bytes = 0;
  for (const auto& image : figure_images(report)) {
    auto url = "data:image/svg+xml;base64," + base64(image.svg);
    if (image_bytes + url.size() > kPrairieLearnImageBytes) break;
    image_bytes += url.size();
    json["images"].push_back({{"label", image.label}, {"url", url}});
  }
  json["tests"] = Json::array();
  for (const auto& check : report.checks) {
    const bool passed = report.credits(check) && report.scored(check);
    Json test;
    test["name"] = test_name(check);
    test["description"] = "focus point: " + check.focus_point;
    test["points"] = passed ? check.weight : 0.0;
    test["max_points"] = report.scored(check) ? check.weight : 0.0;  // outside the score: a note of 0 points
    test["message"] = check.status == CheckStatus::skipped ? "not assessed: " + check.message : check.message;
    test["output"] = details(check);
    json["tests"].push_back(test);
  }
  return json_text(json);
}

// GitHub Classroom's autograding result, as its grading reporter reads a
// runner's (base64 of it in <RUNNER>_RESULTS): status, max_score, and each
// test with its score; the reporter sends the points to Classroom.
std::string classroom(const GradeReport& report) {
  Json json;
  json["version"] = 1;
  json["status"] = nothing_ran(report) || report.verdict == Verdict::not_assessed ? "error"
                   : report.verdict == Verdict::passed                          ? "pass"
                                                                                 : "fail";
  json["max_score"] = report.max_score;
  json["tests"] = Json::array();
  if (nothing_ran(report)) {
    json["tests"].push_back({{"name", "grade"},
                             {"status", "error"},
                             {"score", 0},
                             {"message", cut_to(printable(stopped_output(report)), kMaxShownOutput)}});
  }
  for (const auto& check : report.checks) {
    if (!report.scored(check)) continue;
    const bool passed = report.credits(check);
    Json test;
    test["name"] = test_name(check);
    test["status"] = passed ? "pass" : check.status == CheckStatus::skipped ? "error" : "fail";
    test["score"] = passed ? check.weight : 0.0;
    if (!passed) test["message"] = details(check);
    test["test_code"] = replay_command(report);
    json["tests"].push_back(test);
  }
  return json_text(json);
}

std::string seconds(double value) { return fmt::format("{:.3f}", value); }

std::string junit(const GradeReport& report) {
  tinyxml2::XMLDocument doc;
  doc.InsertEndChild(doc.NewDeclaration());
  auto* suites = doc.NewElement("testsuites");
  doc.InsertEndChild(suites);
  auto* suite = doc.NewElement("testsuite");
  suites->InsertEndChild(suite);
  size_t failures = 0, errors = 0, skipped = 0, tests = 0;
  auto* properties = doc.NewElement("properties");
  suite->InsertEndChild(properties);
  auto property = [&](const std::string& name, const std::string& value) {
    auto* item = doc.NewElement("property");
    item->SetAttribute("name", name.c_str());
    item->SetAttribute("value", printable(value).c_str());
    properties->InsertEndChild(item);
  };
  property("verdict", verdict_name(report.verdict));
  property("score", fmt::format("{:g}", report.score()));
  property("max_score", fmt::format("{:g}", report.max_score));
  property("seed", std::to_string(report.seed));
  property("submission", report.submission);
  // One test case "grade" holding an error: the verdict and its summary.
  auto grade_error = [&](const std::optional<std::string>& text) {
    auto* testcase = doc.NewElement("testcase");
    testcase->SetAttribute("name", "grade");
    testcase->SetAttribute("classname", report.exercise.c_str());
    testcase->SetAttribute("time", seconds(report.total_seconds).c_str());
    auto* error = doc.NewElement("error");
    error->SetAttribute("type", verdict_name(report.verdict).c_str());
    error->SetAttribute("message", printable(first_line(report.summary)).c_str());
    if (text) error->SetText(printable(*text).c_str());
    testcase->InsertEndChild(error);
    suite->InsertEndChild(testcase);
    ++tests;
    ++errors;
  };
  if (nothing_ran(report)) grade_error(stopped_output(report));
  for (const auto& check : report.checks) {
    auto* testcase = doc.NewElement("testcase");
    testcase->SetAttribute("name", check.id.c_str());  // check ids are unique in exercise.yaml
    testcase->SetAttribute("classname", check.focus_point.c_str());
    // The cases run once for every check; a check's time is the grader's judging of it.
    testcase->SetAttribute("time", seconds(check.seconds).c_str());
    ++tests;
    if (check.informational && check.status != CheckStatus::skipped) {
      // A measurement beside the grade: its figure, never a failure.
      auto* out = doc.NewElement("system-out");
      out->SetText(printable(details(check)).c_str());
      testcase->InsertEndChild(out);
    } else if (check.status == CheckStatus::skipped) {
      auto* skip = doc.NewElement("skipped");
      skip->SetAttribute("message", printable(check.message).c_str());
      testcase->InsertEndChild(skip);
      ++skipped;
    } else if (!report.credits(check) && report.verdict != Verdict::not_assessed) {
      // A passed check of forbidden code does not pass: the verdict overrides it.
      const bool overridden = check.status == CheckStatus::passed;
      auto* failure = doc.NewElement("failure");
      failure->SetAttribute("type", overridden ? verdict_name(report.verdict).c_str()
                                               : (check.mistake.empty() ? "mismatch" : check.mistake.c_str()));
      failure->SetAttribute("message", printable(first_line(overridden ? report.summary : check.message)).c_str());
      failure->SetText(printable(overridden ? report.summary : details(check)).c_str());
      testcase->InsertEndChild(failure);
      ++failures;
    }
    suite->InsertEndChild(testcase);
  }
  // Not passed, and no check failed (every one skipped: no GPU, no nvcc): one
  // error says why, so a CI never counts the grade as green.
  // A grade not assessed here (a CUDA exercise without a GPU) stays skipped: neither red nor green.
  if (report.verdict != Verdict::passed && report.verdict != Verdict::not_assessed && failures == 0 && errors == 0)
    grade_error(std::nullopt);
  if (!report.program_stdout.empty()) {
    auto* out = doc.NewElement("system-out");
    out->SetText(printable(report.program_stdout).c_str());
    suite->InsertEndChild(out);
  }
  if (!report.program_stderr.empty()) {
    auto* err = doc.NewElement("system-err");
    err->SetText(printable(report.program_stderr).c_str());
    suite->InsertEndChild(err);
  }
  for (auto* element : {suites, suite}) {
    element->SetAttribute("name", element == suite ? report.exercise.c_str() : "attention-grader");
    element->SetAttribute("tests", static_cast<int64_t>(tests));
    element->SetAttribute("failures", static_cast<int64_t>(failures));
    element->SetAttribute("errors", static_cast<int64_t>(errors));
    element->SetAttribute("skipped", static_cast<int64_t>(skipped));
    element->SetAttribute("time", seconds(report.total_seconds).c_str());
  }
  tinyxml2::XMLPrinter printer;
  doc.Print(&printer);
  return printer.CStr();
}

}  // namespace

std::string json_text(const Json& json) {
  return json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

bool draws_figures(const std::string& format) { return format == "html" || format == "prairielearn"; }

const std::vector<std::string>& report_formats() {
  static const std::vector<std::string> formats = {"text",  "json", "exercism", "gradescope", "prairielearn",
                                                   "junit", "html", "classroom"};
  return formats;
}

OutputTarget output_target(const std::string& value, const std::string& format_option) {
  const auto& formats = report_formats();
  const auto known = [&](const std::string& name) {
    return std::find(formats.begin(), formats.end(), name) != formats.end();
  };
  const auto equals = value.find('=');
  if (equals != std::string::npos) {
    const auto name = value.substr(0, equals);
    if (known(name)) {
      if (equals + 1 == value.size()) throw UsageError("--output '" + value + "': no FILE after '='");
      return {name, value.substr(equals + 1), false};
    }
    // A word before '=' was meant as a format (a file named so: html=a=b.html).
    if (name.find('/') == std::string::npos) {
      throw UsageError(fmt::format("--output '{}': '{}' is not a format; expected FORMAT=FILE with FORMAT one of {}",
                                   value, name, fmt::join(formats, ", ")));
    }
  }
  if (value.empty()) throw UsageError("--output: an empty FILE");
  static const std::map<std::string, std::string> by_extension = {
      {".html", "html"}, {".htm", "html"}, {".json", "json"}, {".xml", "junit"}, {".txt", "text"}};
  std::string extension = std::filesystem::path(value).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto found = by_extension.find(extension);
  if (!format_option.empty()) {
    // What kind of file each format writes: a name that says another kind is a slip.
    auto kind = [](const std::string& format) {
      if (format == "html" || format == "text") return format;
      return format == "junit" ? std::string("xml") : std::string("json");
    };
    if (found != by_extension.end() && kind(found->second) != kind(format_option)) {
      throw UsageError(fmt::format("--output '{}': the name says {} but --format is {}; write FORMAT=FILE", value,
                                   found->second, format_option));
    }
    return {format_option, value, true};
  }
  if (found == by_extension.end()) {
    throw UsageError("--output '" + value + "': cannot tell the format from the name; write FORMAT=FILE (FORMAT one of " +
                     fmt::format("{}", fmt::join(formats, ", ")) + ") or give --format");
  }
  return {found->second, value, false};
}

bool errors_on_stdout(const std::string& format) { return format != "text" && format != "html"; }

std::string render(const GradeReport& report, const std::string& format, bool color) {
  if (format == "text") return render_text(report, color);
  if (format == "json") return render_json(report);
  if (format == "exercism") return exercism(report);
  if (format == "gradescope") return gradescope(report);
  if (format == "prairielearn") return prairielearn(report);
  if (format == "junit") return junit(report);
  if (format == "html") return render_html(report);
  if (format == "classroom") return classroom(report);
  throw UsageError("unknown report format '" + format + "'");
}

void write_report_file(const std::filesystem::path& path, const std::string& text) {
  if (stop_requested()) return;  // a grade stopped from outside writes nothing more (stop.h)
  auto partial = path;
  partial += ".partial-" + std::to_string(::getpid()) + "-" +
             std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  // Synced before the rename: after a crash (even of the machine) the file
  // is the old one or the new one, whole.
  int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  for (size_t done = 0; ok && done < text.size();) {
    ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    ok = wrote > 0;
    done += ok ? static_cast<size_t>(wrote) : 0;
  }
  ok = ok && ::fsync(fd) == 0;
  if (fd >= 0) ok = ::close(fd) == 0 && ok;
  std::error_code error;
  if (ok) std::filesystem::rename(partial, path, error);
  if (!ok || error) {
    std::filesystem::remove(partial, error);
    throw UsageError("cannot write " + path.string());
  }
  int dir = ::open(path.has_parent_path() ? path.parent_path().c_str() : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

std::string render_error(const std::string& exercise, const std::string& verdict, const std::string& message,
                         const std::string& format) {
  if (format == "json") return render_json_error(exercise, verdict, message);
  GradeReport report;
  report.exercise = exercise;
  report.verdict = Verdict::grader_error;
  report.summary = (verdict == "usage_error"          ? "usage error: "
                    : verdict == "invalid_submission" ? "invalid submission: "
                                                      : "grader error: ") +
                   message;
  return render(report, format);
}

}  // namespace grader
