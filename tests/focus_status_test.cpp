// The rule that says what a grade showed about a focus point (report.h,
// focus_status): met only when every check that counts for it or covers it
// passed on every case this machine can run (one that needs a GPU, without
// one, is left out); a failure names a point only as its cause.
#include <gtest/gtest.h>

#include "report/report.h"

namespace grader {
namespace {

struct FocusCheck {
  const char* focus;
  const char* covers;  // "" or one focus point
  CheckStatus status;
  bool blames = true;
  bool partly = false;
  const char* also = "";  // also_against
  bool gpu = false;       // needs_gpu and gpu_confirmation: gpu_execution, skipped without a GPU
  bool kernel = false;    // needs_gpu only: a kernel's GPU check, skipped without a GPU
};

CheckResult make(const FocusCheck& c) {
  CheckResult result;
  result.id = std::string("check_") + c.focus;
  result.focus_point = c.focus;
  if (*c.covers) result.covers = {c.covers};
  if (*c.also) result.also_against = {c.also};
  result.status = c.status;
  result.blames_focus = c.blames;
  result.partly_assessed = c.partly;
  result.needs_gpu = c.gpu || c.kernel;
  result.gpu_confirmation = c.gpu;
  return result;
}

TEST(FocusStatus, MetOnlyWhenShown) {
  using S = CheckStatus;
  using F = FocusStatus;
  struct Row {
    const char* what;
    std::vector<FocusCheck> checks;
    FocusStatus want;  // for focus point "p"
  };
  const std::vector<Row> rows = {
      {"its own check passed", {{"p", "", S::passed}}, F::met},
      {"its own and a covering check passed", {{"p", "", S::passed}, {"q", "p", S::passed}}, F::met},
      {"only a covering check, passed", {{"q", "p", S::passed}}, F::met},
      {"its own check failed, naming it", {{"p", "", S::failed}}, F::missed},
      {"another point's check names it too", {{"q", "", S::failed, true, false, "p"}, {"p", "", S::passed}}, F::missed},
      {"a covering check failed for another point's mistake", {{"p", "", S::passed}, {"q", "p", S::failed}},
       F::not_established},
      {"its own check failed without naming a cause", {{"p", "", S::failed, false}}, F::not_established},
      {"missed wins over not established", {{"p", "", S::failed}, {"q", "p", S::failed}}, F::missed},
      {"not established wins over not assessed", {{"p", "", S::skipped}, {"q", "p", S::failed}},
       F::not_established},
      {"its own check skipped", {{"p", "", S::skipped}, {"q", "p", S::passed}}, F::not_assessed},
      {"a covering check skipped", {{"p", "", S::passed}, {"q", "p", S::skipped}}, F::not_assessed},
      // Shown on every case this machine can run (issue 50): met, the cases
      // it could not run named by the check; nothing shown: not assessed.
      {"passed, but some cases could not run here", {{"p", "", S::passed, true, true}}, F::met},
      {"passed, its GPU check not run here", {{"p", "", S::passed}, {"p", "", S::skipped, true, false, "", true}},
       F::met},
      {"only a GPU check, not run here", {{"p", "", S::skipped, true, false, "", true}}, F::not_assessed},
      {"a kernel's GPU check not run: the point is not shown by a compile alone",
       {{"p", "", S::passed}, {"p", "", S::skipped, true, false, "", false, true}}, F::not_assessed},
      {"a GPU check not run, another skipped", {{"p", "", S::passed}, {"p", "", S::skipped, true, false, "", true},
       {"p", "", S::skipped}}, F::not_assessed},
      {"no check of it at all", {{"q", "", S::passed}}, F::not_assessed},
      {"another point failing says nothing of this one", {{"p", "", S::passed}, {"q", "", S::failed}}, F::met},
  };
  for (const auto& row : rows) {
    std::vector<CheckResult> checks;
    for (const auto& c : row.checks) checks.push_back(make(c));
    std::vector<size_t> failed, unproven;
    EXPECT_EQ(focus_status_name(focus_status("p", checks, failed, unproven)), focus_status_name(row.want)) << row.what;
    EXPECT_EQ(failed.empty(), row.want != F::missed) << row.what;
    if (row.want == F::not_established) {
      EXPECT_FALSE(unproven.empty()) << row.what;
    }
  }
}

}  // namespace
}  // namespace grader
