#include "judge/inline_reach.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "base/errors.h"
#include "judge/compile_step.h"

namespace grader {
namespace fs = std::filesystem;

namespace {

// A struct of the object's bytes at `offset`, or a fault where it would lie outside them.
template <typename T>
T at(const std::string& bytes, uint64_t offset, const fs::path& object) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T))
    throw GraderFault(object.string() + " is not a whole ELF object (an offset lies outside it)");
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

std::string name_at(const std::string& bytes, uint64_t table, uint64_t table_size, uint64_t offset) {
  if (offset >= table_size || table + table_size > bytes.size()) return "";
  const char* start = bytes.data() + table + offset;
  return std::string(start, strnlen(start, table_size - offset));
}

// The defined symbols of one section that share a range of its bytes
// (aliases: a constructor's complete and base object forms).
struct Range {
  uint64_t begin = 0, end = 0;
  std::vector<size_t> nodes;
};

}  // namespace

size_t ReferenceGraph::node_for(const std::string& key, const std::string& name) {
  auto [found, added] = by_key_.emplace(key, nodes_.size());
  if (added) nodes_.push_back(Node{name, false, false, {}});
  return found->second;
}

void ReferenceGraph::add_object(const fs::path& object) {
  const std::string bytes = read_file(object);
  const auto header = at<Elf64_Ehdr>(bytes, 0, object);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != ELFDATA2LSB || header.e_type != ET_REL || header.e_shentsize != sizeof(Elf64_Shdr)) {
    throw GraderFault(object.string() + " is not a 64-bit little-endian relocatable ELF object");
  }
  uint64_t count = header.e_shnum;
  if (count == 0) count = at<Elf64_Shdr>(bytes, header.e_shoff, object).sh_size;  // many sections
  std::vector<Elf64_Shdr> sections(count);
  for (uint64_t i = 0; i < count; ++i) sections[i] = at<Elf64_Shdr>(bytes, header.e_shoff + i * sizeof(Elf64_Shdr), object);

  const auto symtab = std::find_if(sections.begin(), sections.end(), [](const Elf64_Shdr& s) { return s.sh_type == SHT_SYMTAB; });
  if (symtab == sections.end()) return;  // nothing defined, nothing referred to
  const uint64_t symtab_index = static_cast<uint64_t>(symtab - sections.begin());
  if (symtab->sh_link >= count) throw GraderFault(object.string() + ": its symbol table names no string table");
  const auto& strtab = sections[symtab->sh_link];
  const uint64_t symbols = symtab->sh_entsize ? symtab->sh_size / symtab->sh_entsize : 0;

  // Each symbol as a node (none for sections, files and nameless ones), and
  // the ranges of bytes the sized ones cover, per section.
  std::vector<long> node_of(symbols, -1);
  std::vector<long> section_symbol_of(symbols, -1);  // a section symbol: its section's index
  std::map<uint64_t, std::vector<Range>> ranges;     // section -> ranges
  for (uint64_t i = 1; i < symbols; ++i) {
    const auto sym = at<Elf64_Sym>(bytes, symtab->sh_offset + i * sizeof(Elf64_Sym), object);
    const auto type = ELF64_ST_TYPE(sym.st_info);
    const auto bind = ELF64_ST_BIND(sym.st_info);
    if (type == STT_SECTION) {
      section_symbol_of[i] = sym.st_shndx;
      continue;
    }
    if (type == STT_FILE) continue;
    std::string name = name_at(bytes, strtab.sh_offset, strtab.sh_size, sym.st_name);
    if (name.empty()) continue;
    if (auto version = name.find('@'); version != std::string::npos) name.resize(version);
    const bool defined = sym.st_shndx != SHN_UNDEF && sym.st_shndx < SHN_LORESERVE;
    const bool local = bind == STB_LOCAL;
    const std::string key = local ? object.string() + "#" + std::to_string(i) : name;
    const size_t node = node_for(key, name);
    node_of[i] = static_cast<long>(node);
    if (!defined) continue;
    nodes_[node].defined = true;
    if (!local) nodes_[node].exported = true;
    if (sym.st_size == 0) continue;
    auto& in_section = ranges[sym.st_shndx];
    in_section.push_back(Range{sym.st_value, sym.st_value + sym.st_size, {node}});
  }
  for (auto& [section, list] : ranges) {
    std::sort(list.begin(), list.end(), [](const Range& a, const Range& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    std::vector<Range> merged;
    for (auto& range : list) {
      if (!merged.empty() && merged.back().begin == range.begin && merged.back().end == range.end) {
        merged.back().nodes.push_back(range.nodes.front());
      } else {
        merged.push_back(std::move(range));
      }
    }
    list = std::move(merged);
  }
  // A section symbol (a reference to a section's bytes plus an offset)
  // stands for its section's symbol where the section holds one range only
  // (a function or a table in a section of its own, as inline code is), else
  // for the range that begins where the reference points (the offset, or 4
  // bytes on: a PC-relative call's offset is counted from the instruction's end).
  auto target_nodes = [&](uint64_t symbol, int64_t addend) -> std::vector<size_t> {
    if (symbol >= symbols) return {};
    if (node_of[symbol] >= 0) return {static_cast<size_t>(node_of[symbol])};
    if (section_symbol_of[symbol] < 0) return {};
    auto found = ranges.find(static_cast<uint64_t>(section_symbol_of[symbol]));
    if (found == ranges.end()) return {};
    if (found->second.size() == 1) return found->second.front().nodes;
    for (int64_t where : {addend + 4, addend}) {
      for (const auto& range : found->second) {
        if (static_cast<int64_t>(range.begin) == where) return range.nodes;
      }
    }
    return {};
  };

  for (const auto& section : sections) {
    if (section.sh_type != SHT_RELA || section.sh_link != symtab_index) continue;
    auto in_target = ranges.find(section.sh_info);
    if (in_target == ranges.end() || section.sh_entsize != sizeof(Elf64_Rela)) continue;
    const auto& list = in_target->second;
    for (uint64_t offset = 0; offset + sizeof(Elf64_Rela) <= section.sh_size; offset += sizeof(Elf64_Rela)) {
      const auto rela = at<Elf64_Rela>(bytes, section.sh_offset + offset, object);
      const auto targets = target_nodes(ELF64_R_SYM(rela.r_info), rela.r_addend);
      if (targets.empty()) continue;
      // The range holding the relocated bytes (the last that begins at or before them).
      auto after = std::upper_bound(list.begin(), list.end(), rela.r_offset,
                                    [](uint64_t where, const Range& range) { return where < range.begin; });
      if (after == list.begin()) continue;
      const auto& source = *std::prev(after);
      if (rela.r_offset >= source.end) continue;
      for (size_t from : source.nodes) {
        auto& refers = nodes_[from].refers_to;
        refers.insert(refers.end(), targets.begin(), targets.end());
      }
    }
  }
}

std::map<std::string, std::vector<std::string>> ReferenceGraph::reaching(
    const std::function<bool(const std::string&)>& matters) const {
  std::vector<std::vector<size_t>> referred_by(nodes_.size());
  for (size_t from = 0; from < nodes_.size(); ++from) {
    for (size_t to : nodes_[from].refers_to) referred_by[to].push_back(from);
  }
  std::map<size_t, std::set<std::string>> reached;  // exported node -> names that matter
  std::vector<char> seen(nodes_.size());
  for (size_t hit = 0; hit < nodes_.size(); ++hit) {
    // (An assembler's local label, .L..., is no symbol any code imports.)
    if (nodes_[hit].defined || nodes_[hit].name.rfind(".L", 0) == 0 || !matters(nodes_[hit].name)) continue;
    // Every node from which `hit` is reached: walk the references backwards.
    std::fill(seen.begin(), seen.end(), 0);
    std::vector<size_t> stack = {hit};
    seen[hit] = 1;
    while (!stack.empty()) {
      const size_t node = stack.back();
      stack.pop_back();
      if (nodes_[node].exported) reached[node].insert(nodes_[hit].name);
      for (size_t from : referred_by[node]) {
        if (!seen[from]) {
          seen[from] = 1;
          stack.push_back(from);
        }
      }
    }
  }
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [node, names] : reached) out[nodes_[node].name] = {names.begin(), names.end()};
  return out;
}

void write_inline_reach(const fs::path& file, const std::map<std::string, std::vector<std::string>>& reach) {
  const auto partial = fs::path(file.string() + ".partial");
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    for (const auto& [name, reached] : reach) {
      out << name;
      for (const auto& each : reached) out << '\t' << each;
      out << '\n';
    }
    if (!out.flush()) throw GraderFault("cannot write " + partial.string());
  }
  fs::rename(partial, file);
}

InlineReach read_inline_reach(const fs::path& file) {
  InlineReach reach;
  if (file.empty()) return reach;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw GraderFault("cannot read " + file.string() + ": rebuild the grader (./grade does it)");
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::istringstream parts(line);
    for (std::string field; std::getline(parts, field, '\t');) fields.push_back(field);
    if (fields.size() < 2) continue;
    reach[fields.front()].assign(fields.begin() + 1, fields.end());
  }
  return reach;
}

}  // namespace grader
