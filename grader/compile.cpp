#include "compile.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "errors.h"
#include "process.h"

namespace grader {
namespace fs = std::filesystem;
namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

bool is_within(const fs::path& file, const fs::path& dir) {
  auto f = fs::weakly_canonical(file).string();
  auto d = fs::weakly_canonical(dir).string();
  return f.size() > d.size() && f.compare(0, d.size(), d) == 0 && f[d.size()] == '/';
}

// Headers listed in a make-style dependency file.
std::vector<std::string> depfile_headers(const fs::path& depfile) {
  std::ifstream in(depfile);
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto text = replace_all(buffer.str(), "\\\n", " ");
  auto colon = text.find(": ");
  std::vector<std::string> headers;
  if (colon == std::string::npos) return headers;
  std::istringstream words(text.substr(colon + 2));
  std::string word;
  bool first = true;
  while (words >> word) {
    if (first) {  // the source file itself
      first = false;
      continue;
    }
    headers.push_back(word);
  }
  return headers;
}

ChildSpec compiler_spec(const Toolchain& toolchain, const Exercise& exercise, std::vector<std::string> argv,
                        const fs::path& work_dir) {
  ChildSpec spec;
  spec.argv = std::move(argv);
  spec.working_dir = work_dir.string();
  spec.limits.wall_seconds = exercise.compile_seconds;
  spec.limits.cpu_seconds = exercise.compile_seconds;
  spec.limits.output_bytes = 512 * 1024;
  spec.limits.file_size_bytes = 512ull * 1024 * 1024;
  return spec;
}

std::string describe_failure(const ChildOutcome& outcome, const std::string& what) {
  if (outcome.timed_out) return what + " ran past its time limit";
  return what + " failed (" + outcome.describe_end() + ")";
}

}  // namespace

std::string trim_diagnostics(const std::string& text, const std::string& scratch_file, const std::string& shown_as,
                             size_t max_lines) {
  std::istringstream lines(replace_all(text, scratch_file, shown_as));
  std::vector<std::string> kept;
  size_t dropped = 0;
  for (std::string line; std::getline(lines, line);) {
    bool about_learner = line.find(shown_as) != std::string::npos;
    bool error = line.find("error:") != std::string::npos || line.find("undefined reference") != std::string::npos;
    bool context = !kept.empty() && (line.rfind("  ", 0) == 0 || line.rfind(" ", 0) == 0) && line.size() < 200;
    if (about_learner || error || context) {
      if (kept.size() < max_lines) {
        kept.push_back(line.size() > 300 ? line.substr(0, 300) + " ..." : line);
      } else {
        ++dropped;
      }
    }
  }
  if (kept.empty()) return text.substr(0, 4000);
  std::string out;
  for (const auto& line : kept) out += line + "\n";
  if (dropped) out += "(" + std::to_string(dropped) + " more lines of compiler output not shown)\n";
  return out;
}

CompileResult compile_submission(const Toolchain& toolchain, const Exercise& exercise, const fs::path& submission,
                                 const fs::path& work_dir, const fs::path& project_root) {
  auto start = std::chrono::steady_clock::now();
  CompileResult result;
  auto driver = toolchain.drivers.find(exercise.id);
  if (driver == toolchain.drivers.end())
    throw GraderFault("no compiled driver for " + exercise.id + ": rebuild the grader");

  fs::create_directories(work_dir);
  const auto source = work_dir / exercise.learner_files.front();
  fs::copy_file(submission, source, fs::copy_options::overwrite_existing);
  const auto object = work_dir / "submission.o";
  const auto depfile = work_dir / "submission.d";
  result.shared_object = work_dir / "submission.so";

  std::vector<std::string> argv = {toolchain.cxx};
  argv.insert(argv.end(), toolchain.flags.begin(), toolchain.flags.end());
  for (const char* flag : {"-fPIC", "-O0", "-g0", "-fdiagnostics-color=never", "-fmax-errors=20", "-MD"}) {
    argv.push_back(flag);
  }
  argv.insert(argv.end(), {"-MF", depfile.string(), "-iquote", exercise.dir.string(), "-c", source.string(), "-o",
                           object.string()});
  auto compiled = run_child(compiler_spec(toolchain, exercise, argv, work_dir));
  if (compiled.exit_code == 127 && compiled.stderr_text.empty()) {
    throw GraderFault("cannot run the compiler " + toolchain.cxx);
  }
  auto shown_as = submission.string();
  if (!compiled.exited_cleanly()) {
    result.diagnostics = compiled.timed_out ? "the compiler ran past its time limit\n"
                                            : trim_diagnostics(compiled.stderr_text, source.string(), shown_as);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  }

  // The submission may include LibTorch, the standard library and its
  // interface header; nothing else of this project (reference, solutions, ...).
  for (const auto& header : depfile_headers(depfile)) {
    bool interface = fs::weakly_canonical(header) == fs::weakly_canonical(exercise.dir / exercise.interface_header);
    if (!interface && is_within(header, project_root)) {
      bool toolchain_header = std::any_of(toolchain.system_include_dirs.begin(), toolchain.system_include_dirs.end(),
                                          [&](const std::string& dir) { return is_within(header, dir); });
      if (!toolchain_header) {
        result.diagnostics = shown_as + ": includes " + header + "\nA submission may include LibTorch, the standard " +
                             "library and " + exercise.interface_header + " only.\n";
        return result;
      }
    }
  }

  argv = {toolchain.cxx, "-shared", "-o", result.shared_object.string(), object.string(), driver->second.string()};
  auto linked = run_child(compiler_spec(toolchain, exercise, argv, work_dir));
  if (!linked.exited_cleanly()) {
    result.diagnostics = linked.timed_out ? describe_failure(linked, "linking") + "\n"
                                          : trim_diagnostics(linked.stderr_text, source.string(), shown_as);
    return result;
  }

  if (toolchain.nm.empty()) throw GraderFault("the toolchain names no nm: rebuild the grader");
  {
    auto nm = compiler_spec(toolchain, exercise, {toolchain.nm, "-C", object.string()}, work_dir);
    nm.limits.output_bytes = 64 * 1024 * 1024;  // symbol tables of LibTorch code are long
    auto symbols = run_child(nm);
    if (!symbols.exited_cleanly() || symbols.stdout_truncated) {
      throw GraderFault("cannot list the symbols of the compiled submission (nm " + symbols.describe_end() + ")");
    }
    // Besides the exercise's built-ins, nothing may switch off or replace the
    // operator recording the checks rely on.
    auto patterns = exercise.forbidden_symbols;
    patterns.insert(patterns.end(), {"RecordFunctionGuard", "enableRecordFunction", "clearCallbacks", "removeCallback",
                                     "addGlobalCallback", "addThreadLocalCallback"});
    std::istringstream lines(symbols.stdout_text);
    for (std::string line; std::getline(lines, line);) {
      for (const auto& pattern : patterns) {
        if (line.find(pattern) != std::string::npos) {
          result.forbidden_symbols.push_back(pattern + " (compiled into your code)");
          break;
        }
      }
    }
    std::sort(result.forbidden_symbols.begin(), result.forbidden_symbols.end());
    result.forbidden_symbols.erase(std::unique(result.forbidden_symbols.begin(), result.forbidden_symbols.end()),
                                   result.forbidden_symbols.end());
  }
  result.ok = true;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace grader
