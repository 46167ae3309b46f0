// What the sandbox shows a grade's compiler, linker and runner.
#pragma once

#include <filesystem>
#include <vector>

#include "exercise/exercise.h"
#include "judge/sandbox.h"
#include "judge/toolchain.h"

namespace grader {

// What the sandbox shows a grade's compiler, linker and runner besides the
// system's programs and libraries (sandbox.cpp): the toolchain's headers and
// libraries, the exercise's interface header alone, the grader's own files
// each step needs, and the scratch folder (writable). The project, the build
// folder, the submission's folder and `hide` are hidden even where they lie
// inside the system's folders.
Confinement grade_confinement(const Toolchain& toolchain, const Exercise& exercise,
                              const std::filesystem::path& project_root, const std::filesystem::path& build_dir,
                              const std::filesystem::path& submission_dir,
                              const std::vector<std::filesystem::path>& hide, const std::filesystem::path& scratch);

}  // namespace grader
