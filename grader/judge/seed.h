// The seed a grade draws its inputs from when none is given (--seed): a hash
// of the exercise's definition and the submission's bytes. The same file
// gets the same inputs, verdict, missed set and score on every run and
// machine; any edit (or a new version of the exercise) gets fresh inputs.
#pragma once

#include <cstdint>
#include <string>

namespace grader {

// In [0, 1e9), as --seed accepts and reports print.
uint64_t default_seed(const std::string& exercise_definition, const std::string& submission_text);

}  // namespace grader
