#include "exercise/statement.h"

#include <sstream>

namespace grader {

std::vector<StatementSection> statement_sections(const std::string& markdown) {
  std::vector<StatementSection> sections(1);
  std::istringstream in(markdown);
  bool fenced = false;  // a "## " inside a code block is no heading
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) fenced = !fenced;
    if (!fenced && line.rfind("## ", 0) == 0) sections.push_back({line.substr(3), ""});
    sections.back().text += line + "\n";
  }
  if (sections.front().text.empty()) sections.erase(sections.begin());
  return sections;
}

bool is_spoiler(const std::string& heading) {
  for (const char* prefix : {"The steps", "What the grader checks", "Follow-up questions"}) {
    if (heading.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::string statement_text(const std::string& markdown, const std::string& exercise_id, bool with_checks) {
  std::string shown, left_out;
  for (const auto& section : statement_sections(markdown)) {
    if (!with_checks && is_spoiler(section.heading)) {
      left_out += (left_out.empty() ? "" : ", ") + ("\"" + section.heading + "\"");
      continue;
    }
    shown += section.text;
  }
  if (!left_out.empty()) {
    while (!shown.empty() && shown.back() == '\n') shown.pop_back();
    shown += "\n\n(Not shown, to practise as in an interview: " + left_out + ". `./grade show " + exercise_id +
             " --checks` shows them.)\n";
  }
  return shown;
}

}  // namespace grader
