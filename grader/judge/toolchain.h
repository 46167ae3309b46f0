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
  std::string cxx;                                       // the compiler for submissions
  std::string readelf;                                   // lists the symbols of the compiled submission
  std::string addr2line;  // maps a learner frame to its file and line (judge/error_place.h); may be empty
  std::filesystem::path flags_file;                      // response file: language level, defines, includes, options
  std::vector<std::string> system_include_dirs;          // where LibTorch's headers may come from
  std::filesystem::path runner;                          // the child-process runner executable
  // exercise id -> what a submission is linked with: the exercise's library
  // (libgrader_<id>.so: driver and precompiled code), or for a CUDA exercise
  // the driver's object file.
  std::map<std::string, std::filesystem::path> drivers;
  std::map<std::string, std::filesystem::path> pchs;     // exercise id -> precompiled interface header
  // What every precompiled header above (and torch_module) is built on, and reads: the prelude and pch_support.h.
  std::string pch_base;
  bool seccomp = false;                                  // the runner has its system-call filter
  std::vector<std::string> library_dirs;                 // LibTorch's libraries (shown to the sandboxed runner)
  std::string prelude;  // grader/prelude.h: force-included first where there is no precompiled header
  std::string pch_support;  // grader/pch_support.h: read with the precompiled headers
  std::vector<std::string> link_options;  // for linking submissions: a faster linker, and what it must refuse
  // The linker's command that `cxx -shared -o @OUTPUT@ @OBJECT@ @LIBRARY@` plus
  // link_options runs (asked of the driver at configure time); empty: link through
  // cxx. @LIBRARY@ stands for the libraries a submission links against (its
  // exercise's, and torch_api_library for code compiled on LibTorch's API module).
  std::vector<std::string> link_command;
  // LibTorch's whole C++ API (<torch/torch.h>) as a prebuilt Clang module
  // (with the prelude and pch_support.h), its module map, and
  // grader/torch_api_support.h, its last header; empty where there is none.
  std::string torch_module;
  std::string torch_module_map;
  std::string torch_api_header;
  // What a submission compiled on that module links to besides its exercise's
  // library: the module's compiled inline functions (and what
  // torch_api_support.h declares extern).
  std::string torch_api_library;
  // exercise id -> what the inline functions the build compiled reach that
  // its symbol rules name (judge/inline_reach.h); none where nothing is precompiled.
  std::map<std::string, std::filesystem::path> inline_reaches;
  // exercise id -> its interface header precompiled on top of that module
  // (what a submission that includes <torch/torch.h> is compiled with).
  std::map<std::string, std::filesystem::path> api_pchs;
  // For exercises whose learner file is a .cu: the CUDA compiler (empty: none
  // was found, and such files are not compiled), the GPU architecture it
  // compiles for ("90"), the toolkit's root (its headers may be included)
  // and where its libcudart is.
  std::string nvcc;
  std::string nvcc_arch;
  std::string cuda_root;
  std::string cudart_dir;
};

// Throws GraderFault when the file is missing or incomplete.
Toolchain load_toolchain(const std::filesystem::path& file);

}  // namespace grader
