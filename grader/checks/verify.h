// The exercise verifier: an exercise checked as a whole, as a contest's
// problem-package verifier checks a problem before it is used. Its parts
// exist, the corpus exercises every focus point and every known mistake, the
// known mistakes can be told apart, each one made alone is named as itself,
// odd output shapes fail without faulting the grader, and the reference reads
// exactly the parameters exercise.yaml declares.
//
// `grade verify-exercise ID` runs every rule; consistency_test runs each rule
// on every exercise.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace grader {

struct VerifyRule {
  std::string name;  // "focus_points_covered"
  std::string doc;   // what it requires, in a sentence
  // The problems found in the exercise `id` of the project at `root`, each
  // said so that its author knows what to add or fix; empty: none.
  std::vector<std::string> (*run)(const std::filesystem::path& root, const std::string& id);
};

// Every rule, in the order they are run.
const std::vector<VerifyRule>& verify_rules();
const VerifyRule& verify_rule(const std::string& name);

// The submissions of the corpus under tests/submissions/<id>/<kind>/ (.cpp, .cu), sorted.
std::vector<std::filesystem::path> corpus_files(const std::filesystem::path& root, const std::string& id,
                                                const std::string& kind);

}  // namespace grader
