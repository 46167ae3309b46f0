// libFuzzer target: the exercise.yaml loader. Malformed text must end in a
// ConfigError (a usage error for the teacher), never a crash or another exception.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "base/errors.h"
#include "exercise/exercise.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A real exercise folder, so the learner-file checks can pass and the fuzzer
  // gets past them into the focus points, checks and mistakes.
  static const std::filesystem::path dir = std::filesystem::path(GRADER_SOURCE_DIR) / "exercises" / "exercise_sdpa";
  try {
    grader::parse_exercise(std::string(reinterpret_cast<const char*>(data), size), dir);
  } catch (const grader::ConfigError&) {
  }
  return 0;
}
