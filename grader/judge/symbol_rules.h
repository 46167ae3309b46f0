// What a submission's compiled code may not mention (its symbol table, its
// string constants): the judge's own rules and the exercise's built-ins.
#pragma once

#include <string>
#include <vector>

#include "exercise/exercise.h"
#include "judge/inline_reach.h"

namespace grader {

// The forbidden names in a submission's symbol table (`readelf --syms --wide` output, not
// demangled): the judge's own list, and the exercise's built-ins. One line
// each in `all`; `refuses_run` repeats the first whose code must not run at
// all (it defines or calls the grader's own code), empty when none.
struct SymbolFindings {
  std::vector<std::string> all;
  std::string refuses_run;
};
// `reach`: what each inline function of LibTorch that the grader compiled
// (and the code imports) reaches, judged as if it were compiled into the code
// (inline_reach.h).
SymbolFindings forbidden_symbols_in(const std::string& symbol_table, const Exercise& exercise,
                                    const InlineReach& reach = {});

// Whether any rule above would note `name` as a symbol an imported inline
// function reaches (the judge's rules and the exercise's forbidden operators,
// not its forbidden names): what the build keeps of what inline functions
// reach (inline_reach.h).
bool named_by_a_rule(const std::string& name, const Exercise& exercise);

// The patterns the judge does not follow inside inline functions that name
// none of its rules (a typo would leave the rule it meant followed): empty
// (tests/judge_test.cpp).
std::vector<std::string> unfollowed_patterns_without_a_rule();

// What the compiled code's bytes (its string constants) show it doing that
// attention code never does (reading /proc): one line each.
std::vector<std::string> forbidden_text_in(const std::string& object_bytes);

// The judge's patterns for LibTorch's kernels past the dispatcher, each of
// which must match an exported symbol of `library` ("cpu": libtorch_cpu,
// "cuda": libtorch_cuda) of the LibTorch the grader runs on: a pattern that
// matches none (a namespace's length mistyped in its mangled form) guards
// nothing. tests/judge_test.cpp reads the libraries' symbol tables.
std::vector<std::string> libtorch_kernel_patterns(const std::string& library);

}  // namespace grader
