// The terminal's report: grouped by focus point, then the checks, in colour
// where the terminal takes it.
#include <fmt/format.h>

#include <algorithm>

#include "report/formats.h"

namespace grader {
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

std::string check_counts(const GradeReport& report) {
  // The score counts the checks that can run here (the list below says why
  // the others did not run).
  size_t scored = 0, earned = 0;
  for (const auto& check : report.checks) {
    if (!report.scored(check)) continue;
    ++scored;
    earned += report.credits(check) ? 1 : 0;
  }
  if (scored == 0) {
    const size_t passed = std::count_if(report.checks.begin(), report.checks.end(),
                                        [](const auto& c) { return c.status == CheckStatus::passed; });
    return fmt::format("{} of {} checks passed", passed, report.checks.size());
  }
  return fmt::format("score {:g} of {:g}: {} of the {} scored checks passed", report.score(), report.max_score,
                     earned, scored);
}

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

  auto verdict = verdict_name(report.verdict);
  // The verdict and the one thing to do first, before the details.
  out += p.bold("Verdict: ") + (report.verdict == Verdict::passed         ? p.green(verdict)
                                : report.verdict == Verdict::not_assessed ? p.yellow(verdict)
                                                                          : p.red(verdict));
  if (!report.checks.empty()) out += " (" + check_counts(report) + ")";
  out += "\n" + printable(report.summary) + "\n";
  for (const auto& focus : report.focus_points) {
    if (focus.status != FocusStatus::missed || focus.failed.empty()) continue;
    const auto& check = report.checks[focus.failed.front()];
    out += p.bold("Start with: ") + focus.point.title + ": " + printable(check.message) + "\n";
    break;
  }
  out += "\n";

  if (report.one_error && !report.checks.empty()) {
    // Nothing ran far enough to show anything: the error is the report.
    std::string ids;
    for (const auto& check : report.checks) ids += (ids.empty() ? "" : ", ") + check.id;
    out += p.dim(fmt::format("Every check waits for your code to return results; none of the {} focus points is shown "
                             "yet.\nChecks not run: {}",
                             report.focus_points.size(), ids)) +
           "\n\n";
  } else if (!report.focus_points.empty() && !report.checks.empty()) {
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
      if (check.status == CheckStatus::skipped && !shown.insert(check.message).second) {
        out += mark + check.id + p.dim(" [" + check.focus_point + "]: the same as above") + "\n";
        continue;
      }
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
  // What the learner waited: from the command to this report where the
  // command line says (start-up included), else the grade's own time.
  const auto waited = report.command_seconds > 0
                          ? fmt::format("{:.1f} s from your command to this report", report.command_seconds)
                          : fmt::format("total {:.1f} s", report.total_seconds);
  out += p.dim(fmt::format("compile {:.1f} s{}, run {:.1f} s; {}", report.compile_seconds,
                           report.compile_cached  ? " (unchanged since an earlier grade: reused)"
                           : report.compile_ahead ? " (started before the save)"
                                                  : "",
                           report.run_seconds, waited)) +
         "\n";
  // A busy machine stretches the run; the limits counted only the runner's own time.
  if (report.runner_waited_seconds >= 0.5) {
    out += p.dim(fmt::format("the machine was busy: the run waited {:.1f} s for a CPU (not counted against its limits)",
                             report.runner_waited_seconds)) +
           "\n";
  }
  // One line on the GPU, where checks ran (none after a compile error), and
  // none where a check already said why.
  const std::string gpu_line = report.device == "cuda" ? std::string("ran on the GPU (cuda): GPU-verified")
                                                       : "not GPU-verified: " + report.no_gpu;
  const bool said = std::any_of(report.checks.begin(), report.checks.end(), [&](const CheckResult& check) {
    return check.message.find(gpu_line) != std::string::npos;
  });
  if (!report.checks.empty() && !said) out += p.dim(gpu_line) + "\n";
  return out;
}

}  // namespace grader
