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

struct Exercise {
  std::string id;
  std::string title;
  std::filesystem::path dir;
  std::vector<std::string> learner_files;
  std::string interface_header;
  double run_seconds = 60;
  double compile_seconds = 180;
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

// Exercise ids under exercises_root (folders holding an exercise.yaml), sorted.
std::vector<std::string> list_exercises(const std::filesystem::path& exercises_root);

// Throws UsageError naming the closest existing exercise when `id` is unknown.
std::filesystem::path find_exercise_dir(const std::filesystem::path& exercises_root, const std::string& id);

}  // namespace grader
