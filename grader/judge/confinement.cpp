#include "judge/confinement.h"

namespace grader {
namespace fs = std::filesystem;

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
  if (auto api = toolchain.api_pchs.find(exercise.id); api != toolchain.api_pchs.end())
    confinement.read_only.push_back(api->second.string());
  for (const auto& file :
       {toolchain.torch_module, toolchain.torch_module_map, toolchain.torch_api_header, toolchain.torch_api_library}) {
    if (!file.empty()) confinement.read_only.push_back(file);
  }
  confinement.writable = confinement.work_dir = scratch.string();
  return confinement;
}

}  // namespace grader
