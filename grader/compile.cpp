#include "compile.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

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

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw GraderFault("cannot read " + file.string());
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Headers listed in a make-style dependency file (the compiled files left
// out: the source, or a compile ahead's stub and its pipe); "\ " is an
// escaped space, "$$" an escaped dollar.
std::vector<std::string> depfile_headers(const fs::path& depfile, const std::vector<fs::path>& compiled) {
  const auto text = read_file(depfile);
  auto colon = text.find(": ");
  std::vector<std::string> headers;
  if (colon == std::string::npos) return headers;
  std::set<std::string> ours;
  for (const auto& file : compiled) ours.insert({file.string(), file.filename().string()});
  std::string word;
  auto flush = [&] {
    if (!word.empty() && !ours.count(word)) headers.push_back(word);
    word.clear();
  };
  for (size_t i = colon + 2; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == ' ') {
      word += ' ';
      ++i;
    } else if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {  // a continued line
      flush();
      ++i;
    } else if (c == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      word += '$';
      ++i;
    } else if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      flush();
    } else {
      word += c;
    }
  }
  flush();
  return headers;
}

// Where a submission's includes may come from: the exercise's interface, the
// toolchain's (LibTorch's) include folders and the system's headers (the C++
// library, the compiler's own). Anything else (another file of this project,
// /dev/stdin, /proc/...) is refused as the learner's compile error.
// Decided on the text of the paths alone: they are the compiler's view inside
// the sandbox, and touching them from the grader (a /proc/self/fd/N, a device)
// would be acting on the learner's behalf. (A compile lists thousands of
// headers: the allowed places are normalised once.)
class IncludePolicy {
 public:
  IncludePolicy(const Toolchain& toolchain, const Exercise& exercise, const fs::path& pch) {
    for (const auto& file : {exercise.dir / exercise.interface_header, pch, fs::path(toolchain.prelude),
                             fs::path(toolchain.pch_support)}) {
      if (!file.empty()) files_.insert(file.lexically_normal());
    }
    // LibTorch's API module: its map, and what it is built from, read with it.
    if (!pch.empty() && pch == fs::path(toolchain.torch_module)) {
      for (const auto& file : {toolchain.torch_module_map, toolchain.torch_api_header}) {
        if (!file.empty()) files_.insert(fs::path(file).lexically_normal());
      }
    }
    std::vector<fs::path> dirs = {"/usr/include", "/usr/lib", "/usr/local/include"};
    // The CUDA Toolkit's own headers (for a .cu; under /usr/local/cuda, say),
    // by the configured path or the one its links lead to.
    if (!toolchain.cuda_root.empty()) {
      dirs.push_back(toolchain.cuda_root);
      std::error_code error;
      auto real = fs::weakly_canonical(toolchain.cuda_root, error);
      if (!error) dirs.push_back(real);
    }
    dirs.insert(dirs.end(), toolchain.system_include_dirs.begin(), toolchain.system_include_dirs.end());
    for (const auto& dir : dirs) {
      auto text = dir.lexically_normal().string();
      while (text.size() > 1 && text.back() == '/') text.pop_back();
      dirs_.push_back(text);
    }
  }
  bool allows(const std::string& header) const {
    const fs::path path = fs::path(header).lexically_normal();
    const std::string& file = path.string();
    return files_.count(path) || std::any_of(dirs_.begin(), dirs_.end(), [&file](const std::string& dir) {
             return file.size() > dir.size() && file.compare(0, dir.size(), dir) == 0 && file[dir.size()] == '/';
           });
  }

 private:
  std::set<fs::path> files_;
  std::vector<std::string> dirs_;  // normalised, no trailing '/'
};

// What decides the compiled code: the source, the interface, the compiler and
// its flags, the precompiled header and the driver it is linked with.
std::string cache_key(const Toolchain& toolchain, const Exercise& exercise, const std::string& source_text,
                      const std::vector<std::string>& argv, const fs::path& work_dir, const fs::path& pch,
                      const fs::path& driver, const std::string& isolation, const std::string& stub_text) {
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
  add("grader compile cache v3");
  add(isolation);  // what isolated the compiler that produced the entry
  add(source_text);
  add(stub_text);  // a compile ahead's stub (empty: the source compiled as itself)
  add(read_file(exercise.dir / exercise.interface_header));
  add(read_file(toolchain.flags_file));
  for (const auto& arg : argv) add(replace_all(arg, work_dir.string(), "<scratch>"));
  add_stamp(argv.front());  // the compiler
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

// The cache's bounds: an entry larger than this is not stored (a correct
// submission compiles to a few MB), and the oldest entries go beyond these.
constexpr uintmax_t kCacheEntryMaxBytes = 64ull << 20;
constexpr uintmax_t kCacheMaxBytes = 1ull << 30;
constexpr size_t kCacheMaxEntries = 200;

uintmax_t entry_bytes(const fs::path& entry) {
  std::error_code error;
  uintmax_t total = 0;
  for (const auto& file : fs::directory_iterator(entry, error)) {
    auto size = fs::file_size(file.path(), error);
    if (!error) total += size;
  }
  return total;
}

// Stores a compiled submission; concurrent grades of the same file may race,
// the rename makes the last one win with a complete entry.
void store_in_cache(const fs::path& entry, const fs::path& work_dir, const std::vector<std::string>& names) {
  std::error_code error;
  uintmax_t bytes = 0;
  for (const auto& name : names) bytes += fs::file_size(work_dir / name, error);
  if (error || bytes > kCacheEntryMaxBytes) return;
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

// Keeps the cache to its newest entries, within kCacheMaxEntries and kCacheMaxBytes.
void prune_cache(const fs::path& dir) {
  std::error_code error;
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  const auto stale = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const auto name = entry.path().filename().string();
    if (name.find(".tmp-") != std::string::npos) continue;  // being written
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0) {
      // A compile's lock (compile_submission), kept while one may hold it.
      auto entry_dir = entry.path();
      entry_dir.replace_extension();
      if (!fs::exists(entry_dir, error) && fs::last_write_time(entry.path(), error) < stale)
        fs::remove(entry.path(), error);
      continue;
    }
    entries.emplace_back(fs::last_write_time(entry.path(), error), entry.path());
  }
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  uintmax_t total = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    total += entry_bytes(entries[i].second);
    if (i >= kCacheMaxEntries || total > kCacheMaxBytes) fs::remove_all(entries[i].second, error);
  }
}

// Holds an exclusive lock on a file (flock) for its lifetime; the kernel
// releases it when the process ends however it ends. Waits at most
// `patience` for another holder; without the lock (the file cannot be made,
// or the holder is stuck) the compile goes ahead unlocked.
class FileLock {
 public:
  FileLock(const fs::path& file, std::chrono::duration<double> patience) {
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd_ < 0) return;
    ::futimens(fd_, nullptr);  // in use now: the cache's pruning keeps it
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    waited_ = true;
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if ((errno != EWOULDBLOCK && errno != EINTR) || std::chrono::steady_clock::now() > deadline) {
        ::close(fd_);
        fd_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool waited() const { return waited_; }  // another process held it

 private:
  int fd_ = -1;
  bool waited_ = false;
};

// A compile that failed with the compiler's errors is cached as those errors,
// with the scratch folder's path kept out (it differs per grade).
const char* const kCachedErrors = "compiler-errors.txt";

// Whether a failed compile's messages are the compiler's verdict on the
// source (an error located in it), not a failure around it: the sandbox
// (`bwrap: ...`), the driver (`clang: error: ...`: no output file, no space).
// Only such a verdict is cached.
bool diagnoses_the_source(const std::string& stderr_text, const std::string& source) {
  bool located = false;
  std::istringstream lines(stderr_text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("bwrap:", 0) == 0 || line.rfind("clang: ", 0) == 0 || line.rfind("clang++: ", 0) == 0 ||
        line.find("unable to open output") != std::string::npos || line.find("fatal error: ") != std::string::npos) {
      return false;
    }
    if (line.rfind(source + ":", 0) == 0 && line.find(": error: ") != std::string::npos) located = true;
  }
  return located;
}

// What one compile step may write per file: a submission's object is a few MB,
// and the step writes three files (object, dependencies, shared object), so a
// grade's disk use stays bounded whatever the source asks the compiler for.
constexpr size_t kCompileFileBytes = 128ull << 20;

// The compiler, linker and readelf run with the exercise's compile limits, in the
// same sandbox as learner code: a source file can make a compiler hang or try
// to include any file it can see.
struct Step {
  const Exercise& exercise;
  const fs::path& work_dir;
  const SandboxStatus& sandbox;
  const Confinement& confinement;

  ChildOutcome run(std::vector<std::string> argv, size_t output_bytes = 0, std::string request = "") const {
    return run_child(spec(std::move(argv), output_bytes, std::move(request)));
  }
  ChildSpec spec(std::vector<std::string> argv, size_t output_bytes = 0, std::string request = "") const {
    ChildSpec spec;
    spec.argv = std::move(argv);
    spec.request = std::move(request);
    spec.working_dir = work_dir.string();
    spec.limits = child_limits(exercise.limits.compile);
    if (output_bytes) spec.limits.output_bytes = output_bytes;
    spec.limits.file_size_bytes = kCompileFileBytes;
    sandbox_child(sandbox, confinement, spec);
    return spec;
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

// Names a submission's compiled code may not mention, whatever the exercise:
// each would let it run or hide work the checks must see. Matched in mangled
// names, which hold every identifier verbatim.
struct SymbolRule {
  const char* pattern;
  const char* why;
  bool exact;                // the whole (C) symbol name, not a part of it
  bool refuses_run = false;  // the code is not run at all (it reaches into the grader itself, or past its measurements)
};
const SymbolRule kJudgeRules[] = {
    {"RecordFunction", "drives or switches off LibTorch's operator recording, which the grader relies on", false},
    {"record_function", "edits LibTorch's operator-recording state, which the grader relies on", false},
    {"GlobalCallback", "installs or removes operator callbacks, which the grader relies on", false},
    {"ThreadLocalCallback", "installs or removes operator callbacks, which the grader relies on", false},
    {"removeCallback", "removes the grader's operator callback", false},
    {"clearCallbacks", "removes the grader's operator callback", false},
    {"disableCallback", "disables the grader's operator callback", false},
    // An operator's implementation called directly skips the dispatcher, and so the recording.
    {"2at6native", "calls an operator's implementation (at::native) directly, bypassing the dispatcher", false},
    {"2at3cpu", "calls a CPU kernel (at::cpu) directly, bypassing the dispatcher", false},
    {"2at4cuda", "calls a CUDA kernel (at::cuda) directly, bypassing the dispatcher", false},
    {"2at4meta", "calls an operator's meta function directly, bypassing the dispatcher", false},
    {"2at27composite", "calls an operator's composite implementation directly, bypassing the dispatcher", false},
    {"2at36composite", "calls an operator's composite implementation directly, bypassing the dispatcher", false},
    {"2at10redispatch", "re-dispatches an operator past the dispatcher's recording", false},
    {"10redispatchE", "re-dispatches an operator past the dispatcher's recording", false},
    {"12VariableType", "calls autograd's kernels directly, bypassing the dispatcher", false},
    // The driver is loaded with the learner's code (its library, or linked in
    // for a CUDA exercise): a definition of one of its functions or a call
    // into it would let learner code steer what the runner records.
    {"N6grader", "defines or calls the grader's own code (namespace grader)", false, true},
    {"NK6grader", "defines or calls the grader's own code (namespace grader)", false, true},
    {"grader_run_case", "defines or calls the grader's entry point", true, true},
    // Looking functions up by a name built at run time hides them from this list.
    {"dlsym", "looks functions up by name at run time", true},
    {"dlvsym", "looks functions up by name at run time", true},
    {"dlopen", "loads libraries at run time", true},
    {"dlmopen", "loads libraries at run time", true},
    {"dladdr", "inspects loaded libraries at run time", true},
    {"dladdr1", "inspects loaded libraries at run time", true},
    {"dlinfo", "inspects loaded libraries at run time", true},
    {"dl_iterate_phdr", "walks the loaded libraries at run time", true},
    {"_r_debug", "walks the loaded libraries at run time", true},
    {"__libc_dlsym", "looks functions up by name at run time", true},
    {"__libc_dlopen_mode", "loads libraries at run time", true},
    {"_dl_sym", "looks functions up by name at run time", true},
    // The dispatcher called by hand: an operator looked up by a name built at
    // run time, or a boxed call or re-dispatch, is out of this list's sight
    // and, for some entry points, out of the recording's.
    {"10Dispatcher", "calls LibTorch's dispatcher by hand (operators by name, boxed calls)", false, true},
    {"14OperatorHandle", "calls LibTorch's dispatcher by hand (operators by name, boxed calls)", false, true},
    {"callBoxed", "calls LibTorch's dispatcher by hand (operators by name, boxed calls)", false, true},
    {"redispatchBoxed", "calls LibTorch's dispatcher by hand (operators by name, boxed calls)", false, true},
    {"findSchema", "calls LibTorch's dispatcher by hand (operators by name, boxed calls)", false, true},
    {"14KernelFunction", "calls an operator's kernel by hand, bypassing the dispatcher", false, true},
    {"13OperatorEntry", "calls an operator's kernel by hand, bypassing the dispatcher", false, true},
    // LibTorch's thread-local state holds the recording's callbacks and the
    // dispatcher's keys: replacing it hides operators from the recording.
    {"ThreadLocalState", "replaces LibTorch's thread-local state, which holds the grader's operator recording", false,
     true},
    {"LocalDispatchKeySet", "edits the dispatcher's thread-local keys", false, true},
    {"tls_local_dispatch_key_set", "edits the dispatcher's thread-local keys", false, true},
    // The runner's result channel is a file descriptor: attention code has no
    // business duplicating, replacing or reconfiguring descriptors.
    {"dup", "duplicates or replaces file descriptors (the grader's result channel is one)", true, true},
    {"dup2", "duplicates or replaces file descriptors (the grader's result channel is one)", true, true},
    {"dup3", "duplicates or replaces file descriptors (the grader's result channel is one)", true, true},
    {"fcntl", "reconfigures file descriptors (the grader's result channel is one)", true, true},
    {"fcntl64", "reconfigures file descriptors (the grader's result channel is one)", true, true},
    // The process's own ELF tables and memory, walked or patched by hand,
    // reach functions without naming them to the linker.
    {"getauxval", "walks the process's own program headers (ELF) at run time", true, true},
    {"_DYNAMIC", "walks the process's own dynamic section (ELF) at run time", true, true},
    {"__libc_stack_end", "walks the process's own start-up data at run time", true, true},
    {"mprotect", "changes the protection of memory (to patch loaded code)", true, true},
    // Memory the runner's accounting of malloc and its family would not see.
    {"mmap", "maps memory by hand, past the grader's memory accounting", true, true},
    {"mmap64", "maps memory by hand, past the grader's memory accounting", true, true},
    {"mremap", "maps memory by hand, past the grader's memory accounting", true, true},
    {"brk", "moves the heap's end by hand, past the grader's memory accounting", true, true},
    {"sbrk", "moves the heap's end by hand, past the grader's memory accounting", true, true},
    {"memfd_create", "maps memory by hand, past the grader's memory accounting", true, true},
    {"__libc_malloc", "calls the C library's allocator by its inner name, past the grader's memory accounting", true,
     true},
    {"__libc_calloc", "calls the C library's allocator by its inner name, past the grader's memory accounting", true,
     true},
    {"__libc_realloc", "calls the C library's allocator by its inner name, past the grader's memory accounting", true,
     true},
    {"__libc_memalign", "calls the C library's allocator by its inner name, past the grader's memory accounting", true,
     true},
    {"syscall", "makes raw system calls, past the C library", true, true},
};

// Text in the compiled code (its string constants) that attention code has
// no business holding, matched in the object's bytes after its ELF header.
// (Not ELF's own magic number: a CUDA object embeds its kernels as ELF files.)
struct TextRule {
  const char* text;
  const char* why;
};
const TextRule kTextRules[] = {
    {"/proc", "reads the process's entries under /proc (its descriptors, memory map, command line)"},
};

// One symbol of `readelf --syms --wide` (no demangling):
// "  Num: Value Size Type Bind Vis [Other] Ndx Name", Ndx UND for an imported
// one; "[Other]" (flags some targets keep beside the visibility, such as
// AArch64's [VARIANT_PCS]) may hold blanks. Defined file and section symbols
// name no code (nm does not list them) and are left out.
struct Symbol {
  bool imported = false;
  std::string name;
};
std::optional<Symbol> parse_readelf_line(const std::string& line) {
  std::istringstream words(line);
  std::vector<std::string> parts;
  for (std::string word; words >> word;) parts.push_back(word);
  if (parts.size() < 8 || parts[0].size() < 2 || parts[0].back() != ':' ||
      parts[0].find_first_not_of("0123456789") != parts[0].size() - 1) {
    return std::nullopt;  // a heading
  }
  size_t at = 6;
  if (parts[at].front() == '[') {  // the flags after the visibility, up to their ']'
    while (at < parts.size() && parts[at].back() != ']') ++at;
    ++at;
  }
  if (at + 1 >= parts.size()) return std::nullopt;
  const bool imported = parts[at] == "UND";
  if (!imported && (parts[3] == "FILE" || parts[3] == "SECTION")) return std::nullopt;
  Symbol symbol{imported, parts[at + 1]};
  for (size_t i = at + 2; i < parts.size(); ++i) symbol.name += " " + parts[i];  // a name with blanks
  if (auto version = symbol.name.find('@'); version != std::string::npos) symbol.name.resize(version);
  return symbol;
}

}  // namespace

SymbolFindings forbidden_symbols_in(const std::string& symbol_table, const Exercise& exercise) {
  std::map<std::string, std::string> found;  // what it means -> the first symbol that showed it
  std::string refusing;                      // the first what of a rule that refuses the run
  auto note = [&found](const std::string& what, const std::string& symbol) {
    found.emplace(what, symbol.size() > 100 ? symbol.substr(0, 100) + "..." : symbol);
  };
  std::istringstream lines(symbol_table);
  for (std::string line; std::getline(lines, line);) {
    auto symbol = parse_readelf_line(line);
    if (!symbol) continue;
    const bool imported = symbol->imported;
    for (const auto& rule : kJudgeRules) {
      if (rule.exact ? symbol->name == rule.pattern : symbol->name.find(rule.pattern) != std::string::npos) {
        note(std::string("your code ") + rule.why, symbol->name);
        if (rule.refuses_run && refusing.empty()) refusing = std::string("your code ") + rule.why;
      }
    }
    // The exercise's built-ins, wherever they appear (inline ones are compiled in).
    for (const auto& pattern : exercise.forbidden_symbols) {
      if (symbol->name.find(pattern) != std::string::npos) note(pattern + " is compiled into your code", symbol->name);
    }
    // A forbidden operator reached without the dispatcher's recording still
    // has to be linked: its name is among the imported symbols. (Defined
    // symbols are the learner's own, whose names may echo the exercise.)
    for (const auto& pattern : exercise.forbidden_operators) {
      if (imported && symbol->name.find(pattern) != std::string::npos) {
        note("the forbidden operator " + pattern + " is called by your code", symbol->name);
      }
    }
  }
  SymbolFindings findings;
  for (const auto& [what, symbol] : found) {
    findings.all.push_back(what + " (symbol " + symbol + ")");
    if (what == refusing) findings.refuses_run = findings.all.back();
  }
  return findings;
}

std::vector<std::string> forbidden_text_in(const std::string& object_bytes) {
  std::vector<std::string> found;
  const size_t header = std::min<size_t>(object_bytes.size(), 4);  // an ELF file starts with its own magic
  for (const auto& rule : kTextRules) {
    std::string text = rule.text;
    auto at = object_bytes.find(text, header);
    if (at == std::string::npos) continue;
    // Shown: the printable run of text around the match (a string constant).
    size_t begin = at, end = at + text.size();
    auto printable = [](char c) { return c >= 0x20 && c < 0x7f; };
    while (begin > header && printable(object_bytes[begin - 1]) && at - begin < 60) --begin;
    while (end < object_bytes.size() && printable(object_bytes[end]) && end - at < 60) ++end;
    auto shown = object_bytes.substr(begin, end - begin);
    for (auto& c : shown) c = printable(c) ? c : '?';
    found.push_back(std::string("your code ") + rule.why + " (text \"" + shown + "\")");
  }
  return found;
}

// Scanned by hand, line by line: the text is the learner's, up to 1 MB, and a
// regular expression over it can exhaust the stack (libstdc++ recurses per
// character of a repetition).
bool includes_all_of_libtorch(const std::string& text) {
  auto names_all_of_libtorch = [](std::string_view line) {
    auto skip_blanks = [&line] {
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    };
    auto take = [&line](std::string_view word) {
      if (line.substr(0, word.size()) != word) return false;
      line.remove_prefix(word.size());
      return true;
    };
    skip_blanks();
    if (!take("#")) return false;
    skip_blanks();
    if (!take("include")) return false;
    skip_blanks();
    if (!take("<") && !take("\"")) return false;
    return (take("torch/torch.h") || take("torch/all.h")) && (take(">") || take("\""));
  };
  const std::string_view all(text);
  for (size_t start = 0; start < all.size();) {
    const size_t end = std::min(all.find('\n', start), all.size());
    if (names_all_of_libtorch(all.substr(start, end - start))) return true;
    start = end + 1;
  }
  return false;
}

Confinement grade_confinement(const Toolchain& toolchain, const Exercise& exercise, const fs::path& project_root,
                              const fs::path& build_dir, const fs::path& submission_dir,
                              const std::vector<fs::path>& hide, const fs::path& scratch) {
  Confinement confinement;
  confinement.hidden = {project_root.string(), build_dir.string(), submission_dir.string()};
  for (const auto& dir : hide) confinement.hidden.push_back(dir.string());
  confinement.read_only = toolchain.system_include_dirs;
  confinement.read_only.insert(confinement.read_only.end(), toolchain.library_dirs.begin(),
                               toolchain.library_dirs.end());
  confinement.read_only.insert(confinement.read_only.end(),
                               {(exercise.dir / exercise.interface_header).string(), toolchain.flags_file.string()});
  confinement.executed.push_back(toolchain.runner.string());
  if (!toolchain.prelude.empty()) confinement.read_only.push_back(toolchain.prelude);
  if (!toolchain.pch_support.empty()) confinement.read_only.push_back(toolchain.pch_support);
  if (auto driver = toolchain.drivers.find(exercise.id); driver != toolchain.drivers.end())
    confinement.read_only.push_back(driver->second.string());
  if (auto pch = toolchain.pchs.find(exercise.id); pch != toolchain.pchs.end())
    confinement.read_only.push_back(pch->second.string());
  if (!toolchain.pch_base.empty()) confinement.read_only.push_back(toolchain.pch_base);
  for (const auto& file : {toolchain.torch_module, toolchain.torch_module_map, toolchain.torch_api_header}) {
    if (!file.empty()) confinement.read_only.push_back(file);
  }
  confinement.writable = confinement.work_dir = scratch.string();
  return confinement;
}

namespace {

// The module name grader/CMakeLists.txt gives LibTorch's API in its module map.
constexpr const char* kTorchApiModule = "grader_torch_api";

// The precompiled header a C++ submission is compiled against: the
// exercise's interface, or, for a submission that includes all of LibTorch's
// C++ API (as most real code does), that API as a prebuilt Clang module (with
// the prelude and pch_support.h; the interface header is then force-included,
// before the source): in a module, unlike a precompiled header, the vtables
// the headers name are defined once, when it is built, not again in every
// submission (docs/performance.md). Only the speed depends on this guess.
// Empty where the exercise has none.
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
  }
  return pch;
}

// The options that load `pch`: a precompiled header, or LibTorch's API
// module, with only its map given (no module found by a path the source
// names) and prebuilt (none is built in the sandbox), the prelude, one of its
// headers, imported first.
std::vector<std::string> pch_options(const Toolchain& toolchain, const fs::path& pch) {
  if (pch != toolchain.torch_module) return {"-include-pch", pch.string()};
  return {"-fmodules",
          "-fno-implicit-modules",
          "-fno-implicit-module-maps",
          "-fmodule-map-file=" + toolchain.torch_module_map,
          "-fmodule-file=" + std::string(kTorchApiModule) + "=" + pch.string(),
          "-include",
          toolchain.prelude};
}

// The C++ compiler's command for `source`, into work_dir's submission.o
// (dependencies: submission.d).
std::vector<std::string> compiler_argv(const Toolchain& toolchain, const Exercise& exercise, const fs::path& pch,
                                       const fs::path& source, const fs::path& work_dir) {
  bool gcc_style = toolchain.cxx.find("clang") == std::string::npos;
  std::vector<std::string> argv = {toolchain.cxx, "@" + toolchain.flags_file.string(), "-fdiagnostics-color=never",
                                   gcc_style ? "-fmax-errors=20" : "-ferror-limit=20", "-MD"};
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

// What a compile ahead compiles (EarlyCompile): class templates of the
// standard library instantiated for a type of its own, which makes the
// compiler load what the precompiled header holds of them (the first use of
// the header costs every compile about 0.3 s, whatever the source), then the
// source itself, from the pipe on fd 3, through a link whose name the source
// cannot know (so its own `#include "/dev/fd/3"` is refused, as in a compile
// of the file itself). It defines nothing a submission can see or call.
const char* const kAheadStub = R"(// grade watch: compiled ahead of the next save (grader/compile.cpp)
namespace __grader_ahead {
struct Warm {};
static_assert(sizeof(std::shared_ptr<const Warm>) > 0, "");
static_assert(sizeof(std::vector<Warm>) > 0, "");
}  // namespace __grader_ahead
#include "<pipe>"
)";

std::string random_token() {
  std::random_device random;
  std::ostringstream token;
  token << std::hex << std::setfill('0');
  for (int i = 0; i < 2; ++i) token << std::setw(8) << random();
  return token.str();
}

// The source as a compile ahead reads it: its lines keep their numbers and
// its file name (#line), as in a compile of the file itself; a byte-order
// mark stays first.
std::string ahead_source(const std::string& text, const fs::path& source) {
  const std::string bom = "\xEF\xBB\xBF";
  const bool marked = text.compare(0, bom.size(), bom) == 0;
  return (marked ? bom : "") + "#line 1 \"" + source.string() + "\"\n" + text.substr(marked ? bom.size() : 0);
}

// The compiler's messages without the stub's "In file included from" lines.
std::string without_stub_lines(const std::string& text, const fs::path& stub) {
  const std::string prefix = "In file included from " + stub.string() + ":";
  std::istringstream lines(text);
  std::string out;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) != 0) out += line + "\n";
  }
  return out;
}

}  // namespace

EarlyCompile::EarlyCompile(const Toolchain& toolchain, const Exercise& exercise, const fs::path& work_dir,
                           bool libtorch_api, const SandboxStatus& sandbox, const Confinement& confinement) {
  if (exercise.gpu_only()) return;  // nvcc: not started ahead
  // Its paths are written into #include and #line, which cannot hold every character.
  if (work_dir.string().find_first_of("\"\\\n") != std::string::npos) return;
  pch_ = precompiled_header(toolchain, exercise, libtorch_api);
  if (pch_.empty()) return;
  token_ = random_token();
  stub_ = work_dir / ("ahead-" + token_ + ".cpp");
  pipe_ = work_dir / ("ahead-" + token_ + ".src");
  {
    std::ofstream out(stub_, std::ios::binary | std::ios::trunc);
    out << replace_all(kAheadStub, "<pipe>", pipe_.string());
    if (!out.flush()) throw GraderFault("cannot write " + stub_.string());
  }
  fs::permissions(stub_,
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  fs::create_symlink("/dev/fd/3", pipe_);
  argv_ = compiler_argv(toolchain, exercise, pch_, stub_, work_dir);
  const Step step{exercise, work_dir, sandbox, confinement};
  auto spec = step.spec(argv_);
  spec.request_by_path = true;  // the stub includes it
  child_ = std::make_unique<EarlyChild>(std::move(spec));
}

EarlyCompile::~EarlyCompile() = default;

bool EarlyCompile::waiting() const { return child_ && child_->waiting(); }

CompileResult compile_submission(const Toolchain& toolchain, const Exercise& exercise, const Submission& submission,
                                 const fs::path& work_dir, const fs::path& cache_dir, const SandboxStatus& sandbox,
                                 const Confinement& confinement, EarlyCompile* ahead) {
  const Step step{exercise, work_dir, sandbox, confinement};
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&start] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  CompileResult result;
  auto driver = toolchain.drivers.find(exercise.id);
  if (driver == toolchain.drivers.end())
    throw GraderFault("no compiled driver for " + exercise.id + ": rebuild the grader");
  // Each exercise is built on its first grade through ./grade.
  if (!fs::exists(driver->second)) {
    throw GraderFault(exercise.id + " is not built yet (" + driver->second.string() + " is missing): `./grade " +
                      exercise.id + "` builds it");
  }
  const bool cuda = exercise.gpu_only();
  if (cuda && toolchain.nvcc.empty()) {
    // No nvcc: the learner's file is not compiled (a grader without nvcc
    // must not call it failed). The driver alone, marked so, answers every
    // case with the reason; the checks report them skipped.
    fs::create_directories(work_dir);
    result.shared_object = work_dir / "submission.so";
    auto linked = step.run({toolchain.cxx, "-shared", "-o", result.shared_object.string(), driver->second.string(),
                            "-Wl,--defsym=grader_learner_not_compiled=grader_run_case"});
    if (!linked.exited_cleanly()) {
      throw GraderFault("cannot link the driver of " + exercise.id + " (" + linked.describe_end() +
                        "): " + linked.stderr_text.substr(0, linked.stderr_text.find('\n')));
    }
    result.ok = true;
    result.not_compiled = "nvcc not found: install the CUDA Toolkit (Debian non-free: nvidia-cuda-toolkit); " +
                          exercise.learner_files.front() + " was not compiled";
    result.seconds = elapsed();
    return result;
  }
  const auto pch =
      cuda ? fs::path() : precompiled_header(toolchain, exercise, includes_all_of_libtorch(submission.text));
  fs::create_directories(work_dir);
  const auto source = work_dir / exercise.learner_files.front();
  {
    // From the text read once (no link followed); readable by the sandboxed
    // compiler (user nobody), whatever the original's mode.
    std::ofstream out(source, std::ios::binary | std::ios::trunc);
    out << submission.text;
    if (!out.flush()) throw GraderFault("cannot write " + source.string());
  }
  fs::permissions(source,
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  const auto object = work_dir / "submission.o";
  const auto depfile = work_dir / "submission.d";
  result.shared_object = work_dir / "submission.so";
  // The cache holds only code that passed the include check below, which
  // depends on nothing but what the key covers.
  const std::vector<std::string> products = {"submission.o", "submission.so"};

  std::vector<std::string> argv;
  if (cuda) {
    // nvcc, host code through its default host compiler; no LibTorch flags
    // (a kernel file needs none). Device code for the configured GPU, plus
    // its PTX so that a newer GPU can compile it at load time.
    const auto arch = toolchain.nvcc_arch.empty() ? std::string("80") : toolchain.nvcc_arch;
    argv = {toolchain.nvcc,
            "-std=c++17",
            "-O2",
            "-Xcompiler",
            "-fPIC",
            "-gencode",
            "arch=compute_" + arch + ",code=[sm_" + arch + ",compute_" + arch + "]",
            "-MD",
            "-MF",
            depfile.string(),
            "-I",
            exercise.dir.string(),
            "-c",
            source.string(),
            "-o",
            object.string()};
  } else {
    argv = compiler_argv(toolchain, exercise, pch, source, work_dir);
  }
  // A compiler started ahead for this grade (grade watch) is used when it
  // loaded the same precompiled header and still waits for its source.
  const bool use_ahead = ahead && !pch.empty() && ahead->pch() == pch && ahead->waiting();

  // An unchanged submission is not compiled again: same source, interface,
  // compiler, flags, precompiled header, driver and isolation give the same object.
  auto shown_as = submission.path.string();
  fs::path cache_entry;
  std::optional<FileLock> lock;
  bool hit = false;  // the products came from the cache
  if (!cache_dir.empty()) {
    auto key_argv = argv;
    if (use_ahead) {  // its own command, the random part of its files' names left out
      key_argv = ahead->argv();
      for (auto& arg : key_argv) arg = replace_all(arg, ahead->token(), "<token>");
    }
    cache_entry = cache_dir / cache_key(toolchain, exercise, submission.text, key_argv, work_dir, pch, driver->second,
                                        sandbox.describe(), use_ahead ? kAheadStub : "");
    std::error_code error;
    fs::create_directories(cache_dir, error);
    // Until this compile is done and stored. Another holder runs the same
    // steps under the same limits: compile, link and readelf, each bounded.
    lock.emplace(cache_entry.string() + ".lock",
                 std::chrono::duration<double>(3 * exercise.limits.compile.seconds + 10));
    // Found after waiting for the lock's holder, the entry was compiled just
    // now, by that process: reported as compiled, not as unchanged.
    result.cached = !lock->waited();
    if (fs::is_directory(cache_entry) && fs::is_regular_file(cache_entry / kCachedErrors)) {
      fs::last_write_time(cache_entry, fs::file_time_type::clock::now(), error);  // recently used
      result.diagnostics =
          trim_diagnostics(replace_all(read_file(cache_entry / kCachedErrors), "<scratch>", work_dir.string()),
                           source.string(), shown_as);
      result.seconds = elapsed();
      return result;
    }
    if (fs::is_directory(cache_entry) && cached_copy(cache_entry, work_dir, products)) {
      fs::last_write_time(cache_entry, fs::file_time_type::clock::now(), error);  // recently used
      hit = true;
    } else {
      result.cached = false;
    }
  }

  if (!hit) {
    ChildOutcome compiled;
    if (use_ahead) {
      compiled = ahead->finish(ahead_source(submission.text, source));
      compiled.stderr_text = without_stub_lines(compiled.stderr_text, ahead->stub());
      // The source is compiled as itself, and that compile decides, where
      // the compile ahead ended before the source came (its precompiled
      // header rebuilt meanwhile, say), or failed with a message about the
      // stub (an unclosed brace is reported at the end of the main file,
      // which is the stub; or the stub itself broke). Its result is not
      // stored under the key of the compile ahead.
      if (compiled.ended_unasked ||
          (!compiled.exited_cleanly() && compiled.stderr_text.find(ahead->stub().string()) != std::string::npos)) {
        compiled = step.run(argv);
        cache_entry.clear();
      } else {
        result.ahead = true;
      }
    } else {
      compiled = step.run(argv);
    }
    if ((compiled.exit_code == 127 || compiled.exit_code == 125) && compiled.stderr_text.empty()) {
      // 127: exec failed; 125: the child could not join its cgroup or drop privileges.
      throw GraderFault("cannot start the compiler " + argv.front() + " (exit status " +
                        std::to_string(compiled.exit_code) + ")");
    }
    if (!compiled.exited_cleanly()) {
      std::error_code gone;
      if (!fs::is_directory(work_dir, gone)) {
        throw GraderFault("the scratch folder " + work_dir.string() + " disappeared during the compile");
      }
      // The compiler refusing our precompiled header is not the learner's
      // doing. Its message can be imitated (#line, #error), so a suspicion is
      // settled by compiling an empty file against the same header.
      if (!pch.empty() && compiled.stderr_text.find(pch.string()) != std::string::npos) {
        std::vector<std::string> probe = {toolchain.cxx, "@" + toolchain.flags_file.string()};
        for (const auto& option : pch_options(toolchain, pch)) probe.push_back(option);
        probe.insert(probe.end(), {"-fsyntax-only", "-x", "c++", "/dev/null"});
        auto checked = step.run(probe);
        if (!checked.exited_cleanly()) {
          throw GraderFault("the compiler refused the precompiled " +
                            std::string(pch == toolchain.torch_module ? "LibTorch API " : "interface ") +
                            pch.string() + ": " +
                            checked.stderr_text.substr(0, checked.stderr_text.find('\n')) +
                            " (rebuild the grader: ./grade does it)");
        }
      }
      // The compiler's own verdict on the source (not a limit it ran into) is
      // the same on every compile of this key: cached.
      if (!cache_entry.empty() && compiled.exit_code == 1 && !compiled.timed_out && !compiled.memory_exceeded &&
          !compiled.stderr_truncated && diagnoses_the_source(compiled.stderr_text, source.string())) {
        std::ofstream errors(work_dir / kCachedErrors, std::ios::binary | std::ios::trunc);
        errors << replace_all(compiled.stderr_text, work_dir.string(), "<scratch>");
        if (errors.flush()) store_in_cache(cache_entry, work_dir, {kCachedErrors});
      }
      result.diagnostics = compiled.timed_out         ? "the compiler ran past its time limit\n"
                           : compiled.memory_exceeded ? "the compiler ran out of its memory limit\n"
                           : compiled.term_signal == SIGXFSZ
                               ? shown_as + ": the compiled code would be larger than " +
                                     std::to_string(kCompileFileBytes >> 20) +
                                     " MB; remove large initialised arrays or tables\n"
                               : trim_diagnostics(compiled.stderr_text, source.string(), shown_as);
      result.seconds = elapsed();
      return result;
    }
  }

  // The submission may include LibTorch, the standard library and its
  // interface header; nothing else (this project's reference or solutions,
  // devices, /proc). Inside the sandbox most of these cannot even be found.
  const auto compiled_files =
      result.ahead ? std::vector<fs::path>{source, ahead->stub(), ahead->pipe()} : std::vector<fs::path>{source};
  const IncludePolicy includes(toolchain, exercise, pch);
  for (const auto& header : hit ? std::vector<std::string>() : depfile_headers(depfile, compiled_files)) {
    if (!includes.allows(header)) {
      result.diagnostics = shown_as + ": includes " + header + "\nA submission may include LibTorch, the standard " +
                           "library and " + exercise.interface_header + " only.\n";
      result.seconds = elapsed();
      return result;
    }
  }

  if (toolchain.readelf.empty()) throw GraderFault("the toolchain names no readelf: rebuild the grader");
  // An object with LTO sections carries a second symbol list, which tools
  // such as nm read (through a plugin) instead of the real one: a submission
  // could list what it likes there. The compiler never emits them here.
  auto object_bytes = read_file(object);
  if (object_bytes.find(".gnu.lto_") != std::string::npos || object_bytes.find("__gnu_lto") != std::string::npos) {
    result.diagnostics = shown_as +
                         ": the compiled code holds link-time-optimisation sections (.gnu.lto_*), "
                         "a second symbol list that could hide its symbols from the grader; remove the inline "
                         "assembly or section attributes that make them.\n";
    result.seconds = elapsed();
    return result;
  }
  // An object's symbol table, by readelf (no plugins: nm loads the LTO
  // plugins, LLVMgold among them, 0.1 s per grade). Mangled names (no
  // demangling, which can be made to explode) hold the identifiers verbatim.
  // Symbol tables of LibTorch code are long.
  auto list_symbols = [&step, &toolchain](const fs::path& file) {
    return step.run({toolchain.readelf, "--syms", "--wide", file.string()}, 64 * 1024 * 1024);
  };
  // The submission's are listed while it is linked (two cores).
  auto listing = std::async(std::launch::async, [&list_symbols, &object] { return list_symbols(object); });
  // The link: the linker itself where its command is known, else through
  // the compiler's driver. Without an object: the control link below.
  bool direct_link = !toolchain.link_command.empty() && !cuda;
  auto link_argv = [&](const fs::path& output, const fs::path& learner_object) {
    std::vector<std::string> link;
    if (direct_link) {
      for (const auto& arg : toolchain.link_command) {
        if (arg == "@OBJECT@") {
          if (!learner_object.empty()) link.push_back(learner_object.string());
        } else {
          link.push_back(arg == "@OUTPUT@" ? output.string() : arg == "@LIBRARY@" ? driver->second.string() : arg);
        }
      }
      return link;
    }
    link = {toolchain.cxx, "-shared", "-o", output.string()};
    if (!learner_object.empty()) link.push_back(learner_object.string());
    link.push_back(driver->second.string());
    link.insert(link.end(), toolchain.link_options.begin(), toolchain.link_options.end());
    return link;
  };
  if (!hit) {
    argv = link_argv(result.shared_object, object);
    if (cuda) {
      // The kernel's host code calls the CUDA runtime: the toolkit's libcudart
      // (same soname as the one a CUDA LibTorch loads, so one copy at run time).
      if (!toolchain.cudart_dir.empty()) {
        argv.insert(argv.end(), {"-L" + toolchain.cudart_dir, "-Wl,-rpath," + toolchain.cudart_dir});
      }
      argv.push_back("-lcudart");
    }
    auto linked = step.run(argv);
    if (!linked.exited_cleanly() && !linked.timed_out && direct_link) {
      // The linker's command is what the driver said at configure time: a
      // toolchain updated since may have moved its files. The driver decides.
      direct_link = false;
      argv = link_argv(result.shared_object, object);
      linked = step.run(argv);
    }
    if (!linked.exited_cleanly() && !linked.timed_out) {
      // Whose fault? The same link without the learner's object settles it
      // (a linker gone, the exercise's library missing are the grader's).
      auto checked = step.run(link_argv(work_dir / "control.so", fs::path()));
      if (!checked.exited_cleanly()) {
        throw GraderFault("cannot link against " + driver->second.string() + " (" + checked.describe_end() +
                          "): " + checked.stderr_text.substr(0, checked.stderr_text.find('\n')) +
                          " (rebuild the grader: ./grade does it)");
      }
    }
    if (!linked.exited_cleanly()) {
      result.diagnostics = linked.timed_out ? describe_failure(linked, "linking") + "\n"
                                            : trim_diagnostics(linked.stderr_text, source.string(), shown_as);
      result.seconds = elapsed();
      return result;
    }
    if (!cache_entry.empty()) {
      store_in_cache(cache_entry, work_dir, products);
      prune_cache(cache_dir);
    }
  }
  lock.reset();  // stored: a grade waiting for this compile takes it from the cache now

  auto symbols = listing.get();
  if (!symbols.exited_cleanly() || symbols.stdout_truncated) {
    // Whose fault? The same on the exercise's library (built by the grader) settles it.
    auto control = list_symbols(driver->second);
    if (!control.exited_cleanly()) {
      throw GraderFault("cannot list symbols with " + toolchain.readelf + " (on the grader's own " +
                        driver->second.filename().string() + ": " + control.describe_end() + ")");
    }
    auto reason = symbols.stdout_truncated
                      ? std::string("its symbol table is far too large")
                      : symbols.describe_end() + ": " + symbols.stderr_text.substr(0, symbols.stderr_text.find('\n'));
    result.diagnostics = shown_as + ": the compiled code cannot be inspected by readelf (" + reason +
                         "); the grader must list its symbols. Remove unusual sections, attributes or inline "
                         "assembly.\n";
    result.seconds = elapsed();
    return result;
  }
  auto findings = forbidden_symbols_in(symbols.stdout_text, exercise);
  result.forbidden_symbols = std::move(findings.all);
  result.refuses_run = std::move(findings.refuses_run);
  {
    // Each of these reaches past the measurements: such code is not run.
    for (auto& found : forbidden_text_in(read_file(object))) {
      if (result.refuses_run.empty()) result.refuses_run = found;
      result.forbidden_symbols.push_back(std::move(found));
    }
  }
  result.ok = true;
  result.seconds = elapsed();
  return result;
}

}  // namespace grader
