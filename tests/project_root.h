// The project folder the tests read exercises and solutions from: GRADER_ROOT
// (CTest sets it), else the current folder.
#pragma once

#include <cstdlib>
#include <filesystem>

namespace grader::test_support {

inline std::filesystem::path project_root() {
  const char* root = std::getenv("GRADER_ROOT");
  return root ? std::filesystem::path(root) : std::filesystem::current_path();
}

}  // namespace grader::test_support
