#include "judge/compile_step.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "base/errors.h"
#include "base/profile.h"

namespace grader {
namespace fs = std::filesystem;

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw GraderFault("cannot read " + file.string());
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

ChildOutcome Step::run(std::vector<std::string> argv, size_t output_bytes, std::string request) const {
  profile::Span span(argv.empty() ? "a compile step" : fs::path(argv.front()).filename().string());
  return run_child(spec(std::move(argv), output_bytes, std::move(request)));
}

ChildSpec Step::spec(std::vector<std::string> argv, size_t output_bytes, std::string request) const {
  ChildSpec spec;
  spec.argv = std::move(argv);
  spec.request = std::move(request);
  spec.working_dir = work_dir.string();
  spec.limits = child_limits(exercise.limits.compile);
  if (output_bytes) spec.limits.output_bytes = output_bytes;
  spec.limits.file_size_bytes = kCompileFileBytes;
  // What a tool writes to its temporary folder stays in the scratch folder,
  // which is removed with the grade (not the machine's /tmp, without the sandbox).
  spec.extra_env.push_back("TMPDIR=" + work_dir.string());
  sandbox_child(sandbox, confinement, spec);
  return spec;
}

std::string describe_failure(const ChildOutcome& outcome, const std::string& what) {
  if (outcome.timed_out) return what + " ran past its time limit";
  return what + " failed (" + outcome.describe_end() + ")";
}

namespace {
// The module name grader/CMakeLists.txt gives LibTorch's API in its module map.
constexpr const char* kTorchApiModule = "grader_torch_api";
}  // namespace

fs::path precompiled_header(const Toolchain& toolchain, const Exercise& exercise, bool libtorch_api) {
  fs::path pch;
  auto found = toolchain.pchs.find(exercise.id);
  if (found == toolchain.pchs.end()) return pch;
  pch = found->second;
  std::error_code error;
  auto header_time = fs::last_write_time(exercise.dir / exercise.interface_header, error);
  if (!fs::exists(pch) || error || fs::last_write_time(pch) < header_time) {
    throw GraderFault("the precompiled interface " + pch.string() + " is missing or older than " +
                      exercise.interface_header + ": rebuild the grader (./grade does it)");
  }
  if (libtorch_api && !toolchain.torch_module.empty()) {
    if (!fs::exists(toolchain.torch_module)) {
      throw GraderFault("LibTorch's API module " + toolchain.torch_module +
                        " is missing: rebuild the grader (./grade does it)");
    }
    pch = toolchain.torch_module;
    if (auto api = toolchain.api_pchs.find(exercise.id); api != toolchain.api_pchs.end()) {
      if (!fs::exists(api->second) || fs::last_write_time(api->second) < header_time) {
        throw GraderFault("the interface precompiled on LibTorch's API " + api->second.string() +
                          " is missing or older than " + exercise.interface_header +
                          ": rebuild the grader (./grade does it)");
      }
      pch = api->second;
    }
  }
  return pch;
}

bool on_torch_module(const Toolchain& toolchain, const fs::path& pch) {
  if (toolchain.torch_module.empty() || pch.empty()) return false;
  if (pch == toolchain.torch_module) return true;
  return std::any_of(toolchain.api_pchs.begin(), toolchain.api_pchs.end(),
                     [&pch](const auto& entry) { return entry.second == pch; });
}

std::vector<std::string> pch_options(const Toolchain& toolchain, const fs::path& pch) {
  if (!on_torch_module(toolchain, pch)) return {"-include-pch", pch.string()};
  std::vector<std::string> options = {"-fmodules",
                                      "-fno-implicit-modules",
                                      "-fno-implicit-module-maps",
                                      "-fmodule-map-file=" + toolchain.torch_module_map,
                                      "-fmodule-file=" + std::string(kTorchApiModule) + "=" + toolchain.torch_module};
  if (pch == toolchain.torch_module) {
    options.insert(options.end(), {"-include", toolchain.prelude});
  } else {
    options.insert(options.end(), {"-include-pch", pch.string()});  // the prelude and the interface inside
  }
  return options;
}

namespace {
std::vector<std::string> libraries_to_link(const Toolchain& toolchain, const fs::path& library, const fs::path& pch) {
  std::vector<std::string> libraries = {library.string()};
  if (on_torch_module(toolchain, pch) && !toolchain.torch_api_library.empty())
    libraries.push_back(toolchain.torch_api_library);
  return libraries;
}
}  // namespace

std::vector<std::string> linker_argv(const Toolchain& toolchain, const fs::path& library, const fs::path& pch,
                                     const fs::path& output, const fs::path& object) {
  std::vector<std::string> link;
  for (const auto& arg : toolchain.link_command) {
    if (arg == "@OBJECT@") {
      if (!object.empty()) link.push_back(object.string());
    } else if (arg == "@LIBRARY@") {
      auto libraries = libraries_to_link(toolchain, library, pch);
      link.insert(link.end(), libraries.begin(), libraries.end());
    } else {
      link.push_back(arg == "@OUTPUT@" ? output.string() : arg);
    }
  }
  return link;
}

std::vector<std::string> driver_link_argv(const Toolchain& toolchain, const fs::path& library, const fs::path& pch,
                                          const fs::path& output, const fs::path& object) {
  std::vector<std::string> link = {toolchain.cxx, "-shared", "-o", output.string()};
  if (!object.empty()) link.push_back(object.string());
  auto libraries = libraries_to_link(toolchain, library, pch);
  link.insert(link.end(), libraries.begin(), libraries.end());
  link.insert(link.end(), toolchain.link_options.begin(), toolchain.link_options.end());
  return link;
}

std::vector<std::string> compiler_argv(const Toolchain& toolchain, const Exercise& exercise, const fs::path& pch,
                                       const fs::path& source, const fs::path& work_dir) {
  bool gcc_style = toolchain.cxx.find("clang") == std::string::npos;
  std::vector<std::string> argv = {toolchain.cxx, "@" + toolchain.flags_file.string(), "-fdiagnostics-color=never",
                                   gcc_style ? "-fmax-errors=20" : "-ferror-limit=20", "-MD"};
  // A compiler crash leaves no preprocessed copy of the source and no script
  // naming the build's paths behind (clang writes both by default).
  if (!gcc_style) argv.push_back("-fno-crash-diagnostics");
  // The headers whose inline functions do an exercise's work come first, under
  // their real names (grader/prelude.h; inside the precompiled interface when there is one).
  if (!pch.empty()) {
    auto loads = pch_options(toolchain, pch);
    argv.insert(argv.end(), loads.begin(), loads.end());
  } else if (!toolchain.prelude.empty()) {
    argv.insert(argv.end(), {"-include", toolchain.prelude});
  }
  // Under LibTorch's API module the interface comes next, before any line of
  // the submission, as it does inside the exercise's own header.
  if (pch == toolchain.torch_module)
    argv.insert(argv.end(), {"-include", (exercise.dir / exercise.interface_header).string()});
  argv.insert(argv.end(), {"-MF", (work_dir / "submission.d").string(), "-iquote", exercise.dir.string(), "-c",
                           source.string(), "-o", (work_dir / "submission.o").string()});
  return argv;
}

}  // namespace grader
