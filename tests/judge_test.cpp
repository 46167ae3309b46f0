// The judge's own defences, unit by unit: terminal-safe learner text, capped
// learner text, the symbol rules, reading submissions without links, cleanup
// that depth cannot defeat, and the sandbox showing files the sandboxed user
// could not reach by their path.
#include <ATen/ATen.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "checks/kit/kit.h"
#include "judge/compile.h"
#include "judge/include_policy.h"
#include "judge/inline_reach.h"
#include "judge/symbol_rules.h"
#include "base/errors.h"
#include "exercise/exercise.h"
#include "judge/process.h"
#include "report/report.h"
#include "judge/sandbox.h"

namespace grader {
namespace {
namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / (name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(LearnerText, ControlsBidiAndBadBytesAreEscaped) {
  EXPECT_EQ(printable("ok\n\tline"), "ok\n\tline");
  EXPECT_EQ(printable("\x1b[2J"), "\\x1b[2J");
  EXPECT_EQ(printable("a\xc2\x9b"
                      "31m"),
            "a\\x9b31m");  // C1 CSI, UTF-8 encoded
  EXPECT_EQ(printable("a\x9b"
                      "31m"),
            "a\\x9b31m");  // C1 CSI, a raw byte
  EXPECT_EQ(printable("x\xe2\x80\xae"
                      "cba"),
            "x\\u202ecba");  // right-to-left override
  EXPECT_EQ(printable("\xe2\x81\xa6"
                      "y"),
            "\\u2066y");                                    // left-to-right isolate
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate is not UTF-8
  EXPECT_EQ(printable("\xc3"), "\\xc3");                    // cut sequence
  EXPECT_EQ(printable("attention \xce\xb1 \xe2\x88\x9a"), "attention \xce\xb1 \xe2\x88\x9a");  // kept
}

TEST(LearnerText, CappedAtACharacterBoundaryWithANote) {
  EXPECT_EQ(capped("short", 10), "short");
  std::string text(5000, 'a');
  auto cut = capped(text, 100);
  EXPECT_EQ(cut.substr(0, 100), std::string(100, 'a'));
  EXPECT_NE(cut.find("4900 more bytes cut"), std::string::npos);
  auto accents = capped("\xc3\xa9\xc3\xa9\xc3\xa9", 3);  // é é é: never half a character
  EXPECT_EQ(accents.substr(0, 2), "\xc3\xa9");
  EXPECT_EQ(accents[2], ' ');
  EXPECT_NE(capped("x", 10, /*already_cut=*/true).find("cut off"), std::string::npos);
}

Exercise sdpa() { return load_exercise(fs::path(std::getenv("GRADER_ROOT")) / "exercises" / "exercise_sdpa"); }

// Lines of `readelf --syms --wide` for a symbol the object defines (in
// section 2) or imports (UND).
std::string defined(const std::string& name, const char* bind = "GLOBAL") {
  return fmt::format("    12: 0000000000000000    42 FUNC    {:<6} DEFAULT    2 {}\n", bind, name);
}
std::string imported(const std::string& name) {
  return "    13: 0000000000000000     0 NOTYPE  GLOBAL DEFAULT  UND " + name + "\n";
}

// The compiled code's text: "/proc" in a string constant is found and shown;
// ELF's magic number at the start of the object is not a finding.
// Work the recording did not see: BLAS's count against the recorded products'.
TEST(UnrecordedWork, MoreComputedThanRecordedIsFound) {
  struct Row {
    double recorded, computed;
    bool found;
  };
  const Row rows[] = {
      {0, 0, false},         // nothing computed
      {1e6, 1e6, false},     // every product recorded
      {1e6, 0, false},       // products LibTorch did in its own loops (no BLAS)
      {1e6, 1.04e6, false},  // counts that round differently
      {0, 4000, false},      // a few multiply-adds of slack
      {1e6, 1.2e6, true},    // a fifth of the work unrecorded
      {0, 2.1e6, true},      // the recording switched off around everything
      {1.0e3, 5.0e4, true},  // small cases too
  };
  for (const auto& row : rows) {
    auto finding = grader::unrecorded_work({row.recorded, row.computed});
    EXPECT_EQ(finding.has_value(), row.found) << row.recorded << " recorded, " << row.computed << " computed";
    if (finding) {
      EXPECT_NE(finding->find("did not see"), std::string::npos) << *finding;
    }
  }
}

TEST(TextRules, ProcPathsInTheCompiledCodeAreFound) {
  using namespace std::string_literals;
  EXPECT_TRUE(forbidden_text_in("\x7f"
                                "ELF\x02\x01 code and \0tensor\0"s)
                  .empty());
  EXPECT_TRUE(forbidden_text_in("").empty());
  auto found = forbidden_text_in(
      "\x7f"
      "ELF\x02\x01\0\0/proc/self/maps\0libtorch_cpu.so\0"s);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found.front().find("/proc"), std::string::npos) << found.front();
  EXPECT_NE(found.front().find("\"/proc/self/maps\""), std::string::npos) << found.front();
  // Whatever surrounds it is shown printable.
  auto raw = forbidden_text_in(
      "\x7f"
      "ELF\x01\x1b[31m/proc/1/cmdline\x1b"s);
  ASSERT_EQ(raw.size(), 1u);
  EXPECT_EQ(raw.front().find('\x1b'), std::string::npos) << raw.front();
}

TEST(SymbolRules, ImportsAndNamesThatEvadeTheRecordingAreFound) {
  auto found = [](const std::string& table) { return forbidden_symbols_in(table, sdpa()).all; };
  // An honest submission: its own function (whose name echoes the exercise) and basic operators.
  EXPECT_TRUE(found("\nSymbol table '.symtab' contains 3 entries:\n"
                    "   Num:    Value          Size Type    Bind   Vis      Ndx Name\n"
                    "     0: 0000000000000000     0 NOTYPE  LOCAL  DEFAULT  UND \n"
                    "     1: 0000000000000000     0 FILE    LOCAL  DEFAULT  ABS sdpa.cpp\n" +
                    defined("_Z28scaled_dot_product_attentionRKN2at6TensorES2_S2_S2_") +
                    imported("_ZN2at4_ops6matmul4callERKNS_6TensorES4_") +
                    imported("_ZN2at4_ops8softmax_int4callERKNS_6TensorElN3c108optionalINS5_10ScalarTypeEEE"))
                  .empty());
  auto one = [&](const std::string& table, const std::string& expected) {
    auto list = found(table);
    ASSERT_FALSE(list.empty()) << table;
    std::string all;
    for (const auto& item : list) all += item + "\n";
    EXPECT_NE(all.find(expected), std::string::npos) << all;
  };
  one(imported("_ZN2at4_ops29_scaled_dot_product_attention4callERKNS_6TensorE"), "scaled_dot_product");
  one(imported("_ZN2at6native31_scaled_dot_product_attention_mathERKNS_6TensorE"), "at::native");
  one(imported("dlsym@GLIBC_2.34 (3)"), "looks functions up");
  one(imported("_ZN2at20enableRecordFunctionEb"), "recording");
  one(imported("_ZN2at24get_record_function_tls_Ev"), "operator-recording state");
  one(imported("_ZN2at4_ops6matmul10redispatchEN3c1014DispatchKeySetERKNS_6TensorES7_"), "re-dispatches");
  // An inline built-in compiled in (a weak definition) is found by the exercise's list.
  one(defined("_ZN5torch2nn10functional6detail28multi_head_attention_forwardERKN2at6TensorE", "WEAK"),
      "multi_head_attention_forward");
  // The driver's code, defined again by the learner (strong beats the driver's
  // weak inline copy) or called from it.
  one(defined("_ZN6grader6driver12ForwardScopeC1ERKNS_4wire6RecordE"), "namespace grader");
  one(defined("_ZNK6grader4wire6Record6stringERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE", "WEAK"),
      "namespace grader");
  one(defined("grader_run_case"), "entry point");
  // A name with blanks (an assembler label) is read whole.
  one(defined("x dlsym y ZN2at6native"), "at::native");
  // Flags beside the visibility (AArch64's variant calling convention) shift no column.
  one("     8: 0000000000000000     0 NOTYPE  GLOBAL DEFAULT [VARIANT_PCS]   UND dlsym\n", "looks functions up");
  one("     9: 0000000000000000     0 NOTYPE  GLOBAL DEFAULT [<other>: 88]   UND dlopen\n", "loads libraries");
  // Reaching past the measurements: the dispatcher by hand, LibTorch's
  // thread-local state, descriptors, the process's own ELF tables and memory.
  one(imported("_ZN3c1010Dispatcher9singletonEv"), "dispatcher by hand");
  one(imported("_ZNK3c1014OperatorHandle24callBoxedForDispatchKeyENS_11DispatchKeyERSt6vectorINS_6IValueESaIS3_EE"),
      "dispatcher by hand");
  one(imported("_ZN2at16ThreadLocalState19setThreadLocalStateERKS0_"), "thread-local state");
  // TorchScript: its operator registry hands out LibTorch's operators, its
  // static runtime runs them in scopes the recording does not follow.
  one(imported("_ZN5torch3jit18getAllOperatorsForEN3c106SymbolE"), "TorchScript");
  one(imported("_ZN5torch3jit13StaticModuleC1ERKSt10shared_ptrINS0_5GraphEE"), "TorchScript");
  one(imported("dup2@GLIBC_2.2.5 (2)"), "file descriptors");
  one(imported("fcntl64@GLIBC_2.28 (4)"), "file descriptors");
  one(imported("getauxval@GLIBC_2.16 (5)"), "program headers");
  one(imported("mprotect"), "protection of memory");
  one(imported("syscall"), "raw system calls");
  one(imported("mmap64@GLIBC_2.2.5 (2)"), "memory accounting");
  one(imported("__libc_malloc@GLIBC_2.2.5 (2)"), "memory accounting");
  for (const char* name : {"dup2", "_ZN3c1010Dispatcher9singletonEv", "getauxval",
                           "_ZN5torch3jit18getAllOperatorsForEN3c106SymbolE"}) {
    EXPECT_NE(forbidden_symbols_in(imported(name), sdpa()).refuses_run, "") << name << " must not run";
  }
  // A learner's own C++ function named dup or fcntl is theirs (mangled, not the C library's).
  EXPECT_TRUE(found(defined("_Z3dupi") + defined("_Z5fcntlv") + defined("_Z9my_dup2_xv")).empty());
  // Those refuse the run; a built-in does not (it is judged with the checks).
  EXPECT_NE(forbidden_symbols_in(defined("grader_run_case"), sdpa()).refuses_run.find("entry point"),
            std::string::npos);
  EXPECT_EQ(forbidden_symbols_in(imported("dlsym@GLIBC_2.34 (3)"), sdpa()).refuses_run, "");
  // A learner's own namespace that merely ends in "grader" is theirs.
  EXPECT_TRUE(found(defined("_ZN8mygrader4helpEv") + defined("_ZN3foo6grader4helpEv")).empty());
  // A learner's own helper whose name merely contains "dlsym" or "_dl_" is not a lookup.
  EXPECT_TRUE(found(defined("_Z12my_dlsym_fooi") + defined("_Z9model_dl_v")).empty());
  // A forbidden operator's name counts where it is imported, not in the learner's own definitions.
  EXPECT_TRUE(found(defined("_Z33my_scaled_dot_product_attention_v")).empty());
  // The file and section symbols name no code: a learner's file or section
  // called after a built-in is not the built-in.
  EXPECT_TRUE(found("     1: 0000000000000000     0 FILE    LOCAL  DEFAULT  ABS multi_head_attention_forward.cpp\n"
                    "     2: 0000000000000000     0 SECTION LOCAL  DEFAULT    5 .text.MultiheadAttentionImpl\n")
                  .empty());
}

// An inline function of LibTorch's that the grader compiled (inline_reach.h)
// is judged by what it reaches, where the code imports it; the learner's own
// definitions of the same name, and imports it does not reach from, are not.
TEST(SymbolRules, ImportedInlineFunctionsAreJudgedByWhatTheyReach) {
  const std::string get_operation = "_ZNK5torch7runtime8Operator26getOperationForDispatchKeyEN3c1011DispatchKeyE";
  const std::string softmax_wrapper = "_ZN5torch2nn10functional7softmaxERKN2at6TensorE";
  grader::InlineReach reach = {
      {get_operation, {"_ZNK3c1014OperatorHandle24callBoxedForDispatchKeyENS_11DispatchKeyE"}},
      {"_ZN5torch2nn10functional6wrapperEv", {"_ZN2at4_ops29_scaled_dot_product_attention4callERKNS_6TensorE"}},
      {"_ZN5torch2nn10functional8reachingEv", {"_ZN2at14RecordFunctionD1Ev"}},
      {"_ZN5torch8autograd4NodeC2Ev", {"_ZN2at14RecordFunction6beforeEPKcl", "_ZN2at14RecordFunctionD1Ev"}},
      {"_ZN3c1013InferenceModeC2Eb", {"_ZN3c104impl33_force_tls_local_dispatch_key_setENS0_19LocalDispatchKeySetE"}},
      {"_ZN5torch2nn7quietlyEv", {"_ZN2at20enableRecordFunctionEb"}},
      {"_ZN5torch2nn7helpersEv", {"_ZN5torch2nn22MultiheadAttentionImplD2Ev"}},
      {softmax_wrapper, {}},
  };
  struct Row {
    std::string name;
    bool imported;
    std::string finding;  // empty: none
    bool refused;
  };
  const std::vector<Row> rows = {
      {get_operation, true, "dispatcher by hand", true},
      {"_ZN5torch2nn10functional6wrapperEv", true, "forbidden operator scaled_dot_product", false},
      {softmax_wrapper, true, "", false},
      // The exercise's forbidden names judge the file's own symbols only: LibTorch's
      // inline code uses some where no built-in runs.
      {"_ZN5torch2nn7helpersEv", true, "", false},
      // Nor do the judge's broad rules that LibTorch's inline code meets in
      // honest work: a RecordFunction run (an autograd Function's node), the
      // dispatcher's thread-local keys (c10::InferenceMode).
      {"_ZN5torch2nn10functional8reachingEv", true, "", false},
      {"_ZN5torch8autograd4NodeC2Ev", true, "", false},
      {"_ZN3c1013InferenceModeC2Eb", true, "", false},
      // The recording switched off inside one is found.
      {"_ZN5torch2nn7quietlyEv", true, "recording off", false},
      // The learner's own function of that name: its own code, already in its object.
      {get_operation, false, "", false},
      {"_ZN2at4_ops6matmul4callERKNS_6TensorES4_", true, "", false},
  };
  for (const auto& row : rows) {
    auto findings = forbidden_symbols_in(row.imported ? imported(row.name) : defined(row.name), sdpa(), reach);
    std::string all;
    for (const auto& item : findings.all) all += item + "\n";
    if (row.finding.empty()) {
      EXPECT_TRUE(findings.all.empty()) << row.name << "\n" << all;
    } else {
      EXPECT_NE(all.find(row.finding), std::string::npos) << row.name << "\n" << all;
      EXPECT_NE(all.find("reached through the inline function " + row.name), std::string::npos) << all;
    }
    EXPECT_EQ(!findings.refuses_run.empty(), row.refused) << row.name << "\n" << all;
  }
}

TEST(SymbolRules, EveryPatternLeftUnfollowedInsideInlineCodeIsARule) {
  EXPECT_EQ(grader::unfollowed_patterns_without_a_rule(), std::vector<std::string>{});
}

// The build's reading of an object's references: a function is listed with
// what it reaches, through any number of the object's own functions, and only
// what a rule names; one that reaches nothing named is not listed.
TEST(InlineReach, ObjectReferencesAreFollowedThroughTheObjectsOwnFunctions) {
  const auto dir = fs::temp_directory_path() / ("grader-inline-reach-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "graph.cpp") << "extern \"C\" void forbidden_thing();\n"
                                      "extern \"C\" void harmless_thing();\n"
                                      "static void inner() { forbidden_thing(); }\n"
                                      "void middle() { inner(); }\n"
                                      "void outer() { middle(); harmless_thing(); }\n"
                                      "void clean() { harmless_thing(); }\n"
                                      "struct Base { virtual void run() { forbidden_thing(); } virtual ~Base() = default; };\n"
                                      "Base* make() { return new Base; }\n";
  const auto object = dir / "graph.o";
  // The system's C++ compiler (the one the grader is built with), with code
  // as the precompiled headers' is: position-independent, a section per function.
  ASSERT_EQ(std::system((std::string("c++ -std=c++17 -O0 -fPIC -ffunction-sections -c ") + (dir / "graph.cpp").string() + " -o " +
                         object.string())
                            .c_str()),
            0);
  grader::ReferenceGraph graph;
  graph.add_object(object);
  auto reach = graph.reaching([](const std::string& name) { return name == "forbidden_thing"; });
  EXPECT_EQ(reach["_Z6middlev"], std::vector<std::string>{"forbidden_thing"});
  EXPECT_EQ(reach["_Z5outerv"], std::vector<std::string>{"forbidden_thing"});
  EXPECT_EQ(reach.count("_Z5cleanv"), 0u);
  // Through the vtable a constructor refers to.
  EXPECT_EQ(reach["_Z4makev"], std::vector<std::string>{"forbidden_thing"});
  // The file the build writes reads back the same.
  grader::write_inline_reach(dir / "graph.reach", reach);
  auto back = grader::read_inline_reach(dir / "graph.reach");
  EXPECT_EQ(back.size(), reach.size());
  EXPECT_EQ(back["_Z5outerv"], std::vector<std::string>{"forbidden_thing"});
  EXPECT_THROW(graph.add_object(dir / "graph.cpp"), grader::GraderFault);  // not an object
  fs::remove_all(dir);
}

// Which submissions compile against LibTorch's whole API precompiled: an
// include of <torch/torch.h> or <torch/all.h> on a line of its own, and no
// input, however long its lines, can exhaust the scanner.
// Each judge pattern for LibTorch's kernels matches a symbol LibTorch exports:
// the composite namespaces' patterns once had their lengths wrong in mangled
// form ("2at27composite" for a 25-letter name) and matched nothing.
TEST(SymbolRules, KernelPatternsMatchTheLibTorchInUse) {
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&at::_ops::matmul::call), &info), 0);
  const fs::path cpu = info.dli_fname;
  auto symbols_of = [](const fs::path& library) {
    std::string text;
    FILE* pipe = popen(("readelf --syms --wide '" + library.string() + "' 2>/dev/null").c_str(), "r");
    if (!pipe) return text;
    char buffer[1 << 16];
    for (size_t got; (got = fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, got);
    pclose(pipe);
    return text;
  };
  std::vector<std::pair<std::string, fs::path>> libraries = {{"cpu", cpu}};
  Dl_info core{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&c10::SetAllocator), &core), 0);
  libraries.emplace_back("c10", core.dli_fname);
  const auto cuda = cpu.parent_path() / "libtorch_cuda.so";
  if (fs::exists(cuda)) libraries.emplace_back("cuda", cuda);
  for (const auto& [which, library] : libraries) {
    const auto table = symbols_of(library);
    ASSERT_GT(table.size(), which == "c10" ? 10000u : 100000u) << "no symbol table read from " << library;
    const auto patterns = libtorch_kernel_patterns(which);
    EXPECT_FALSE(patterns.empty());
    for (const auto& pattern : patterns) {
      EXPECT_NE(table.find(pattern), std::string::npos) << pattern << " matches no symbol of " << library;
    }
  }
}

TEST(Submissions, TorchHeaderIncludeIsFoundByLine) {
  EXPECT_TRUE(includes_all_of_libtorch("#include <torch/torch.h>\n"));
  EXPECT_TRUE(includes_all_of_libtorch("// model\n  #  include\t\"torch/all.h\"\nint x;"));
  EXPECT_TRUE(includes_all_of_libtorch("#include \"mhsa.h\"\n#include <torch/torch.h>"));
  EXPECT_FALSE(includes_all_of_libtorch("#include <torch/types.h>\n#include <torch/torch.hpp>\n"));
  EXPECT_FALSE(includes_all_of_libtorch("int x; #include <torch/torch.h>\n"));
  EXPECT_FALSE(includes_all_of_libtorch("#include <torch/torch.h"));
  EXPECT_FALSE(includes_all_of_libtorch(""));
  // A megabyte of blanks, then the include; and one with no line break at all.
  EXPECT_TRUE(includes_all_of_libtorch(std::string(1 << 20, ' ') + "\n#include <torch/torch.h>\n"));
  EXPECT_TRUE(includes_all_of_libtorch(std::string(1 << 20, '\t') + "#include <torch/torch.h>"));
  EXPECT_FALSE(includes_all_of_libtorch(std::string(1 << 20, '#')));
}

TEST(Submissions, LinksFifosAndHugeFilesAreRefused) {
  auto dir = fresh_dir("grader-read-test");
  std::ofstream(dir / "secret.cpp") << "SECRET";
  fs::permissions(dir / "secret.cpp", fs::perms::owner_read | fs::perms::owner_write);
  fs::create_symlink(dir / "secret.cpp", dir / "link.cpp");
  EXPECT_EQ(read_submission(dir / "secret.cpp"), "SECRET");
  try {
    read_submission(dir / "link.cpp");
    ADD_FAILURE() << "a link was followed";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("symbolic link"), std::string::npos) << error.what();
    EXPECT_EQ(std::string(error.what()).find("SECRET"), std::string::npos);
  }
  ASSERT_EQ(mkfifo((dir / "fifo.cpp").c_str(), 0600), 0);
  EXPECT_THROW(read_submission(dir / "fifo.cpp"), UsageError);  // refused at once, not waited on
  std::ofstream(dir / "big.cpp") << std::string(kMaxSubmissionBytes + 1, ' ');
  EXPECT_THROW(read_submission(dir / "big.cpp"), UsageError);
  EXPECT_THROW(read_submission(dir / "missing.cpp"), UsageError);
  fs::remove_all(dir);
}

TEST(Cleanup, DeeperThanTheDescriptorLimitAndLongerThanAPath) {
  auto dir = fresh_dir("grader-remove-test");
  // 3000 levels of 20 characters: 60 000 characters of path, past PATH_MAX.
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  const std::string name(20, 'd');
  for (int level = 0; level < 3000; ++level) {
    ASSERT_EQ(mkdirat(fd, name.c_str(), level % 7 == 0 ? 0000 : 0700), 0) << level;
    int next = openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY);
    if (next < 0) {  // not root: a folder of mode 0 cannot be entered; make it enterable
      fchmodat(fd, name.c_str(), 0700, 0);
      next = openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY);
    }
    ASSERT_GE(next, 0) << level;
    int file = openat(next, "f", O_WRONLY | O_CREAT, 0000);
    if (file >= 0) close(file);
    close(fd);
    fd = next;
  }
  close(fd);
  rlimit old{}, few{};
  getrlimit(RLIMIT_NOFILE, &old);
  few = old;
  few.rlim_cur = 64;  // far fewer descriptors than levels
  setrlimit(RLIMIT_NOFILE, &few);
  bool removed = remove_tree(dir);
  setrlimit(RLIMIT_NOFILE, &old);
  EXPECT_TRUE(removed);
  EXPECT_FALSE(fs::exists(dir));
}

// The first-run defect: a checkout in a folder only its owner may enter (root's
// home, mktemp -d). The sandboxed user must still see the files it is shown.
TEST(Sandbox, ShowsFilesInAFolderTheSandboxedUserCannotEnter) {
  auto status = detect_sandbox(SandboxMode::automatic, /*seccomp_built=*/false);
  if (!status.namespaces) GTEST_SKIP() << "bwrap cannot create namespaces here; NOT counted as passed";
  auto dir = fresh_dir("grader-private-test");
  fs::permissions(dir, fs::perms::owner_all);  // 0700, as /root and mktemp -d
  fs::create_directories(dir / "inner");
  std::ofstream(dir / "inner" / "shown.txt") << "visible";
  fs::permissions(dir / "inner" / "shown.txt",
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  std::ofstream(dir / "inner" / "hidden.txt") << "hidden";
  auto scratch = scratch_base() / ("judge-test-" + std::to_string(getpid()));
  fs::create_directories(scratch);
  if (status.drop_to_nobody) {
    ASSERT_EQ(chown(scratch.c_str(), kNobody, kNobody), 0);
  }
  Confinement view;
  view.read_only = {(dir / "inner" / "shown.txt").string()};
  view.writable = view.work_dir = scratch.string();
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c",
               "cat " + (dir / "inner" / "shown.txt").string() + "; cat " + (dir / "inner" / "hidden.txt").string() +
                   " 2>/dev/null || echo ' no hidden'; touch made && echo ' wrote'"};
  sandbox_child(status, view, spec);
  auto outcome = run_child(spec);
  EXPECT_EQ(outcome.stdout_text, "visible no hidden\n wrote\n") << outcome.stderr_text;
  EXPECT_TRUE(fs::exists(scratch / "made"));
  EXPECT_TRUE(remove_tree(scratch));
  fs::remove_all(dir);
}

TEST(Sandbox, UnreadableShownFileIsTheGradersFaultWithTheFix) {
  auto status = detect_sandbox(SandboxMode::automatic, /*seccomp_built=*/false);
  if (!status.drop_to_nobody) GTEST_SKIP() << "needs root (the sandboxed steps run as nobody); NOT counted as passed";
  auto dir = fresh_dir("grader-unreadable-test");
  std::ofstream(dir / "private.h") << "//";
  fs::permissions(dir / "private.h", fs::perms::owner_read | fs::perms::owner_write);
  Confinement view;
  view.read_only = {(dir / "private.h").string()};
  ChildSpec spec;
  spec.argv = {"/bin/true"};
  try {
    sandbox_child(status, view, spec);
    ADD_FAILURE() << "an unreadable file was shown";
  } catch (const GraderFault& fault) {
    std::string message = fault.what();
    EXPECT_NE(message.find((dir / "private.h").string()), std::string::npos) << message;
    EXPECT_NE(message.find("chmod o+rX"), std::string::npos) << message;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace grader

// An expected value that underflowed (exp of a far-below-maximum score) is
// shown as ~0: the evidence never prints a subnormal number like 7.6e-315.
TEST(Comparisons, UnderflowedValuesAreShownAsZero) {
  auto expected = at::tensor({7.64179e-315, 0.25}, at::kDouble);
  auto got = at::tensor({1.0, 0.25}, at::kDouble);
  auto result = grader::compare(expected, got, grader::Tolerance{1e-6, 1e-7});
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.detail.find("expected ~0, got 1"), std::string::npos) << result.detail;
  EXPECT_EQ(result.detail.find("e-315"), std::string::npos) << result.detail;
  EXPECT_TRUE(grader::compare(expected, at::tensor({0.0, 0.25}, at::kDouble), grader::Tolerance{1e-6, 1e-7}).ok);
}

// What a device-mismatch error from learner code is read as (the GPU's
// messages, as LibTorch 1.13 and 2.x word them), and what is no such error.
// Memory measured from outside (one row per rule): beyond the model solution's
// peak by more than the allowance is a finding; within it, or not measured, none.
TEST(OutsideMemory, BeyondTheModelSolutionsPeakByMoreThanTheAllowance) {
  struct Row {
    uint64_t learner, control;
    std::string unavailable;
    bool finding;
  };
  const double allowance = 4 << 20;
  const std::vector<Row> rows = {
      {20 << 20, 12 << 20, "", true},      // 8 MiB more: the score matrix
      {15 << 20, 12 << 20, "", false},     // 3 MiB more: within
      {10 << 20, 12 << 20, "", false},     // less than the model solution
      {40 << 20, 12 << 20, "no cgroup", false},  // not measured here
      {40 << 20, 0, "", false},            // no peak for the model solution
  };
  for (const auto& row : rows) {
    grader::OutsideMemory memory;
    memory.learner_peak = row.learner;
    memory.control_peak = row.control;
    memory.unavailable = row.unavailable;
    EXPECT_EQ(grader::kit::held_beyond(memory, allowance).has_value(), row.finding) << row.learner;
  }
}

// The CPU time of one-token calls against their cached tokens (one row per
// rule): pairs of calls next to each other in time, 96 tokens cached apart; the
// median growth per token, read past a few pairs slowed apart, in units of one
// D x D projection (2 us here); kReprojectionFloor (4) or more is a finding.
TEST(CallCpuTime, GrowthPerCachedTokenInProjections) {
  using grader::kit::CpuPair;
  // 8 pairs: a constant per call that drifts with the machine (both calls of a
  // pair alike), and `per_token` for each token cached.
  auto pairs = [](double per_token) {
    std::vector<CpuPair> made;
    for (int i = 0; i < 8; ++i) {
      const double drift = 300e-6 * (1 + 0.5 * (i % 3));
      made.push_back({8.0 + i, drift + per_token * (8 + i), 104.0 + i, drift + per_token * (104 + i)});
    }
    return made;
  };
  struct Row {
    std::string what;
    std::vector<CpuPair> pairs;
    std::optional<double> growth;  // seconds per token
    bool finding;
  };
  auto slowed = pairs(0.3e-6);
  slowed[2].far_seconds += 900e-6;  // one call slowed alone
  slowed[5].near_seconds += 900e-6;
  const std::vector<Row> rows = {
      {"attention over the cache only", pairs(0.3e-6), 0.3e-6, false},
      {"the same, a busy machine for a while", slowed, 0.3e-6, false},
      {"an allocator's work on a growing heap", pairs(4.6e-6), 4.6e-6, false},
      {"values projected again in loops", pairs(40e-6), 40e-6, true},
      {"at the floor, just", pairs(8.0e-6), 8.0e-6, true},
      {"faster with more cached, a little", pairs(-0.5e-6), -0.5e-6, false},
      {"work done by the other module's calls", pairs(-68e-6), -68e-6, true},
      {"no pairs", {}, std::nullopt, false},
      {"pairs with the same tokens cached", {{8, 1e-3, 8, 2e-3}}, std::nullopt, false},
  };
  for (const auto& row : rows) {
    const auto growth = grader::kit::cpu_growth_per_token(row.pairs);
    ASSERT_EQ(growth.has_value(), row.growth.has_value()) << row.what;
    if (!growth) continue;
    EXPECT_NEAR(*growth, *row.growth, 1e-9) << row.what;
    EXPECT_EQ(grader::kit::projections_per_token(*growth, 2e-6).has_value(), row.finding) << row.what;
  }
  EXPECT_FALSE(grader::kit::projections_per_token(1.0, 0.0).has_value());  // no unit: no finding
}

// A loop over heads (one row per rule): more operators at more heads by any
// count is a finding, the count of the code's own calls only where both cases
// were traced; so are more matrix products than kProductCeiling (10).
TEST(OperatorGrowth, MoreOperatorsAtMoreHeads) {
  using grader::kit::OperatorCount;
  struct Row {
    OperatorCount few, many;
    bool grows;
  };
  const std::vector<Row> rows = {
      {{12, 9, true, 6}, {12, 9, true, 6}, false},     // vectorised: the same operators
      {{12, 9, true, 6}, {36, 9, true, 6}, true},      // a loop of operators no name list holds (at::mv)
      {{12, 9, true, 6}, {12, 21, true, 6}, true},     // a loop of matmuls
      {{12, 9, false, 6}, {36, 9, false, 6}, false},   // no forward scope traced: the names decide
      {{12, 9, true, 6}, {10, 9, true, 6}, false},     // fewer is no loop
      {{12, 9, true, 8}, {12, 9, true, 20}, true},     // products made inside another operator
      {{40, 9, true, 36}, {40, 9, true, 36}, true},    // a loop over 16 slots, whatever the heads
      {{12, 9, true, 4}, {12, 9, true, 4}, false},     // fused projections
  };
  for (const auto& row : rows) {
    EXPECT_EQ(grader::kit::operators_grow(row.few, row.many) || grader::kit::too_many_products(row.few, row.many),
              row.grows)
        << row.many.own << " " << row.many.named << " " << row.many.products;
  }
}

// What a probe over candidates reads (one row per rule): one clear value, none
// within tolerance, or several it cannot tell apart (a first token with one key
// matches at every position, to rounding): not a finding.
TEST(ProbeReading, OneNoneOrSeveral) {
  using Kind = grader::kit::ProbeReading::Kind;
  struct Row {
    std::vector<std::pair<double, int64_t>> errors;
    Kind kind;
    int64_t value;
  };
  const std::vector<Row> rows = {
      {{{0.3, 0}, {0.0, 1}, {0.2, 2}}, Kind::one, 1},          // exact at 1
      {{{1e-16, 0}, {0.3, 1}}, Kind::one, 0},                  // rounding at 0, far elsewhere
      {{{1e-16, 0}, {2e-16, 1}, {1e-16, 2}}, Kind::several, 0},  // every position, to rounding
      {{{0.0, 3}, {0.0, 4}}, Kind::several, 3},                // exactly the same at two
      {{{1e-9, 0}, {5e-8, 1}}, Kind::several, 0},              // within tolerance both
      {{{1e-8, 0}, {5e-7, 1}}, Kind::several, 0},              // apart, but not 100 times
      {{{0.2, 0}, {0.3, 1}}, Kind::none, 0},                   // nowhere
      {{}, Kind::none, 0},
  };
  for (const auto& row : rows) {
    const auto reading = grader::kit::read_probe(row.errors, 1e-7);
    EXPECT_EQ(reading.kind, row.kind) << row.errors.size();
    if (row.kind != Kind::none) EXPECT_EQ(reading.value, row.value);
  }
}

TEST(DeviceMismatch, NamesTheOperatorOrItsArguments) {
  auto old_style = grader::kit::device_mismatch(
      "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! (when "
      "checking argument for argument mask in method wrapper_CUDA__masked_fill)");
  ASSERT_TRUE(old_style.has_value());
  EXPECT_EQ(*old_style, "masked_fill (its argument mask)");
  auto new_style = grader::kit::device_mismatch(
      "expected self and mask to be on the same device, but got mask on cpu and self on cuda:0");
  ASSERT_TRUE(new_style.has_value());
  EXPECT_EQ(*new_style, "an operator (mask on cpu and self on cuda:0)");
  EXPECT_FALSE(grader::kit::device_mismatch("mat1 and mat2 shapes cannot be multiplied (10x3 and 4x5)").has_value());
  EXPECT_FALSE(grader::kit::device_mismatch("").has_value());
}
