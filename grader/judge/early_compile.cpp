#include "judge/early_compile.h"

#include <fstream>
#include <iomanip>
#include <random>
#include <sstream>

#include "judge/compile_step.h"
#include "base/errors.h"

namespace grader {
namespace fs = std::filesystem;
namespace {

// What a compile ahead compiles (EarlyCompile): class templates of the
// standard library instantiated for a type of its own, which makes the
// compiler load what the precompiled header holds of them (the first use of
// the header costs every compile about 0.3 s, whatever the source), then the
// source itself, from the pipe on fd 3, through a link whose name the source
// cannot know (so its own `#include "/dev/fd/3"` is refused, as in a compile
// of the file itself). It defines nothing a submission can see or call.
const char* const kAheadStub = R"(// grade watch: compiled ahead of the next save (grader/judge/early_compile.cpp)
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
  if (auto library = toolchain.drivers.find(exercise.id); library != toolchain.drivers.end())
    linker_ = EarlyLink::start(step, toolchain, library->second, pch_, work_dir / "submission.so");
}

EarlyCompile::~EarlyCompile() = default;

bool EarlyCompile::waiting() const { return child_ && child_->waiting(); }

std::vector<std::string> EarlyCompile::key_argv() const {
  auto argv = argv_;
  for (auto& arg : argv) arg = replace_all(arg, token_, "<token>");
  return argv;
}

const char* EarlyCompile::stub_text() { return kAheadStub; }

ChildOutcome EarlyCompile::finish(const std::string& text, const fs::path& source) {
  auto outcome = child_->finish(ahead_source(text, source));
  outcome.stderr_text = without_stub_lines(outcome.stderr_text, stub_);
  return outcome;
}

}  // namespace grader
