// grader-inline-reach: run by the build (grader/CMakeLists.txt), once per
// exercise. Reads the objects that hold the inline functions a submission to
// the exercise may import (the precompiled headers' compiled code) and writes
// what each reaches that a symbol rule names (inline_reach.h).
//
//   grader-inline-reach EXERCISE_DIR OUTPUT OBJECT...
#include <iostream>

#include "base/errors.h"
#include "exercise/exercise.h"
#include "judge/inline_reach.h"
#include "judge/symbol_rules.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: grader-inline-reach EXERCISE_DIR OUTPUT OBJECT...\n";
    return 2;
  }
  try {
    const auto exercise = grader::load_exercise(argv[1]);
    grader::ReferenceGraph graph;
    for (int i = 3; i < argc; ++i) graph.add_object(argv[i]);
    auto reach = graph.reaching([&exercise](const std::string& name) { return grader::named_by_a_rule(name, exercise); });
    grader::write_inline_reach(argv[2], reach);
  } catch (const std::exception& error) {
    std::cerr << "grader-inline-reach: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
