#include "report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "base/errors.h"
#include "judge/verdict.h"

namespace grader {

FocusStatus focus_status(const std::string& point, const std::vector<CheckResult>& checks,
                         std::vector<size_t>& failed, std::vector<size_t>& unproven) {
  bool shown = false, unassessed = false;
  for (size_t i = 0; i < checks.size(); ++i) {
    const auto& check = checks[i];
    if (check.informational) continue;  // a measurement beside the grade shows nothing of a point
    const bool counts = check.focus_point == point || std::find(check.also_against.begin(), check.also_against.end(),
                                                                point) != check.also_against.end();
    const bool covers = std::find(check.covers.begin(), check.covers.end(), point) != check.covers.end();
    if (!counts && !covers) continue;
    switch (check.status) {
      case CheckStatus::failed:
        if (counts && check.blames_focus) {
          failed.push_back(i);
        } else {
          unproven.push_back(i);
        }
        break;
      case CheckStatus::skipped:
        // The GPU's confirmation of what a CPU check shows, on a machine
        // without one, leaves the point to the checks that ran here.
        unassessed |= !(check.needs_gpu && check.gpu_confirmation);
        break;
      case CheckStatus::passed:
        // Shown on every case this machine can run (the check names the others).
        shown = true;
        break;
    }
  }
  if (!failed.empty()) return FocusStatus::missed;
  if (!unproven.empty()) return FocusStatus::not_established;
  if (unassessed || !shown) return FocusStatus::not_assessed;
  return FocusStatus::met;
}

void GradeReport::assess_focus_points(const std::vector<FocusPoint>& points) {
  focus_points.clear();
  for (const auto& point : points) {
    FocusPointResult result{point, FocusStatus::not_assessed, {}, {}};
    result.status = focus_status(point.id, checks, result.failed, result.unproven);
    focus_points.push_back(std::move(result));
  }
}

bool GradeReport::credits(const CheckResult& check) const {
  return check.status == CheckStatus::passed && (verdict == Verdict::passed || verdict == Verdict::failed);
}

bool GradeReport::scored(const CheckResult& check) const { return in_score(check) && verdict != Verdict::not_assessed; }

double GradeReport::score() const {
  double points = 0;
  for (const auto& check : checks) points += credits(check) && scored(check) ? check.weight : 0;
  return points;
}

std::string verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::passed:
      return "passed";
    case Verdict::failed:
      return "failed";
    case Verdict::compile_error:
      return "compile_error";
    case Verdict::runtime_error:
      return "runtime_error";
    case Verdict::timeout:
      return "timeout";
    case Verdict::memory_limit:
      return "memory_limit";
    case Verdict::output_limit:
      return "output_limit";
    case Verdict::forbidden:
      return "forbidden";
    case Verdict::grader_error:
      return "grader_error";
    case Verdict::not_assessed:
      return "not_assessed";
  }
  return "grader_error";
}

std::string focus_status_name(FocusStatus status) {
  switch (status) {
    case FocusStatus::met:
      return "met";
    case FocusStatus::missed:
      return "missed";
    case FocusStatus::not_established:
      return "not_established";
    case FocusStatus::not_assessed:
      return "not_assessed";
  }
  return "not_assessed";
}

std::string focus_status_label(FocusStatus status) {
  if (status == FocusStatus::missed) return "MISSED";
  auto label = focus_status_name(status);
  std::replace(label.begin(), label.end(), '_', ' ');
  return label;
}

std::string check_status_name(CheckStatus status) {
  switch (status) {
    case CheckStatus::passed:
      return "passed";
    case CheckStatus::failed:
      return "failed";
    case CheckStatus::skipped:
      return "skipped";
  }
  return "skipped";
}

int exit_code_for(Verdict verdict) {
  switch (verdict) {
    case Verdict::passed:
      return kExitPassed;
    case Verdict::grader_error:
      return kExitGraderFault;
    case Verdict::not_assessed:
      return kExitNotAssessed;
    default:
      return kExitNotPassed;
  }
}

namespace {

// Length of the UTF-8 sequence starting at text[at] and its code point, or 0
// when the bytes there are not valid UTF-8 (stray continuation, overlong, cut).
size_t utf8_sequence(const std::string& text, size_t at, uint32_t& code_point) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(at);
  size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : (lead >> 3) == 0x1e ? 4 : 0;
  if (length == 0 || at + length > text.size()) return 0;
  code_point = length == 1 ? lead : length == 2 ? lead & 0x1f : length == 3 ? lead & 0x0f : lead & 0x07;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xc0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(at + i) & 0x3f);
  }
  static const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code_point < smallest[length] || code_point > 0x10ffff || (code_point >= 0xd800 && code_point <= 0xdfff))
    return 0;
  return length;
}

// Characters that can reorder or hide what follows them on a terminal, and
// Unicode's noncharacters (U+FDD0-U+FDEF, U+xFFFE, U+xFFFF: valid UTF-8, but
// U+FFFE and U+FFFF are no XML character, so a JUnit file holding them is
// refused by strict readers).
bool hides_text(uint32_t c) {
  return (c < 0x20 && c != '\n' && c != '\t') || (c >= 0x7f && c <= 0x9f) || c == 0x061c || c == 0x200e ||
         c == 0x200f || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) ||
         (c >= 0xfdd0 && c <= 0xfdef) || (c & 0xfffe) == 0xfffe;
}

}  // namespace

std::string capped(const std::string& text, size_t max_bytes, bool already_cut) {
  if (text.size() <= max_bytes) return already_cut ? text + "\n[output cut off here]" : text;
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80) --end;  // not inside a character
  return text.substr(0, end) + " [... " + std::to_string(text.size() - end) + " more bytes cut]";
}

std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    uint32_t c = 0;
    size_t length = utf8_sequence(text, at, c);
    if (length == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[at]));
      ++at;
      continue;
    }
    if (hides_text(c)) {
      out += c < 0x100 ? fmt::format("\\x{:02x}", c) : fmt::format("\\u{:04x}", c);
    } else {
      out.append(text, at, length);
    }
    at += length;
  }
  return out;
}

}  // namespace grader
