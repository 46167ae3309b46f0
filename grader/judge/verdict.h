// The rules that turn a grade's check results into its verdict and score,
// once the learner's code ran every case (a compile error, a crash, a limit or
// forbidden code decide the verdict before any check does: grade.cpp).
//
// What a check can say about the score:
//  - in the score: it earns its weight when it passes (of a passed or failed grade);
//  - outside it: an informational measurement (exercise.yaml `informational:`),
//    or a check that only a GPU can assess, on a grade without one. Neither
//    counts in the maximum, so a full answer earns full marks on any machine.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "judge/compile.h"
#include "exercise/exercise.h"
#include "report/report.h"

namespace grader {

// Marks each result informational, with its visibility, as its exercise.yaml check says, and
// needs_gpu where only a GPU can assess it and, on a grade without one
// (`on_gpu` false), it was skipped.
void mark_score_scope(std::vector<CheckResult>& checks, const Exercise& exercise, bool on_gpu);

// Whether `check` counts in the score and its maximum.
bool in_score(const CheckResult& check);

// The maximum of a grade: what a full answer earns here (Exercise::max_score),
// plus the checks only a GPU can assess that ran to a result here all the
// same (forbidden symbols found in a CUDA kernel's compiled code).
double max_score_of(const std::vector<CheckResult>& checks, const Exercise& exercise, bool on_gpu);

struct ChecksVerdict {
  Verdict verdict = Verdict::failed;  // passed, failed or not_assessed
  size_t failed = 0;                  // checks that failed
  size_t unrun = 0;                   // checks skipped for a cause other than a missing GPU
  size_t gpu_skipped = 0;             // checks skipped only because no GPU ran the code
};

// The verdict of checks that all ran to a result (informational ones aside):
//  passed        nothing failed, nothing was skipped but for want of a GPU, and
//                at least one focus point was shown met;
//  not_assessed  nothing failed, checks were skipped for want of a GPU and for
//                nothing else, and no focus point could be shown (a CUDA kernel
//                on a machine without a GPU): nothing found wrong, nothing shown;
//  failed        otherwise: a check failed, or one could not run for a cause
//                a GPU would not remove (what was not assessed was not shown).
ChecksVerdict verdict_of_checks(const std::vector<CheckResult>& checks,
                                const std::vector<FocusPointResult>& focus_points);

// How the runner's run ended, as the grader measured it (its trusted
// counters: the cgroup's, its own clock and byte counts; the kernel's word on
// a signal), before any result the learner's process sent is read.
struct RunEnd {
  bool memory_exceeded = false;
  bool output_exceeded = false;
  bool timed_out = false;
  bool cpu_exceeded = false;                  // the CPU-time limit (also timed_out)
  std::optional<double> case_limit_seconds;  // a case's own limit (also timed_out): its seconds
  bool channel_replaced = false;              // the runner's last word: its result channel is not its own
  std::vector<std::string> forbidden_symbols; // found in the compiled code (evidence beside a replaced channel)
  bool forbidden_call = false;                // killed by the system-call filter
  bool process_cap_hit = false;
  std::string where;       // what was running when it was stopped (", in case 3 of 19 (...)")
  std::string case_basis;  // why a case's own limit is what it is ("; each case may take ...")
};

// A verdict a stage decides before the checks run.
struct StageVerdict {
  StageVerdict() = default;
  StageVerdict(Verdict verdict_, std::string summary_, std::string forbids_ = "",
               std::vector<std::string> evidence_ = {})
      : verdict(verdict_), summary(std::move(summary_)), forbids(std::move(forbids_)), evidence(std::move(evidence_)) {}
  Verdict verdict = Verdict::runtime_error;
  std::string summary;
  // Where the exercise has a no_builtins check, it fails with this message
  // and evidence (the code did what no attention code does); empty: nothing to add.
  std::string forbids;
  std::vector<std::string> evidence;
  std::string compiler_output;  // what the report shows as the compiler's (or loader's) output; empty: nothing
};

// The verdict a compile decides on its own: a file that names a poisoned
// built-in (grader/prelude.h; `no_builtins`: the exercise forbids them) is
// forbidden, any other compile failure a compile error, and compiled code
// that defines or calls the grader's own functions (CompileResult::refuses_run)
// is forbidden without running. nullopt: the code runs.
std::optional<StageVerdict> verdict_of_compile(const CompileResult& compiled, bool no_builtins);

// The verdict the run's end decides on its own, by the first of these that
// holds: memory, output, time (a case's own limit, CPU, wall clock), a
// replaced result channel, a forbidden system call, the process cap.
// nullopt: none; the results decide.
std::optional<StageVerdict> verdict_of_run_end(const RunEnd& end, const StepLimits& limits);

// What came back from the run, as the grader read it, before any check reads
// a result.
struct RunResults {
  std::optional<std::string> decode_error;  // the results could not be read (malformed, too large): why
  bool exited_cleanly = true;
  std::string end_described;              // how the process ended ("killed by signal 11")
  std::optional<std::string> load_error;  // the learner's library could not be loaded: the loader's message
  size_t requests = 0, responses = 0;
  bool in_order = true;  // each result answers its own case
};

// The verdict the results decide before any check reads them, by the first
// of these that holds: unreadable (a crash, or an early exit or a write to
// the grader's channel), a library that does not load (a compile error), an
// unclean end, a result missing, a result out of order. nullopt: the checks decide.
std::optional<StageVerdict> verdict_of_results(const RunResults& results);

// The verdict once every check ran, and the summary a learner reads.
struct ChecksDecision {
  Verdict verdict = Verdict::failed;
  std::string summary;
  bool full_pass = false;  // passed with nothing left for want of a GPU: the speed run may follow
  bool one_error = false;  // every case stopped with the same error: nothing else to report
};

// By the first of these that holds: a failed no_builtins check (forbidden);
// nothing shown for want of a GPU (not assessed); a pass, full or but for
// GPU checks; an allocation refused in some case (memory limit); else failed,
// summarised by the focus points missed, by what could not run, by failures
// tied to no focus point, or by the one error every case stopped with.
// `case_errors`: each case's error (empty where none); `no_gpu`: why no GPU ran it.
ChecksDecision verdict_of_judged(const std::vector<CheckResult>& checks,
                                 const std::vector<FocusPointResult>& focus_points,
                                 const std::vector<std::string>& case_errors, const std::string& no_gpu);

}  // namespace grader
