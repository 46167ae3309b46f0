#include "judge/symbol_rules.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <sstream>

namespace grader {
namespace fs = std::filesystem;

namespace {

// Names a submission's compiled code may not mention, whatever the exercise:
// each would let it run or hide work the checks must see. Matched in mangled
// names, which hold every identifier verbatim.
struct SymbolRule {
  const char* pattern;
  const char* why;
  bool exact;                // the whole (C) symbol name, not a part of it
  bool refuses_run = false;  // the code is not run at all (it reaches into the grader itself, or past its measurements)
  // A pattern for LibTorch's own (exported) functions: it must match a symbol
  // of the LibTorch the grader runs on (libtorch_kernel_patterns, tested), or
  // it guards nothing. "cuda": of its CUDA library, where there is one;
  // "c10": of its core library (c10).
  const char* in_libtorch = "";
};
const SymbolRule kJudgeRules[] = {
    {"RecordFunction", "drives or switches off LibTorch's operator recording, which the grader relies on", false},
    {"record_function", "edits LibTorch's operator-recording state, which the grader relies on", false},
    {"GlobalCallback", "installs or removes operator callbacks, which the grader relies on", false},
    {"ThreadLocalCallback", "installs or removes operator callbacks, which the grader relies on", false},
    {"removeCallback", "removes the grader's operator callback", false},
    {"clearCallbacks", "removes the grader's operator callback", false},
    {"disableCallback", "disables the grader's operator callback", false},
    // Narrower than the two above, for what inline functions reach (below).
    {"enableRecordFunction", "switches LibTorch's operator recording off or on", false},
    {"RecordFunctionGuard", "switches LibTorch's operator recording off or on", false},
    {"set_record_function_tls_", "edits LibTorch's operator-recording state, which the grader relies on", false},
    // An operator's implementation called directly skips the dispatcher, and so the recording.
    {"2at6native", "calls an operator's implementation (at::native) directly, bypassing the dispatcher", false, false,
     "cpu"},
    {"2at3cpu", "calls a CPU kernel (at::cpu) directly, bypassing the dispatcher", false, false, "cpu"},
    {"2at4cuda", "calls a CUDA kernel (at::cuda) directly, bypassing the dispatcher", false, false, "cuda"},
    {"2at4meta", "calls an operator's meta function directly, bypassing the dispatcher", false, false, "cpu"},
    // at::compositeexplicitautograd and at::compositeimplicitautograd (25
    // letters), ...autogradnestedtensor (37), ...autogradnonfunctional (38).
    {"2at25composite", "calls an operator's composite implementation directly, bypassing the dispatcher", false, false,
     "cpu"},
    {"2at37composite", "calls an operator's composite implementation directly, bypassing the dispatcher", false, false,
     "cpu"},
    {"2at38composite", "calls an operator's composite implementation directly, bypassing the dispatcher", false, false,
     "cpu"},
    // at::redispatch:: is inline in LibTorch's headers: compiled into the learner's
    // object, or imported from the grader's compiled headers, under its own name.
    {"2at10redispatch", "re-dispatches an operator past the dispatcher's recording", false},
    {"10redispatchE", "re-dispatches an operator past the dispatcher's recording", false, false, "cpu"},
    {"12VariableType", "calls autograd's kernels directly, bypassing the dispatcher", false, false, "cpu"},
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
    // TorchScript: its operator registry hands out LibTorch's operators (their
    // kernels and dispatch tables), its interpreters and static runtime run
    // operators in scopes the recording does not follow. Attention code has no
    // use for it (namespace torch::jit, in every symbol that names it).
    {"N5torch3jit", "runs or inspects TorchScript (torch::jit: its operator registry, interpreters and runtime call "
                    "operators past the grader's recording)",
     false, true},
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
    {"__libc_valloc", "calls the C library's allocator by its inner name, past the grader's memory accounting", true,
     true},
    {"__libc_pvalloc", "calls the C library's allocator by its inner name, past the grader's memory accounting", true,
     true},
    {"__mmap", "maps memory by hand, past the grader's memory accounting", true, true},
    {"__sbrk", "moves the heap's end by hand, past the grader's memory accounting", true, true},
    {"__curbrk", "moves the heap's end by hand, past the grader's memory accounting", true, true},
    {"syscall", "makes raw system calls, past the C library", true, true},
    // LibTorch's allocator replaced: code of the learner's own then runs inside
    // every operator that allocates (out of the recording's depth 0), and
    // tensors' memory comes from wherever it likes.
    {"3c1012SetAllocator", "replaces LibTorch's memory allocator", false, true, "c10"},
    {"3c1015SetCPUAllocator", "replaces LibTorch's memory allocator", false, true, "c10"},
};

// The rules above that do not judge what an imported inline function of
// LibTorch's reaches (inline_reach.h); every other rule does, since each of
// their uses reaches past the measurements. These broad ones LibTorch's own
// inline code meets in honest work: an autograd Function's node records its
// call (a RecordFunction run, not switched off; the narrower patterns above
// still follow), c10::InferenceMode sets the dispatcher's thread-local keys
// (it leaves the recording on), and c10's IValue code refers to
// TorchScript's types (the registry and runtimes are out-of-line functions
// of LibTorch's, which a file that uses them names itself).
const char* const kNotFollowedInsideInline[] = {
    "RecordFunction", "record_function", "LocalDispatchKeySet", "tls_local_dispatch_key_set", "N5torch3jit",
};
bool followed_inside_inline(const char* pattern) {
  return std::none_of(std::begin(kNotFollowedInsideInline), std::end(kNotFollowedInsideInline),
                      [pattern](const char* left_out) { return std::strcmp(left_out, pattern) == 0; });
}

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

std::vector<std::string> libtorch_kernel_patterns(const std::string& library) {
  std::vector<std::string> patterns;
  for (const auto& rule : kJudgeRules) {
    if (library == rule.in_libtorch) patterns.emplace_back(rule.pattern);
  }
  return patterns;
}

namespace {

// What the rules say of one symbol: each finding's words, and whether the
// code must not run. `imported`: the code calls it (not the code's own).
// `in_the_object`: the object's own symbol; else one an imported inline
// function reaches (inline_reach.h), which the exercise's forbidden names do
// not judge: they name what a file would have to name itself (a built-in
// module's class), and LibTorch's own inline code uses some of them where no
// built-in runs (every tensor made by torch::eye holds a ForwardGrad).
struct RuleHit {
  std::string what;
  bool refuses_run = false;
};
std::vector<RuleHit> rules_naming(const std::string& name, bool imported, const Exercise& exercise,
                                  bool in_the_object = true) {
  std::vector<RuleHit> hits;
  for (const auto& rule : kJudgeRules) {
    if (!in_the_object && !followed_inside_inline(rule.pattern)) continue;
    if (rule.exact ? name == rule.pattern : name.find(rule.pattern) != std::string::npos)
      hits.push_back({std::string("your code ") + rule.why, rule.refuses_run});
  }
  // The exercise's built-ins, wherever they appear (an inline one compiled
  // in, or imported from the grader's compiled headers: inline_reach.h).
  for (const auto& pattern : exercise.forbidden_symbols) {
    if (in_the_object && name.find(pattern) != std::string::npos)
      hits.push_back({pattern + " is compiled into your code", false});
  }
  // A forbidden operator reached without the dispatcher's recording still
  // has to be linked: its name is among the imported symbols. (Defined
  // symbols are the learner's own, whose names may echo the exercise.)
  for (const auto& pattern : exercise.forbidden_operators) {
    if (imported && name.find(pattern) != std::string::npos)
      hits.push_back({"the forbidden operator " + pattern + " is called by your code", false});
  }
  return hits;
}

}  // namespace

std::vector<std::string> unfollowed_patterns_without_a_rule() {
  std::vector<std::string> missing;
  for (const char* left_out : kNotFollowedInsideInline) {
    if (std::none_of(std::begin(kJudgeRules), std::end(kJudgeRules),
                     [left_out](const SymbolRule& rule) { return std::strcmp(rule.pattern, left_out) == 0; }))
      missing.emplace_back(left_out);
  }
  return missing;
}

bool named_by_a_rule(const std::string& name, const Exercise& exercise) {
  return !rules_naming(name, true, exercise, false).empty();
}

SymbolFindings forbidden_symbols_in(const std::string& symbol_table, const Exercise& exercise,
                                    const InlineReach& reach) {
  std::map<std::string, std::string> found;  // what it means -> the first symbol that showed it
  std::string refusing;                      // the first what of a rule that refuses the run
  auto shorten = [](const std::string& symbol) { return symbol.size() > 100 ? symbol.substr(0, 100) + "..." : symbol; };
  auto judge = [&](const std::string& name, bool imported, const std::string& shown, bool in_the_object) {
    for (const auto& hit : rules_naming(name, imported, exercise, in_the_object)) {
      found.emplace(hit.what, shown);
      if (hit.refuses_run && refusing.empty()) refusing = hit.what;
    }
  };
  std::istringstream lines(symbol_table);
  for (std::string line; std::getline(lines, line);) {
    auto symbol = parse_readelf_line(line);
    if (!symbol) continue;
    judge(symbol->name, symbol->imported, shorten(symbol->name), true);
    // An inline function of LibTorch's that the grader compiled: judged by
    // what it reaches, as if it were compiled into the code.
    if (!symbol->imported) continue;
    if (auto inside = reach.find(symbol->name); inside != reach.end()) {
      for (const auto& reached : inside->second)
        judge(reached, true, shorten(reached) + ", reached through the inline function " + shorten(symbol->name),
              false);
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

}  // namespace grader
