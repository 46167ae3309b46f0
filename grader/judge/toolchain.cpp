#include "judge/toolchain.h"

#include <fstream>
#include <sstream>

#include "base/errors.h"

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
    else if (key == "readelf")
      toolchain.readelf = value;
    else if (key == "addr2line")
      toolchain.addr2line = value;
    else if (key == "flags_file")
      toolchain.flags_file = value;
    else if (key == "include")
      toolchain.system_include_dirs.push_back(value);
    else if (key == "seccomp")
      toolchain.seccomp = value == "1";
    else if (key == "library_dir")
      toolchain.library_dirs.push_back(value);
    else if (key == "runner")
      toolchain.runner = value;
    else if (key == "prelude")
      toolchain.prelude = value;
    else if (key == "pch_support")
      toolchain.pch_support = value;
    else if (key == "link_option")
      toolchain.link_options.push_back(value);
    else if (key == "link_command")
      toolchain.link_command.push_back(value);
    else if (key == "torch_module")
      toolchain.torch_module = value;
    else if (key == "torch_module_map")
      toolchain.torch_module_map = value;
    else if (key == "pch_base")
      toolchain.pch_base = value;
    else if (key == "torch_api_header")
      toolchain.torch_api_header = value;
    else if (key == "torch_api_library")
      toolchain.torch_api_library = value;
    else if (key == "nvcc")
      toolchain.nvcc = value;
    else if (key == "nvcc_arch")
      toolchain.nvcc_arch = value;
    else if (key == "cuda_root")
      toolchain.cuda_root = value;
    else if (key == "cudart_dir")
      toolchain.cudart_dir = value;
    else if (key == "driver" || key == "pch" || key == "api_pch" || key == "inline_reach") {
      std::istringstream fields(value);
      std::string exercise, path;
      fields >> exercise >> path;
      auto& paths = key == "driver"  ? toolchain.drivers
                    : key == "pch"   ? toolchain.pchs
                    : key == "api_pch" ? toolchain.api_pchs
                                       : toolchain.inline_reaches;
      paths[exercise] = path;
    }
  }
  if (toolchain.cxx.empty() || toolchain.runner.empty() || toolchain.flags_file.empty()) {
    throw GraderFault(file.string() + " is incomplete: rebuild the grader (./grade does it)");
  }
  return toolchain;
}

}  // namespace grader
