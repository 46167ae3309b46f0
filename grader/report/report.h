// The outcome of one grade, and its two renderings: a terminal report grouped
// by focus point, and one JSON object for CI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checks/check.h"
#include "report/speed.h"

namespace grader {

// A closed set with stable names (see verdict_name).
enum class Verdict {
  passed,
  failed,
  compile_error,
  runtime_error,
  timeout,
  memory_limit,
  output_limit,
  forbidden,
  grader_error,
  not_assessed  // nothing failed, nothing could be shown here (verdict.h)
};

// What a grade shows about a focus point (focus_status below decides):
//  met              every check that counts against it or covers it passed on
//                   every case this machine can run (the checks name the cases
//                   it could not: a dtype this LibTorch lacks; the GPU run that
//                   confirms a CPU check, without a GPU, is left out), and at
//                   least one ran;
//  missed           a failed check names it as the cause, with evidence;
//  not_established  a check that covers it failed, for a cause not shown to be
//                   this point (another point's mistake, an unexplained
//                   difference, an error): it may be right, it was not shown;
//  not_assessed     one of its checks was skipped (a kernel's GPU checks
//                   without a GPU included), or none of its checks ran here.
enum class FocusStatus { met, missed, not_established, not_assessed };

struct FocusPointResult {
  FocusPoint point;
  FocusStatus status = FocusStatus::not_assessed;
  std::vector<size_t> failed;    // indices into GradeReport::checks of the checks that missed it
  std::vector<size_t> unproven;  // ... of the checks that cover it and failed for another cause
};

struct GradeReport {
  std::string exercise;
  std::string title;
  std::string submission;
  // Every case stopped with the same error (the summary says it): the text
  // report is the compact one, the checks listed by name only.
  bool one_error = false;
  bool starter = false;  // the submission is the exercise's starter, byte for byte (exercises/<id>/.starter/)
  uint64_t seed = 0;
  Verdict verdict = Verdict::grader_error;
  std::string summary;  // one line: why this verdict
  std::vector<CheckResult> checks;
  std::vector<FocusPointResult> focus_points;
  std::string compiler_output;
  std::string program_stdout;
  std::string program_stderr;
  double compile_seconds = 0;
  bool compile_cached = false;  // unchanged submission: compiled code reused
  bool compile_ahead = false;   // compiled by a compiler started before the save (grade watch)
  std::string compile_note;     // including all of LibTorch's API made the compile slow (compile_note.h)
  std::string sandbox;          // what isolated this grade (one line)
  double run_seconds = 0;
  // Of the run, the time the runner waited for a CPU (a busy machine; judge/stall.h): limits leave it out.
  double runner_waited_seconds = 0;
  bool runner_forked = false;  // the runner was forked from one that had loaded LibTorch (zygote.h)
  double total_seconds = 0;
  // From the command's start to this report (the grade script and LibTorch's
  // load included): set by a single grade from the command line; 0 otherwise.
  double command_seconds = 0;
  double max_score = 0;  // what a full answer earns here: the weights of the checks in the score (verdict.h)
  std::vector<AttentionFigure> figures;  // drawn by the HTML report; computed only when asked for
  std::string device = "cpu";            // where the learner's code ran: cpu or cuda
  std::string no_gpu;                    // on the CPU: why nothing was GPU-verified
  SpeedReport speed;                     // timed on a GPU after a pass (exercise.yaml `speed:`), informational
  std::string visibility = "visible";    // Gradescope's: visible, hidden, after_due_date, after_published

  // Whether `check` earns its weight: it passed, and the verdict is passed or
  // failed (forbidden code, a crash or a compile error earns nothing).
  bool credits(const CheckResult& check) const;
  // Whether `check` is part of this grade's score: in the score (verdict.h),
  // and the grade was assessed (a not_assessed grade scores nothing of nothing).
  bool scored(const CheckResult& check) const;
  // The weights of the scored checks that earn theirs.
  double score() const;

  // Fills focus_points from checks (focus_status).
  void assess_focus_points(const std::vector<FocusPoint>& points);
};

// The status of focus point `point` after `checks` (see FocusStatus); the
// indices of the checks that missed it are added to `failed`, of those that
// left it not established to `unproven`.
FocusStatus focus_status(const std::string& point, const std::vector<CheckResult>& checks,
                         std::vector<size_t>& failed, std::vector<size_t>& unproven);

std::string verdict_name(Verdict verdict);
std::string focus_status_name(FocusStatus status);
// The same as a reader sees it: "met", "MISSED", "not established", "not assessed".
std::string focus_status_label(FocusStatus status);
std::string check_status_name(CheckStatus status);
int exit_code_for(Verdict verdict);

// How much learner text a report shows: one exception message, and each of
// the program's output streams (the output limit may let more through).
constexpr size_t kMaxLearnerText = 4096;
// How much of one string a driver returns the grade reads (the lists of a
// module's parameters, buffers, calls: learner-chosen names in escaped
// fields). A list cut short would hide what it no longer holds, so the bound
// sits far above any honest module's; the runner's output limit bounds the rest.
constexpr size_t kMaxDriverList = 256 * 1024;
constexpr size_t kMaxShownOutput = 16 * 1024;

// `text` cut to at most `max_bytes` (at a character boundary) with a note of
// what was cut; `already_cut`: the text was cut before (at the output limit).
std::string capped(const std::string& text, size_t max_bytes, bool already_cut = false);

// The text up to its first newline (one line of an error message).
inline std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// Text safe to print on a terminal: C0 and C1 control characters, DEL,
// bidirectional overrides and bytes that are not UTF-8 become visible escapes
// (\x1b, \u202e); newlines and tabs stay.
std::string printable(const std::string& text);


}  // namespace grader
