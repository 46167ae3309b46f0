// The grading platforms' report formats (one file each beside this one) and
// what they share. Internal to report/: the rest of the grader renders
// through formats.h.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "report/report.h"

namespace grader::platforms {

using Json = nlohmann::ordered_json;

// At most `limit` bytes (so at most `limit` characters), cut at a character
// boundary, the cut said. Give it printable() text: invalid UTF-8 would grow
// when the JSON writer replaces it.
std::string cut_to(const std::string& text, size_t limit);

// `bytes` in base64 (OpenSSL's encoder).
std::string base64(const std::string& bytes);

// No check could run: the grade stopped before any (compile error, crash,
// limits, grader fault), so the platforms' "could not run" state applies.
inline bool nothing_ran(const GradeReport& report) { return report.checks.empty(); }

// The message of a check and its evidence, as one text.
std::string details(const CheckResult& check);

// What a grade that ran no check has to say: its summary and the compiler's words.
std::string stopped_output(const GradeReport& report);

// A check as a platform's test is named: its id, and its title where it has one.
std::string test_name(const CheckResult& check);

// The score as a share of the maximum (0 where the maximum is 0).
inline double ratio(const GradeReport& report) { return report.max_score > 0 ? report.score() / report.max_score : 0; }

// The checks outside the score (informational, or needing a GPU this grade
// did not have), one line each: a note beside the tests, never a test.
std::string outside_score_note(const GradeReport& report);

// The command that replays a grade: the same file on the same inputs.
std::string replay_command(const GradeReport& report);

// One renderer per platform: results.json of Exercism (v3), Gradescope and
// PrairieLearn, GitHub Classroom's autograding result, JUnit XML.
std::string exercism(const GradeReport& report);
std::string gradescope(const GradeReport& report);
std::string prairielearn(const GradeReport& report);
std::string classroom(const GradeReport& report);
std::string junit(const GradeReport& report);

}  // namespace grader::platforms
