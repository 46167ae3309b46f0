#include <openssl/evp.h>

#include "report/platforms/platforms.h"

namespace grader::platforms {

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

std::string details(const CheckResult& check) {
  std::string text = check.message;
  for (const auto& line : check.evidence) text += "\n  " + line;
  return text;
}

std::string stopped_output(const GradeReport& report) {
  std::string text = report.summary;
  if (!report.compiler_output.empty()) text += "\n\n" + report.compiler_output;
  if (!report.program_stderr.empty()) text += "\n\n" + report.program_stderr;
  return text;
}

std::string test_name(const CheckResult& check) {
  return check.title.empty() ? check.id : check.id + ": " + check.title;
}

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

std::string replay_command(const GradeReport& report) {
  return "./grade " + report.exercise + " --seed " + std::to_string(report.seed);
}

}  // namespace grader::platforms
