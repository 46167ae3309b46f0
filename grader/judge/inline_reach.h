// What LibTorch's inline functions reach, where the grader compiles them
// instead of the submission. The precompiled headers are built with
// -fmodules-codegen (grader/pch_support.h, LibTorch's API module): their
// inline functions are compiled once, into objects of the build
// (build/pch/*.o), and a submission's object only imports them by name. Its
// symbol table then names the inline function it calls, not what that
// function calls inside (TorchScript's Operator::getOperationForDispatchKey
// calls the dispatcher by hand; its own name says nothing of it). The build
// reads those objects' relocations (which symbol each defined symbol's bytes
// refer to) and writes, per exercise, every symbol a submission could import
// together with what it reaches that a symbol rule names
// (build/pch/<id>.reach). The audit (symbol_rules.h) then judges an import as
// it would judge the code compiled into the submission.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace grader {

// Defined symbols of relocatable ELF objects and the symbols their bytes refer to.
class ReferenceGraph {
 public:
  // Adds an ELF64 little-endian relocatable object (x86-64, AArch64); throws
  // GraderFault when the file is not one.
  void add_object(const std::filesystem::path& object);
  // Every global or weak symbol the objects define, with the names `matters`
  // holds of the symbols it reaches (through symbols the objects define, any
  // number of steps) that none of them defines: what it calls in LibTorch, the
  // C library, ..., as a submission with that code compiled in would import.
  std::map<std::string, std::vector<std::string>> reaching(
      const std::function<bool(const std::string&)>& matters) const;

 private:
  struct Node {
    std::string name;
    bool exported = false;  // global or weak, defined here: a submission may import it
    bool defined = false;   // defined in one of the objects (else imported by them)
    std::vector<size_t> refers_to;
  };
  size_t node_for(const std::string& key, const std::string& name);
  std::vector<Node> nodes_;
  std::unordered_map<std::string, size_t> by_key_;  // a global name, or "object#index" for a local symbol
};

// The build's file: one line per symbol, "name<TAB>reached<TAB>reached...".
using InlineReach = std::unordered_map<std::string, std::vector<std::string>>;
void write_inline_reach(const std::filesystem::path& file, const std::map<std::string, std::vector<std::string>>& reach);
// Empty for an empty path; throws GraderFault where the file cannot be read.
InlineReach read_inline_reach(const std::filesystem::path& file);

}  // namespace grader
