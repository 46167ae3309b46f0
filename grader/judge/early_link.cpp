#include "judge/early_link.h"

#include "base/text.h"

namespace grader {
namespace {
constexpr const char* kObjectFromPipe = "/dev/fd/3";
}  // namespace

std::unique_ptr<EarlyLink> EarlyLink::start(const Step& step, const Toolchain& toolchain,
                                            const std::filesystem::path& library, const std::filesystem::path& pch,
                                            const std::filesystem::path& output) {
  if (toolchain.link_command.empty() || library.empty()) return nullptr;
  auto spec = step.spec(linker_argv(toolchain, library, pch, output, kObjectFromPipe));
  spec.request_by_path = true;
  return std::make_unique<EarlyLink>(std::move(spec), output);
}

ChildOutcome EarlyLink::finish(std::string object_bytes, const std::filesystem::path& object) {
  auto outcome = child_.finish(std::move(object_bytes));
  outcome.stderr_text = replace_all(outcome.stderr_text, kObjectFromPipe, object.string());
  return outcome;
}

}  // namespace grader
