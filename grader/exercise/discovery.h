// Finding a student's answer to an exercise in the student's folder of a
// class: <student>/<learner file>, or <student>/exercises/<id>/<learner file>
// in a clone of the learner repository. What it finds is that student's
// alone: a path that leads out of the student's folder (a link to another
// student, to the grader's model solutions) is never followed, two different
// answers are not guessed between, and a file that was meant but misnamed is
// named, so the teacher and the student see what happened.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "exercise/exercise.h"

namespace grader {

struct Discovery {
  std::filesystem::path answer;       // the file to grade (its real path), or empty
  std::string invalid;                // why the student's input cannot be graded (then `answer` is empty)
  std::vector<std::string> warnings;  // what the student should know: a misnamed file, a second copy
};

// The student's answer to `exercise` in `student_dir`.
Discovery find_answer(const std::filesystem::path& student_dir, const Exercise& exercise);

// Whether `path`, its links resolved, lies inside `folder` (links resolved):
// false for a path that does not exist.
bool inside_folder(const std::filesystem::path& path, const std::filesystem::path& folder);

// Whether a file named `name` looks like a misnamed `wanted`: another case
// ("SDPA.cpp"), a copy's suffix ("sdpa (1).cpp", "sdpa-2.cpp", "sdpa copy.cpp"),
// or another extension ("sdpa.cc", "sdpa.cpp.txt"). The exact name is no miss.
bool near_miss(const std::string& name, const std::string& wanted);

}  // namespace grader
