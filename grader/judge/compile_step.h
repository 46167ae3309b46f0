// What the compile's files share (compile.cpp, early_compile.cpp): one step
// (compiler, linker, readelf) run in the sandbox under the compile limits,
// and the compiler's command for a submission. Not for use outside them.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/text.h"
#include "exercise/exercise.h"
#include "judge/process.h"
#include "judge/sandbox.h"
#include "judge/toolchain.h"

namespace grader {

// A file's bytes; throws GraderFault when it cannot be read.
std::string read_file(const std::filesystem::path& file);

// What one compile step may write per file: a submission's object is a few MB,
// and the step writes three files (object, dependencies, shared object), so a
// grade's disk use stays bounded whatever the source asks the compiler for.
constexpr size_t kCompileFileBytes = 128ull << 20;

// The compiler, linker and readelf run with the exercise's compile limits, in the
// same sandbox as learner code: a source file can make a compiler hang or try
// to include any file it can see.
struct Step {
  const Exercise& exercise;
  const std::filesystem::path& work_dir;
  const SandboxStatus& sandbox;
  const Confinement& confinement;

  ChildOutcome run(std::vector<std::string> argv, size_t output_bytes = 0, std::string request = "") const;
  ChildSpec spec(std::vector<std::string> argv, size_t output_bytes = 0, std::string request = "") const;
};

// "linking ran past its time limit", "linking failed (killed by signal 9)".
std::string describe_failure(const ChildOutcome& outcome, const std::string& what);

// The precompiled header a C++ submission is compiled against: the
// exercise's interface, or, for a submission that includes all of LibTorch's
// C++ API (as most real code does), that API as a prebuilt Clang module (with
// the prelude and pch_support.h; the interface header is then force-included,
// before the source): in a module, unlike a precompiled header, the vtables
// the headers name are defined once, when it is built, not again in every
// submission (docs/performance.md); where the build made one, the exercise's
// interface precompiled on top of that module (its templates instantiated
// once, not in every submission: 0.2 s of each). Only the speed depends on
// this guess. Empty where the exercise has none.
std::filesystem::path precompiled_header(const Toolchain& toolchain, const Exercise& exercise, bool libtorch_api);

// The options that load `pch`: a precompiled header, or LibTorch's API
// module, with only its map given (no module found by a path the source
// names) and prebuilt (none is built in the sandbox), then the prelude, one
// of its headers, imported first, or the interface precompiled on it.
std::vector<std::string> pch_options(const Toolchain& toolchain, const std::filesystem::path& pch);

// Whether `pch` is LibTorch's API module or an interface precompiled on it.
bool on_torch_module(const Toolchain& toolchain, const std::filesystem::path& pch);

// The link of a submission's object (none: the control link, which shows
// whether the libraries link at all) into `output`, with the exercise's
// library and, for code compiled on LibTorch's API module, the library of
// that module's compiled inline functions: by the linker's own command, which
// the build asked the compiler's driver for (Toolchain::link_command), or
// through the driver.
std::vector<std::string> linker_argv(const Toolchain& toolchain, const std::filesystem::path& library,
                                     const std::filesystem::path& pch, const std::filesystem::path& output,
                                     const std::filesystem::path& object);
std::vector<std::string> driver_link_argv(const Toolchain& toolchain, const std::filesystem::path& library,
                                          const std::filesystem::path& pch, const std::filesystem::path& output,
                                          const std::filesystem::path& object);

// The C++ compiler's command for `source`, into work_dir's submission.o
// (dependencies: submission.d).
std::vector<std::string> compiler_argv(const Toolchain& toolchain, const Exercise& exercise,
                                       const std::filesystem::path& pch, const std::filesystem::path& source,
                                       const std::filesystem::path& work_dir);

}  // namespace grader
