#include "judge/compile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "judge/compile_cache.h"
#include "judge/compile_step.h"
#include "judge/early_link.h"
#include "base/command_clock.h"
#include "base/profile.h"
#include "base/errors.h"
#include "judge/include_policy.h"
#include "judge/inline_reach.h"
#include "judge/symbol_rules.h"

namespace grader {
namespace fs = std::filesystem;

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

std::string read_submission(const fs::path& file) {
  // O_NONBLOCK: a FIFO must not hang the grader at open; fstat refuses it below.
  int fd = open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ELOOP) {
      throw InvalidSubmission(file.string() +
                       " is a symbolic link: give the file itself (the grader does not follow links, so a "
                       "submission cannot point it at a file its author may not read)");
    }
    if (errno == ENOENT) throw InvalidSubmission("submission file not found: " + file.string());
    throw InvalidSubmission("cannot read the submission " + file.string() + ": " + std::strerror(errno));
  }
  std::string text;
  struct stat info {};
  bool regular = fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
  bool small = regular && static_cast<uintmax_t>(info.st_size) <= kMaxSubmissionBytes;
  if (small) {
    char buffer[65536];
    ssize_t got;
    while ((got = read(fd, buffer, sizeof(buffer))) > 0 && text.size() <= kMaxSubmissionBytes) {
      text.append(buffer, static_cast<size_t>(got));
    }
    if (got < 0) regular = false;
  }
  close(fd);
  if (!regular) throw InvalidSubmission("the submission " + file.string() + " is not a regular, readable file");
  if (!small || text.size() > kMaxSubmissionBytes) {
    throw InvalidSubmission("the submission " + file.string() + " is larger than " +
                     std::to_string(kMaxSubmissionBytes / 1024) + " KB; it should be a single source file");
  }
  return text;
}

namespace {

// One compile of one submission: what its steps share, and its result as
// it takes shape. Each step below returns false where the result is final.
struct Compilation {
  Compilation(const Toolchain& toolchain_, const Exercise& exercise_, const Submission& submission_,
              const fs::path& work_dir_, const SandboxStatus& sandbox, const Confinement& confinement)
      : toolchain(toolchain_),
        exercise(exercise_),
        submission(submission_),
        work_dir(work_dir_),
        step{exercise_, work_dir_, sandbox, confinement} {}
  const Toolchain& toolchain;
  const Exercise& exercise;
  const Submission& submission;
  const fs::path& work_dir;
  Step step;
  fs::path driver;  // the exercise's library, linked with the learner's object
  bool cuda = false;
  fs::path pch, source, object, depfile;
  std::string shown_as;  // the source's path as the learner knows it
  std::vector<std::string> argv;  // the compiler's command
  EarlyCompile* ahead = nullptr;  // a compile ahead to use (grade watch), or none
  // The linker, started before the object exists (EarlyLink); none where
  // the link goes through the compiler's driver.
  std::unique_ptr<EarlyLink> linker;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  CompileResult result;

  // The result, final, with the time it took.
  CompileResult finished() {
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::move(result);
  }
  // Final: the learner's compile error, said.
  CompileResult failed(std::string diagnostics) {
    result.diagnostics = std::move(diagnostics);
    return finished();
  }
};

// What a compile leaves in the cache: the object and the shared object. The
// cache holds only code that passed the include check, which depends on
// nothing but what the key covers.
const std::vector<std::string> kProducts = {"submission.o", "submission.so"};

// The exercise's compiled library (its driver), or the grader's fault.
fs::path driver_of(const Toolchain& toolchain, const Exercise& exercise) {
  auto driver = toolchain.drivers.find(exercise.id);
  if (driver == toolchain.drivers.end())
    throw GraderFault("no compiled driver for " + exercise.id + ": rebuild the grader");
  // Each exercise is built on its first grade through ./grade.
  if (!fs::exists(driver->second)) {
    throw GraderFault(exercise.id + " is not built yet (" + driver->second.string() + " is missing): `./grade " +
                      exercise.id + "` builds it");
  }
  return driver->second;
}

// No nvcc: the learner's file is not compiled (a grader without nvcc must
// not call it failed). The driver alone, marked so, answers every case with
// the reason; the checks report them skipped.
CompileResult driver_alone(Compilation& c) {
  fs::create_directories(c.work_dir);
  c.result.shared_object = c.work_dir / "submission.so";
  auto linked = c.step.run({c.toolchain.cxx, "-shared", "-o", c.result.shared_object.string(), c.driver.string(),
                            "-Wl,--defsym=grader_learner_not_compiled=grader_run_case"});
  if (!linked.exited_cleanly()) {
    throw GraderFault("cannot link the driver of " + c.exercise.id + " (" + linked.describe_end() +
                      "): " + linked.stderr_text.substr(0, linked.stderr_text.find('\n')));
  }
  c.result.ok = true;
  c.result.not_compiled = "nvcc not found: install the CUDA Toolkit (Debian non-free: nvidia-cuda-toolkit); " +
                          c.exercise.learner_files.front() + " was not compiled";
  return c.finished();
}

// The source, from the text read once (no link followed), readable by the
// sandboxed compiler (user nobody) whatever the original's mode.
void write_source(const Compilation& c) {
  fs::create_directories(c.work_dir);
  {
    std::ofstream out(c.source, std::ios::binary | std::ios::trunc);
    out << c.submission.text;
    if (!out.flush()) throw GraderFault("cannot write " + c.source.string());
  }
  fs::permissions(c.source,
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
}

// nvcc, host code through its default host compiler; no LibTorch flags (a
// kernel file needs none). Device code for the configured GPU, plus its PTX
// so that a newer GPU can compile it at load time.
std::vector<std::string> nvcc_argv(const Compilation& c) {
  const auto arch = c.toolchain.nvcc_arch.empty() ? std::string("80") : c.toolchain.nvcc_arch;
  return {c.toolchain.nvcc,
          "-std=c++17",
          "-O2",
          "-Xcompiler",
          "-fPIC",
          "-gencode",
          "arch=compute_" + arch + ",code=[sm_" + arch + ",compute_" + arch + "]",
          "-MD",
          "-MF",
          c.depfile.string(),
          "-I",
          c.exercise.dir.string(),
          "-c",
          c.source.string(),
          "-o",
          c.object.string()};
}

// An unchanged submission is not compiled again: same source, interface,
// compiler, flags, precompiled header, driver and isolation give the same
// object. The entry's lock is held until this compile is stored.
struct CacheUse {
  fs::path entry;  // empty: no cache, or this compile's result is not to be stored
  std::optional<FileLock> lock;
  bool hit = false;  // the products came from the cache
};

// Looks the submission up in the cache (taking its lock); false where the
// cache holds the compiler's errors for it, which are then the result.
bool look_up(Compilation& c, const fs::path& cache_dir, const std::string& isolation, CacheUse& cache) {
  if (cache_dir.empty()) return true;
  const auto key_argv = c.ahead ? c.ahead->key_argv() : c.argv;  // a compile ahead's: its own command
  cache.entry = cache_dir / cache_key(c.toolchain, c.exercise, c.submission.text, key_argv, c.work_dir, c.pch,
                                      c.driver, isolation, c.ahead ? EarlyCompile::stub_text() : "");
  std::error_code error;
  fs::create_directories(cache_dir, error);
  // Until this compile is done and stored. Another holder runs the same
  // steps under the same limits: compile, link and readelf, each bounded.
  cache.lock.emplace(cache.entry.string() + ".lock",
                     std::chrono::duration<double>(3 * c.exercise.limits.compile.seconds + 10));
  // Found after waiting for the lock's holder, the entry was compiled just
  // now, by that process: reported as compiled, not as unchanged.
  c.result.cached = !cache.lock->waited();
  if (fs::is_directory(cache.entry) && fs::is_regular_file(cache.entry / kCachedErrors)) {
    fs::last_write_time(cache.entry, fs::file_time_type::clock::now(), error);  // recently used
    c.result.diagnostics =
        trim_diagnostics(replace_all(read_file(cache.entry / kCachedErrors), "<scratch>", c.work_dir.string()),
                         c.source.string(), c.shown_as);
    return false;
  }
  if (fs::is_directory(cache.entry) && cached_copy(cache.entry, c.work_dir, kProducts)) {
    // Stored during this command (by the compile that ran beside the
    // grader's start): compiled now, not unchanged since an earlier grade.
    if (!written_before_command((cache.entry / kProducts.front()).string())) c.result.cached = false;
    fs::last_write_time(cache.entry, fs::file_time_type::clock::now(), error);  // recently used
    cache.hit = true;
  } else {
    c.result.cached = false;
  }
  return true;
}

// Runs the compiler (or gives the source to the compile ahead); false where
// the source does not compile, with the compiler's messages as the result.
bool run_compiler(Compilation& c, CacheUse& cache) {
  ChildOutcome compiled;
  if (c.ahead) {
    compiled = c.ahead->finish(c.submission.text, c.source);
    // The source is compiled as itself, and that compile decides, where
    // the compile ahead ended before the source came (its precompiled
    // header rebuilt meanwhile, say), or failed with a message about the
    // stub (an unclosed brace is reported at the end of the main file,
    // which is the stub; or the stub itself broke). Its result is not
    // stored under the key of the compile ahead.
    if (compiled.ended_unasked ||
        (!compiled.exited_cleanly() && compiled.stderr_text.find(c.ahead->stub().string()) != std::string::npos)) {
      compiled = c.step.run(c.argv);
      cache.entry.clear();
    } else {
      c.result.ahead = true;
    }
  } else {
    compiled = c.step.run(c.argv);
  }
  if ((compiled.exit_code == 127 || compiled.exit_code == 125) && compiled.stderr_text.empty()) {
    // 127: exec failed; 125: the child could not join its cgroup or drop privileges.
    throw GraderFault("cannot start the compiler " + c.argv.front() + " (exit status " +
                      std::to_string(compiled.exit_code) + ")");
  }
  if (compiled.exited_cleanly()) return true;
  std::error_code gone;
  if (!fs::is_directory(c.work_dir, gone)) {
    throw GraderFault("the scratch folder " + c.work_dir.string() + " disappeared during the compile");
  }
  // The compiler refusing our precompiled header is not the learner's
  // doing. Its message can be imitated (#line, #error), so a suspicion is
  // settled by compiling an empty file against the same header.
  if (!c.pch.empty() && compiled.stderr_text.find(c.pch.string()) != std::string::npos) {
    std::vector<std::string> probe = {c.toolchain.cxx, "@" + c.toolchain.flags_file.string()};
    for (const auto& option : pch_options(c.toolchain, c.pch)) probe.push_back(option);
    probe.insert(probe.end(), {"-fsyntax-only", "-x", "c++", "/dev/null"});
    auto checked = c.step.run(probe);
    if (!checked.exited_cleanly()) {
      throw GraderFault("the compiler refused the precompiled " +
                        std::string(on_torch_module(c.toolchain, c.pch) ? "LibTorch API " : "interface ") +
                        c.pch.string() + ": " + checked.stderr_text.substr(0, checked.stderr_text.find('\n')) +
                        " (rebuild the grader: ./grade does it)");
    }
  }
  // The compiler's own verdict on the source (not a limit it ran into) is
  // the same on every compile of this key: cached.
  if (!cache.entry.empty() && compiled.exit_code == 1 && !compiled.timed_out && !compiled.memory_exceeded &&
      !compiled.stderr_truncated && diagnoses_the_source(compiled.stderr_text, c.source.string())) {
    std::ofstream errors(c.work_dir / kCachedErrors, std::ios::binary | std::ios::trunc);
    errors << replace_all(compiled.stderr_text, c.work_dir.string(), "<scratch>");
    if (errors.flush()) store_in_cache(cache.entry, c.work_dir, {kCachedErrors});
  }
  c.result.diagnostics = compiled.timed_out         ? "the compiler ran past its time limit\n"
                         : compiled.memory_exceeded ? "the compiler ran out of its memory limit\n"
                         : compiled.term_signal == SIGXFSZ
                             ? c.shown_as + ": the compiled code would be larger than " +
                                   std::to_string(kCompileFileBytes >> 20) +
                                   " MB; remove large initialised arrays or tables\n"
                             : trim_diagnostics(compiled.stderr_text, c.source.string(), c.shown_as);
  return false;
}

// The submission may include LibTorch, the standard library and its
// interface header; nothing else (this project's reference or solutions,
// devices, /proc). Inside the sandbox most of these cannot even be found.
std::optional<std::string> refused_include(const Compilation& c) {
  const auto compiled_files = c.result.ahead ? std::vector<fs::path>{c.source, c.ahead->stub(), c.ahead->pipe()}
                                             : std::vector<fs::path>{c.source};
  const IncludePolicy includes(c.toolchain, c.exercise, c.pch);
  for (const auto& header : depfile_headers(c.depfile, compiled_files)) {
    if (!includes.allows(header)) {
      return c.shown_as + ": includes " + header + "\nA submission may include LibTorch, the standard " +
             "library and " + c.exercise.interface_header + " only.\n";
    }
  }
  return std::nullopt;
}

// An object with LTO sections carries a second symbol list, which tools
// such as nm read (through a plugin) instead of the real one: a submission
// could list what it likes there. The compiler never emits them here.
std::optional<std::string> second_symbol_list(const Compilation& c, const std::string& object_bytes) {
  if (object_bytes.find(".gnu.lto_") == std::string::npos && object_bytes.find("__gnu_lto") == std::string::npos)
    return std::nullopt;
  return c.shown_as +
         ": the compiled code holds link-time-optimisation sections (.gnu.lto_*), "
         "a second symbol list that could hide its symbols from the grader; remove the inline "
         "assembly or section attributes that make them.\n";
}

// The link's command: the linker itself where its command is known, else
// through the compiler's driver. Without a learner object: the control link.
std::vector<std::string> link_argv(const Compilation& c, bool direct, const fs::path& output,
                                   const fs::path& learner_object) {
  return direct ? linker_argv(c.toolchain, c.driver, c.pch, output, learner_object)
                : driver_link_argv(c.toolchain, c.driver, c.pch, output, learner_object);
}

// Links the learner's object with the driver; false where the learner's
// code does not link, with the linker's messages as the result.
bool link(Compilation& c) {
  bool direct = !c.toolchain.link_command.empty() && !c.cuda;
  auto argv = link_argv(c, direct, c.result.shared_object, c.object);
  if (c.cuda) {
    // The kernel's host code calls the CUDA runtime: the toolkit's libcudart
    // (same soname as the one a CUDA LibTorch loads, so one copy at run time).
    if (!c.toolchain.cudart_dir.empty()) {
      argv.insert(argv.end(), {"-L" + c.toolchain.cudart_dir, "-Wl,-rpath," + c.toolchain.cudart_dir});
    }
    argv.push_back("-lcudart");
  }
  ChildOutcome linked;
  if (direct && c.linker && c.linker->waiting() && c.linker->output() == c.result.shared_object) {
    profile::Span span("ld.lld (started before the object was)");
    linked = c.linker->finish(read_file(c.object), c.object);
  } else {
    linked = c.step.run(argv);
  }
  c.linker.reset();
  if (!linked.exited_cleanly() && !linked.timed_out && direct) {
    // The linker's command is what the driver said at configure time: a
    // toolchain updated since may have moved its files. The driver decides.
    direct = false;
    linked = c.step.run(link_argv(c, direct, c.result.shared_object, c.object));
  }
  if (!linked.exited_cleanly() && !linked.timed_out) {
    // Whose fault? The same link without the learner's object settles it
    // (a linker gone, the exercise's library missing are the grader's).
    auto checked = c.step.run(link_argv(c, direct, c.work_dir / "control.so", fs::path()));
    if (!checked.exited_cleanly()) {
      throw GraderFault("cannot link against " + c.driver.string() + " (" + checked.describe_end() +
                        "): " + checked.stderr_text.substr(0, checked.stderr_text.find('\n')) +
                        " (rebuild the grader: ./grade does it)");
    }
  }
  if (linked.exited_cleanly()) return true;
  c.result.diagnostics = linked.timed_out ? describe_failure(linked, "linking") + "\n"
                                          : trim_diagnostics(linked.stderr_text, c.source.string(), c.shown_as);
  return false;
}

// An object's symbol table, by readelf (no plugins: nm loads the LTO
// plugins, LLVMgold among them, 0.1 s per grade). Mangled names (no
// demangling, which can be made to explode) hold the identifiers verbatim.
// Symbol tables of LibTorch code are long.
ChildOutcome list_symbols(const Compilation& c, const fs::path& file) {
  return c.step.run({c.toolchain.readelf, "--syms", "--wide", file.string()}, 64 * 1024 * 1024);
}

// What the exercise's compiled inline functions reach (inline_reach.h), read
// once per file and build: the same for every grade of the exercise.
std::shared_ptr<const InlineReach> inline_reach_of(const Toolchain& toolchain, const Exercise& exercise) {
  static std::mutex mutex;
  static std::map<std::string, std::pair<fs::file_time_type, std::shared_ptr<const InlineReach>>> read;
  auto path = toolchain.inline_reaches.find(exercise.id);
  if (path == toolchain.inline_reaches.end()) return std::make_shared<const InlineReach>();
  std::error_code error;
  const auto written = fs::last_write_time(path->second, error);
  if (error) {
    throw GraderFault("what the compiled inline functions reach (" + path->second.string() +
                      ") is missing: rebuild the grader (./grade does it)");
  }
  std::lock_guard<std::mutex> lock(mutex);
  auto& entry = read[path->second.string()];
  if (!entry.second || entry.first != written)
    entry = {written, std::make_shared<const InlineReach>(read_inline_reach(path->second))};
  return entry.second;
}

// What the code's symbols and bytes show it doing that the checks forbid;
// false where its symbols cannot be listed, which is then the result.
bool audit_symbols(Compilation& c, const ChildOutcome& symbols) {
  if (!symbols.exited_cleanly() || symbols.stdout_truncated) {
    // Whose fault? The same on the exercise's library (built by the grader) settles it.
    auto control = list_symbols(c, c.driver);
    if (!control.exited_cleanly()) {
      throw GraderFault("cannot list symbols with " + c.toolchain.readelf + " (on the grader's own " +
                        c.driver.filename().string() + ": " + control.describe_end() + ")");
    }
    auto reason = symbols.stdout_truncated
                      ? std::string("its symbol table is far too large")
                      : symbols.describe_end() + ": " + symbols.stderr_text.substr(0, symbols.stderr_text.find('\n'));
    c.result.diagnostics = c.shown_as + ": the compiled code cannot be inspected by readelf (" + reason +
                           "); the grader must list its symbols. Remove unusual sections, attributes or inline "
                           "assembly.\n";
    return false;
  }
  auto findings = forbidden_symbols_in(symbols.stdout_text, c.exercise, *inline_reach_of(c.toolchain, c.exercise));
  c.result.forbidden_symbols = std::move(findings.all);
  c.result.refuses_run = std::move(findings.refuses_run);
  // Each of these reaches past the measurements: such code is not run.
  for (auto& found : forbidden_text_in(read_file(c.object))) {
    if (c.result.refuses_run.empty()) c.result.refuses_run = found;
    c.result.forbidden_symbols.push_back(std::move(found));
  }
  return true;
}

}  // namespace

CompileResult compile_submission(const Toolchain& toolchain, const Exercise& exercise, const Submission& submission,
                                 const fs::path& work_dir, const fs::path& cache_dir, const SandboxStatus& sandbox,
                                 const Confinement& confinement, EarlyCompile* ahead) {
  Compilation c(toolchain, exercise, submission, work_dir, sandbox, confinement);
  c.driver = driver_of(toolchain, exercise);
  c.cuda = exercise.gpu_only();
  if (c.cuda && toolchain.nvcc.empty()) return driver_alone(c);
  c.pch = c.cuda ? fs::path() : precompiled_header(toolchain, exercise, includes_all_of_libtorch(submission.text));
  c.source = work_dir / exercise.learner_files.front();
  c.object = work_dir / "submission.o";
  c.depfile = work_dir / "submission.d";
  c.shown_as = submission.path.string();
  c.result.shared_object = work_dir / "submission.so";
  write_source(c);
  c.argv = c.cuda ? nvcc_argv(c) : compiler_argv(toolchain, exercise, c.pch, c.source, work_dir);
  // A compiler started ahead for this grade (grade watch) is used when it
  // loaded the same precompiled header and still waits for its source.
  if (ahead && !c.pch.empty() && ahead->pch() == c.pch && ahead->waiting()) c.ahead = ahead;

  CacheUse cache;
  if (!look_up(c, cache_dir, sandbox.describe(), cache)) return c.finished();
  if (!cache.hit) {
    // Started ahead with the compile ahead (grade watch), else now, beside the compiler.
    if (c.ahead)
      c.linker = c.ahead->take_linker();
    else if (!c.cuda)
      c.linker = EarlyLink::start(c.step, c.toolchain, c.driver, c.pch, c.result.shared_object);
    if (!run_compiler(c, cache)) return c.finished();
    if (auto refused = refused_include(c)) return c.failed(*refused);
  }
  if (toolchain.readelf.empty()) throw GraderFault("the toolchain names no readelf: rebuild the grader");
  if (auto hidden = second_symbol_list(c, read_file(c.object))) return c.failed(*hidden);
  // The submission's symbols are listed while it is linked (two cores).
  auto listing = std::async(std::launch::async, [&c] { return list_symbols(c, c.object); });
  if (!cache.hit) {
    if (!link(c)) return c.finished();
    if (!cache.entry.empty()) {
      store_in_cache(cache.entry, work_dir, kProducts);
      prune_cache(cache_dir);
    }
  }
  cache.lock.reset();  // stored: a grade waiting for this compile takes it from the cache now
  if (!audit_symbols(c, listing.get())) return c.finished();
  c.result.ok = true;
  return c.finished();
}

}  // namespace grader
