// An exercise's statement (exercises/<id>/README.md) in two layers: the task
// and the interface first (the contract, no focus point's answer); the steps,
// what the grader checks and the interviewer's follow-ups (the method and the
// pitfalls, near enough the answer) only when asked for.
#pragma once

#include <string>
#include <vector>

namespace grader {

struct StatementSection {
  std::string heading;  // the "## " line's text; empty for what comes before the first
  std::string text;     // the section, its heading line included
};

// The statement's sections, in order.
std::vector<StatementSection> statement_sections(const std::string& markdown);

// Whether a section gives away the method or what is checked ("The steps",
// "What the grader checks", ...: shown by `grade show --checks`).
bool is_spoiler(const std::string& heading);

// The statement as `grade show` prints it: without its spoilers unless
// `with_checks`, then a line naming what was left out and how to see it.
std::string statement_text(const std::string& markdown, const std::string& exercise_id, bool with_checks);

}  // namespace grader
