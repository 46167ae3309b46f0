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
        unassessed = true;
        break;
      case CheckStatus::passed:
        shown = true;
        unassessed |= check.partly_assessed;
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

struct Palette {
  bool on;
  std::string paint(const std::string& text, const char* code) const {
    return on ? fmt::format("\033[{}m{}\033[0m", code, text) : text;
  }
  std::string green(const std::string& t) const { return paint(t, "32"); }
  std::string red(const std::string& t) const { return paint(t, "31"); }
  std::string yellow(const std::string& t) const { return paint(t, "33"); }
  std::string bold(const std::string& t) const { return paint(t, "1"); }
  std::string dim(const std::string& t) const { return paint(t, "2"); }
};

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

namespace {

std::string indent(const std::string& raw, const std::string& prefix) {
  const std::string text = printable(raw);
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += prefix + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string render_text(const GradeReport& report, bool color) {
  Palette p{color};
  std::string out;
  out += p.bold(fmt::format("{} — {}", report.exercise, report.title)) + "\n";
  out += p.dim(fmt::format("submission: {}\nseed: {} (replay with --seed {})", report.submission, report.seed,
                           report.seed)) +
         "\n\n";

  if (!report.compiler_output.empty()) {
    out += p.bold("Compiler output") + "\n" + indent(report.compiler_output, "  ") + "\n";
  }

  size_t passed = std::count_if(report.checks.begin(), report.checks.end(),
                                [](const auto& c) { return c.status == CheckStatus::passed; });
  auto verdict = verdict_name(report.verdict);
  // The verdict and the one thing to do first, before the details.
  out += p.bold("Verdict: ") + (report.verdict == Verdict::passed         ? p.green(verdict)
                                : report.verdict == Verdict::not_assessed ? p.yellow(verdict)
                                                                          : p.red(verdict));
  if (!report.checks.empty()) {
    out += fmt::format(" ({} of {} checks passed; score {:g} of {:g})", passed, report.checks.size(), report.score(),
                       report.max_score);
  }
  out += "\n" + printable(report.summary) + "\n";
  for (const auto& focus : report.focus_points) {
    if (focus.status != FocusStatus::missed || focus.failed.empty()) continue;
    const auto& check = report.checks[focus.failed.front()];
    out += p.bold("Start with: ") + focus.point.title + ": " + printable(check.message) + "\n";
    break;
  }
  out += "\n";

  if (!report.focus_points.empty() && !report.checks.empty()) {
    out += p.bold("Interview focus points") + "\n";
    // Each failed check is shown once, under the focus point it counts
    // against; a message already shown (one error everywhere, one mistake
    // found by several checks) is not repeated.
    std::set<std::string> shown;
    for (const auto& focus : report.focus_points) {
      const auto label = focus_status_label(focus.status);
      const auto padded = "  " + label + std::string(label.size() < 9 ? 9 - label.size() : 1, ' ');
      std::string mark = focus.status == FocusStatus::met      ? p.green(padded)
                         : focus.status == FocusStatus::missed ? p.red(padded)
                                                               : p.yellow(padded);
      out += mark + focus.point.title + p.dim(" [" + focus.point.id + "]") + "\n";
      if (focus.status == FocusStatus::not_established) {
        std::string ids;
        for (size_t index : focus.unproven) ids += (ids.empty() ? "" : ", ") + report.checks[index].id;
        out += p.dim("      not shown: " + ids + " failed for another cause (below); fix that, then grade again") +
               "\n";
      }
      if (focus.status != FocusStatus::missed) continue;
      out += indent(focus.point.explanation, "      ");
      for (size_t index : focus.failed) {
        const auto& check = report.checks[index];
        if (!shown.insert(check.message).second) {
          out += "      " + p.red("✗ " + check.id) + ": " + p.dim("the same as above") + "\n";
          continue;
        }
        out += "      " + p.red("✗ " + check.id) + ": " + printable(check.message) + "\n";
        for (const auto& line : check.evidence) out += "          " + printable(line) + "\n";
      }
    }
    out += "\n" + p.bold("Checks") + "\n";
    for (const auto& check : report.checks) {
      if (check.status == CheckStatus::failed && check.blames_focus) {
        out += p.red("  ✗ ") + check.id + p.dim(" [" + check.focus_point + "] (above)") + "\n";
        continue;
      }
      if (check.status == CheckStatus::failed) {  // counted against no focus point: shown here
        if (!shown.insert(check.message).second) {
          out += p.red("  ✗ ") + check.id + ": " + p.dim("the same as above") + "\n";
          continue;
        }
        out += p.red("  ✗ ") + check.id + ": " + printable(check.message) + "\n";
        for (const auto& line : check.evidence) out += "      " + printable(line) + "\n";
        continue;
      }
      std::string mark = check.status == CheckStatus::passed ? p.green("  ✓ ") : p.yellow("  - ");
      out += mark + check.id + p.dim(" [" + check.focus_point + "]") + ": " + printable(check.message) + "\n";
    }
    out += "\n";
  }

  if (!report.program_stdout.empty() || !report.program_stderr.empty()) {
    out += p.bold("Output of your code (logs only; it does not affect the verdict)") + "\n";
    if (!report.program_stdout.empty()) out += indent(report.program_stdout, "  stdout| ");
    if (!report.program_stderr.empty()) out += indent(report.program_stderr, "  stderr| ");
    out += "\n";
  }

  if (auto table = speed_text(report.speed); !table.empty()) out += table + "\n";

  if (!report.compile_note.empty()) out += report.compile_note + "\n";
  out += p.dim(fmt::format("compile {:.1f} s{}, run {:.1f} s, total {:.1f} s", report.compile_seconds,
                           report.compile_cached  ? " (unchanged, cached)"
                           : report.compile_ahead ? " (started before the save)"
                                                  : "",
                           report.run_seconds,
                           report.total_seconds)) +
         "\n";
  out += p.dim(report.device == "cuda" ? std::string("ran on the GPU (cuda): GPU-verified")
                                       : "not GPU-verified: " + report.no_gpu) +
         "\n";
  return out;
}

std::string render_json(const GradeReport& report) {
  nlohmann::ordered_json json;
  json["schema_version"] = kJsonSchemaVersion;
  json["exercise"] = report.exercise;
  json["submission"] = report.submission;
  json["verdict"] = verdict_name(report.verdict);
  json["summary"] = report.summary;
  json["seed"] = report.seed;
  json["sandbox"] = report.sandbox;
  json["device"] = report.device;
  json["gpu_verified"] = report.device == "cuda";
  if (report.device != "cuda") json["no_gpu"] = report.no_gpu;
  json["checks"] = nlohmann::ordered_json::array();
  for (const auto& check : report.checks) {
    nlohmann::ordered_json item;
    item["id"] = check.id;
    item["focus_point"] = check.focus_point;
    item["status"] = check_status_name(check.status);
    item["message"] = check.message;
    item["evidence"] = check.evidence;
    if (!check.mistake.empty()) item["mistake"] = check.mistake;
    if (check.partly_assessed) item["partly_assessed"] = true;
    if (!check.also_against.empty()) item["also_against"] = check.also_against;
    if (!check.also_mistakes.empty()) item["also_mistakes"] = check.also_mistakes;
    if (!check.blames_focus) item["blames_focus"] = false;
    if (check.needs_gpu) item["needs_gpu"] = true;
    if (check.informational) item["informational"] = true;
    json["checks"].push_back(item);
  }
  json["focus_points"] = nlohmann::ordered_json::array();
  for (const auto& focus : report.focus_points) {
    json["focus_points"].push_back(
        {{"id", focus.point.id}, {"title", focus.point.title}, {"status", focus_status_name(focus.status)}});
  }
  json["starter"] = report.starter;
  json["compiler_output"] = report.compiler_output;
  json["stdout"] = report.program_stdout;
  json["stderr"] = report.program_stderr;
  json["score"] = report.score();
  json["max_score"] = report.max_score;
  json["timing"] = {{"compile_seconds", report.compile_seconds},
                    {"compile_cached", report.compile_cached},
                    {"compile_ahead", report.compile_ahead},
                    {"run_seconds", report.run_seconds},
                    {"runner_forked", report.runner_forked},
                    {"total_seconds", report.total_seconds}};
  if (!report.compile_note.empty()) json["timing"]["compile_note"] = report.compile_note;
  if (report.speed.ran || !report.speed.note.empty()) {
    const auto& speed = report.speed;
    nlohmann::ordered_json item;
    item["ran"] = speed.ran;
    item["note"] = speed.note;
    if (speed.ran) {
      item["device_name"] = speed.device_name;
      item["method"] = speed.method;
      item["copy_gb_s"] = speed.copy_gb_s;
      item["matmul_tflops"] = speed.matmul_tflops;
      item["suspicious"] = speed.suspicious();
      item["sizes"] = nlohmann::ordered_json::array();
      for (const auto& row : speed.rows) {
        nlohmann::ordered_json size = {{"size", row.size}};
        if (!row.error.empty()) size["error"] = row.error;
        if (!row.baseline_error.empty()) size["baseline_error"] = row.baseline_error;
        size["learner_ms"] = row.learner_ms;
        size["unfused_ms"] = row.unfused_ms;
        size["fused_ms"] = row.fused_ms;
        if (row.learner_ms > 0 && row.unfused_ms > 0) size["ratio_to_unfused"] = row.learner_ms / row.unfused_ms;
        if (row.learner_ms > 0 && row.fused_ms > 0) size["ratio_to_fused"] = row.learner_ms / row.fused_ms;
        size["attention_matrix_mb"] = row.attention_matrix_mb;
        size["learner_peak_mb"] = row.learner_peak_mb;
        size["unfused_peak_mb"] = row.unfused_peak_mb;
        size["fused_peak_mb"] = row.fused_peak_mb;
        size["flags"] = row.flags;
        item["sizes"].push_back(size);
      }
    }
    json["speed"] = item;
  }
  // Learner output may hold invalid UTF-8: replace it rather than fail.
  return json.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string render_json_error(const std::string& exercise, const std::string& verdict, const std::string& message) {
  nlohmann::ordered_json json = {{"schema_version", kJsonSchemaVersion},
                                 {"exercise", exercise},
                                 {"verdict", verdict},
                                 {"summary", message},
                                 {"checks", nlohmann::ordered_json::array()},
                                 {"focus_points", nlohmann::ordered_json::array()}};
  return json.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace grader
