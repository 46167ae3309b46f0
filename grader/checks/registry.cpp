// Which check code serves which exercise. Adding an exercise: its folder under
// exercises/, a folder under grader/checks/ with driver.cpp and checks.cpp, and
// one line here and in grader/CMakeLists.txt.
#include "checks/check.h"
#include "checks/exercise_mhsa/checks.h"
#include "checks/exercise_sdpa/checks.h"
#include "errors.h"

namespace grader {

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  if (exercise.id == "exercise_sdpa") return make_sdpa_suite(exercise);
  if (exercise.id == "exercise_mhsa") return make_mhsa_suite(exercise);
  throw ConfigError("exercise '" + exercise.id + "' has no check code under grader/checks/");
}

}  // namespace grader
