#include "compile.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>

#include "errors.h"
#include "process.h"
#include "sha256.h"

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

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw GraderFault("cannot read " + file.string());
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Headers listed in a make-style dependency file (the source itself left out).
std::vector<std::string> depfile_headers(const fs::path& depfile, const fs::path& source) {
  auto text = replace_all(read_file(depfile), "\\\n", " ");
  auto colon = text.find(": ");
  std::vector<std::string> headers;
  if (colon == std::string::npos) return headers;
  std::istringstream words(text.substr(colon + 2));
  std::string word;
  while (words >> word) {
    if (word != source.string() && word != source.filename().string()) headers.push_back(word);
  }
  return headers;
}

// What decides the compiled code: the source, the interface, the compiler and
// its flags, the precompiled header and the driver it is linked with.
std::string cache_key(const Toolchain& toolchain, const Exercise& exercise, const fs::path& submission,
                      const std::vector<std::string>& argv, const fs::path& work_dir, const fs::path& pch,
                      const fs::path& driver) {
  Sha256 hash;
  auto add = [&hash](const std::string& part) {
    hash.update(std::to_string(part.size()) + ":");
    hash.update(part);
  };
  auto add_stamp = [&add](const fs::path& file) {  // large built files: path, size and time
    std::error_code error;
    auto size = fs::file_size(file, error);
    auto time = fs::last_write_time(file, error).time_since_epoch().count();
    add(file.string() + " " + std::to_string(size) + " " + std::to_string(time));
  };
  add("grader compile cache v2");
  add(read_file(submission));
  add(read_file(exercise.dir / exercise.interface_header));
  add(read_file(toolchain.flags_file));
  for (const auto& arg : argv) add(replace_all(arg, work_dir.string(), "<scratch>"));
  add_stamp(toolchain.cxx);
  if (!pch.empty()) add_stamp(pch);
  add_stamp(driver);  // several MB: reading it on every grade would cost more than the stamp says
  return hash.hex();
}

// Copies plain files only: a scratch folder is writable from the sandbox, and
// the grader never follows a link planted there.
bool cached_copy(const fs::path& from_dir, const fs::path& to_dir, const std::vector<std::string>& names) {
  std::error_code error;
  for (const auto& name : names) {
    if (fs::symlink_status(from_dir / name, error).type() != fs::file_type::regular) return false;
    fs::copy_file(from_dir / name, to_dir / name, fs::copy_options::overwrite_existing, error);
    if (error) return false;
  }
  return true;
}

// Stores a compiled submission; concurrent grades of the same file may race,
// the rename makes the last one win with a complete entry.
void store_in_cache(const fs::path& entry, const fs::path& work_dir, const std::vector<std::string>& names) {
  std::error_code error;
  static std::atomic<unsigned> counter{0};  // unique per grade, also between --jobs threads
  auto staging = entry.parent_path() /
                 (entry.filename().string() + ".tmp-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  fs::create_directories(staging, error);
  if (error || !cached_copy(work_dir, staging, names)) {
    fs::remove_all(staging, error);
    return;
  }
  fs::remove_all(entry, error);
  fs::rename(staging, entry, error);
  if (error) fs::remove_all(staging, error);
}

// Keeps the cache to its newest entries.
void prune_cache(const fs::path& dir, size_t keep) {
  std::error_code error;
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    if (entry.path().filename().string().find(".tmp-") != std::string::npos) continue;  // being written
    entries.emplace_back(fs::last_write_time(entry.path(), error), entry.path());
  }
  if (entries.size() <= keep) return;
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = keep; i < entries.size(); ++i) fs::remove_all(entries[i].second, error);
}

// The compiler, linker and nm run with the exercise's compile limits, in the
// same sandbox as learner code: a source file can make a compiler hang or try
// to include any file it can see.
struct Step {
  const Exercise& exercise;
  const fs::path& work_dir;
  const SandboxStatus& sandbox;
  const Confinement& confinement;

  ChildOutcome run(std::vector<std::string> argv, size_t output_bytes = 0) const {
    ChildSpec spec;
    spec.argv = std::move(argv);
    spec.working_dir = work_dir.string();
    spec.limits = child_limits(exercise.limits.compile);
    if (output_bytes) spec.limits.output_bytes = output_bytes;
    spec.limits.file_size_bytes = 512ull * 1024 * 1024;
    sandbox_child(sandbox, confinement, spec);
    return run_child(spec);
  }
};

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
                                 const fs::path& work_dir, const fs::path& project_root, const fs::path& cache_dir,
                                 const SandboxStatus& sandbox, const Confinement& confinement) {
  const Step step{exercise, work_dir, sandbox, confinement};
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&start] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  CompileResult result;
  auto driver = toolchain.drivers.find(exercise.id);
  if (driver == toolchain.drivers.end())
    throw GraderFault("no compiled driver for " + exercise.id + ": rebuild the grader");
  fs::path pch;
  if (auto found = toolchain.pchs.find(exercise.id); found != toolchain.pchs.end()) {
    pch = found->second;
    std::error_code error;
    auto header_time = fs::last_write_time(exercise.dir / exercise.interface_header, error);
    if (!fs::exists(pch) || error || fs::last_write_time(pch) < header_time) {
      throw GraderFault("the precompiled interface " + pch.string() + " is missing or older than " +
                        exercise.interface_header + ": rebuild the grader (./grade does it)");
    }
  }

  fs::create_directories(work_dir);
  const auto source = work_dir / exercise.learner_files.front();
  fs::copy_file(submission, source, fs::copy_options::overwrite_existing);
  // Readable by the sandboxed compiler (user nobody), whatever the original's mode.
  fs::permissions(source,
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  const auto object = work_dir / "submission.o";
  const auto depfile = work_dir / "submission.d";
  result.shared_object = work_dir / "submission.so";
  // The cache holds only code that passed the include check below, which
  // depends on nothing but what the key covers.
  const std::vector<std::string> products = {"submission.o", "submission.so"};

  bool gcc_style = toolchain.cxx.find("clang") == std::string::npos;
  std::vector<std::string> argv = {toolchain.cxx, "@" + toolchain.flags_file.string(), "-fdiagnostics-color=never",
                                   gcc_style ? "-fmax-errors=20" : "-ferror-limit=20", "-MD"};
  if (!pch.empty()) argv.insert(argv.end(), {"-include-pch", pch.string()});
  argv.insert(argv.end(), {"-MF", depfile.string(), "-iquote", exercise.dir.string(), "-c", source.string(), "-o",
                           object.string()});

  // An unchanged submission is not compiled again: same source, interface,
  // compiler, flags, precompiled header and driver give the same object.
  fs::path cache_entry;
  if (!cache_dir.empty()) {
    cache_entry = cache_dir / cache_key(toolchain, exercise, source, argv, work_dir, pch, driver->second);
    if (fs::is_directory(cache_entry) && cached_copy(cache_entry, work_dir, products)) {
      std::error_code error;
      fs::last_write_time(cache_entry, fs::file_time_type::clock::now(), error);  // recently used
      result.cached = true;
    }
  }

  auto shown_as = submission.string();
  if (!result.cached) {
    auto compiled = step.run(argv);
    if ((compiled.exit_code == 127 || compiled.exit_code == 125) && compiled.stderr_text.empty()) {
      // 127: exec failed; 125: the child could not join its cgroup or drop privileges.
      throw GraderFault("cannot start the compiler " + toolchain.cxx + " (exit status " +
                        std::to_string(compiled.exit_code) + ")");
    }
    if (!compiled.exited_cleanly()) {
      // The compiler refusing our precompiled header is not the learner's
      // doing. Its message can be imitated (#line, #error), so a suspicion is
      // settled by compiling an empty file against the same header.
      if (!pch.empty() && compiled.stderr_text.find(pch.string()) != std::string::npos) {
        std::vector<std::string> probe = {toolchain.cxx,   "@" + toolchain.flags_file.string(),
                                          "-include-pch",  pch.string(),
                                          "-fsyntax-only", "-x",
                                          "c++",           "/dev/null"};
        auto checked = step.run(probe);
        if (!checked.exited_cleanly()) {
          throw GraderFault("the compiler refused the precompiled interface " + pch.string() + ": " +
                            checked.stderr_text.substr(0, checked.stderr_text.find('\n')) +
                            " (rebuild the grader: ./grade does it)");
        }
      }
      result.diagnostics = compiled.timed_out ? "the compiler ran past its time limit\n"
                           : compiled.memory_exceeded
                               ? "the compiler ran out of its memory limit\n"
                               : trim_diagnostics(compiled.stderr_text, source.string(), shown_as);
      result.seconds = elapsed();
      return result;
    }
  }

  // The submission may include LibTorch, the standard library and its
  // interface header; nothing else of this project (reference, solutions, ...).
  for (const auto& header : result.cached ? std::vector<std::string>() : depfile_headers(depfile, source)) {
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

  if (!result.cached) {
    argv = {toolchain.cxx, "-shared", "-o", result.shared_object.string(), object.string(), driver->second.string()};
    auto linked = step.run(argv);
    if (!linked.exited_cleanly()) {
      result.diagnostics = linked.timed_out ? describe_failure(linked, "linking") + "\n"
                                            : trim_diagnostics(linked.stderr_text, source.string(), shown_as);
      return result;
    }
    if (!cache_entry.empty()) {
      store_in_cache(cache_entry, work_dir, products);
      prune_cache(cache_dir, 200);
    }
  }

  if (toolchain.nm.empty()) throw GraderFault("the toolchain names no nm: rebuild the grader");
  {
    // Mangled names (no -C: demangling can be made to explode) hold the
    // identifiers verbatim. Symbol tables of LibTorch code are long.
    auto symbols = step.run({toolchain.nm, object.string()}, 64 * 1024 * 1024);
    if (symbols.stdout_truncated || symbols.memory_exceeded || symbols.timed_out) {
      result.diagnostics = shown_as + ": the compiled code's symbol table is too large to check (" +
                           symbols.describe_end() + "); it should be small for this exercise.\n";
      result.ok = false;
      return result;
    }
    if (!symbols.exited_cleanly()) {
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
  result.seconds = elapsed();
  return result;
}

}  // namespace grader
