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
};

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

class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message) : Error(message, kExitUsage) {}
};

class GraderFault : public Error {
 public:
  explicit GraderFault(const std::string& message) : Error(message, kExitGraderFault) {}
};

}  // namespace grader
