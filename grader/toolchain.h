// How to compile a submission exactly like the grader's own exercise drivers
// were compiled: written by CMake at configure time (toolchain.txt in the build
// folder), read by the grader at grade time.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace grader {

struct Toolchain {
  std::string cxx;                                       // the C++ compiler
  std::string nm;                                        // lists the symbols of the compiled submission
  std::vector<std::string> flags;                        // language level, defines, include folders, options
  std::vector<std::string> system_include_dirs;          // where LibTorch's headers may come from
  std::filesystem::path runner;                          // the child-process runner executable
  std::map<std::string, std::filesystem::path> drivers;  // exercise id -> driver object file
};

// Throws GraderFault when the file is missing or incomplete.
Toolchain load_toolchain(const std::filesystem::path& file);

}  // namespace grader
