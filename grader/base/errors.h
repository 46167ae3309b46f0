// One error hierarchy: each error carries the exit status `grade` ends with.
// main() is the only place that turns them into messages and exit codes.
#pragma once

#include <stdexcept>
#include <string>

namespace grader {

enum ExitCode : int {
  kExitPassed = 0,
  kExitNotPassed = 1,    // the submission was graded and did not pass
  kExitUsage = 2,        // bad command line, unknown exercise, missing file, bad exercise.yaml
  kExitGraderFault = 3,  // the grader itself failed: never the learner's fault
  kExitNotAssessed = 4,  // graded, nothing found wrong, nothing shown: a CUDA exercise on a machine without a GPU
};

// The worse of two exit statuses, for a batch: a fault, then a usage error,
// then a submission that did not pass, then one not assessed here, then a pass.
inline int worse_exit(int a, int b) {
  auto rank = [](int code) { return code == kExitNotAssessed ? 1 : code == kExitPassed ? 0 : code + 1; };
  return rank(a) >= rank(b) ? a : b;
}

class Error : public std::runtime_error {
 public:
  Error(const std::string& message, int exit_code) : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message, kExitUsage) {}
};

// A submission that cannot be graded as given (a link, not a regular file,
// too large, two different answers): a usage error for one grade, that
// student's `invalid_submission` in a class or batch.
class InvalidSubmission : public UsageError {
 public:
  explicit InvalidSubmission(const std::string& message) : UsageError(message) {}
};

class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message) : Error(message, kExitUsage) {}
};

class GraderFault : public Error {
 public:
  explicit GraderFault(const std::string& message) : Error(message, kExitGraderFault) {}
};

}  // namespace grader
