#include "toolchain.h"

#include <fstream>
#include <sstream>

#include "errors.h"

namespace grader {

Toolchain load_toolchain(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw GraderFault("cannot read " + file.string() + ": rebuild the grader (./grade does it)");
  Toolchain toolchain;
  std::string line;
  while (std::getline(in, line)) {
    auto space = line.find(' ');
    if (line.empty() || space == std::string::npos) continue;
    auto key = line.substr(0, space);
    auto value = line.substr(space + 1);
    if (value.empty()) continue;
    if (key == "cxx")
      toolchain.cxx = value;
    else if (key == "nm")
      toolchain.nm = value;
    else if (key == "flag")
      toolchain.flags.push_back(value);
    else if (key == "include") {
      toolchain.flags.push_back("-I" + value);
      toolchain.system_include_dirs.push_back(value);
    } else if (key == "define")
      toolchain.flags.push_back("-D" + value);
    else if (key == "runner")
      toolchain.runner = value;
    else if (key == "driver") {
      std::istringstream fields(value);
      std::string exercise, object;
      fields >> exercise >> object;
      toolchain.drivers[exercise] = object;
    }
  }
  if (toolchain.cxx.empty() || toolchain.runner.empty()) {
    throw GraderFault(file.string() + " is incomplete: rebuild the grader (./grade does it)");
  }
  return toolchain;
}

}  // namespace grader
