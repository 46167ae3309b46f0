// An exercise as described by exercises/<id>/exercise.yaml.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace grader {

struct FocusPoint {
  std::string id;
  std::string title;
  std::string explanation;
};

struct CheckSpec {
  std::string id;
  std::string focus_point;
  std::vector<std::string> covers;  // further focus points a pass vouches for
  std::string title;
};

struct Mistake {
  std::string id;
  std::string focus_point;
  std::string title;
  std::string explanation;
};

struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

// Limits for one kind of child process: the compiler, or the run of learner code.
struct StepLimits {
  double seconds = 0;      // wall clock, measured by the grader
  double cpu_seconds = 0;  // CPU time of all its threads and processes
  double memory_mb = 0;    // memory (cgroup)
  int processes = 0;       // processes and threads together (cgroup)
  double output_kb = 0;    // each of stdout and stderr
};

struct Limits {
  StepLimits compile{120, 120, 2048, 16, 512};
  StepLimits run{30, 30, 1024, 32, 1024};
};

struct Exercise {
  std::string id;
  std::string title;
  std::filesystem::path dir;
  std::vector<std::string> learner_files;
  std::string interface_header;
  Limits limits;
  std::map<std::string, Tolerance> tolerances;  // by dtype name: float32, float64
  std::vector<std::string> forbidden_operators;
  std::vector<std::string> forbidden_symbols;
  std::vector<std::string> parameters;
  std::vector<FocusPoint> focus_points;
  std::vector<CheckSpec> checks;
  std::vector<Mistake> mistakes;

  const FocusPoint& focus_point(const std::string& id) const;
  const CheckSpec& check(const std::string& id) const;
  const Mistake& mistake(const std::string& id) const;
  const Tolerance& tolerance(const std::string& dtype) const;
  std::filesystem::path learner_file() const { return dir / learner_files.front(); }
};

// Throws ConfigError with the file and the problem for a malformed exercise.yaml.
Exercise load_exercise(const std::filesystem::path& dir);
// The same from the text of an exercise.yaml said to lie in `dir` (the fuzzer's entry).
Exercise parse_exercise(const std::string& yaml_text, const std::filesystem::path& dir);

// Exercise ids under exercises_root (folders holding an exercise.yaml), sorted.
std::vector<std::string> list_exercises(const std::filesystem::path& exercises_root);

// Throws UsageError naming the closest existing exercise when `id` is unknown.
std::filesystem::path find_exercise_dir(const std::filesystem::path& exercises_root, const std::string& id);

}  // namespace grader
