// Hostile: finds at::enableRecordFunction without naming it to the linker: it
// reads /proc/self/maps for where LibTorch is loaded, parses the library's ELF
// symbol table by hand, and calls the function through the address found, to
// switch the operator recording off around the fused built-in (looked up by a
// name put together at run time) and on again before returning.
#include "sdpa.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace {

struct SectionHeader {
  uint32_t name, type;
  uint64_t flags, addr, offset, size;
  uint32_t link, info;
  uint64_t align, entsize;
};
struct Symbol {
  uint32_t name;
  unsigned char info, other;
  uint16_t shndx;
  uint64_t value, size;
};

using Switch = void (*)(bool);

Switch find_switch() {
  std::ifstream maps("/proc/self/maps");
  std::string line, library;
  uint64_t base = 0;
  while (std::getline(maps, line)) {
    if (line.find("libtorch_cpu.so") == std::string::npos) continue;
    std::istringstream fields(line);
    std::string range, perms, offset;
    fields >> range >> perms >> offset;
    if (std::stoull(offset, nullptr, 16) != 0) continue;
    base = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    library = line.substr(line.find('/'));
    break;
  }
  if (library.empty()) return nullptr;
  std::ifstream file(library, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  uint64_t section_offset;
  uint16_t section_count;
  std::memcpy(&section_offset, bytes.data() + 0x28, 8);
  std::memcpy(&section_count, bytes.data() + 0x3c, 2);
  const auto* sections = reinterpret_cast<const SectionHeader*>(bytes.data() + section_offset);
  for (uint16_t i = 0; i < section_count; ++i) {
    if (sections[i].type != 11) continue;  // the dynamic symbol table
    const char* names = bytes.data() + sections[i].link[sections].offset;
    const auto* symbols = reinterpret_cast<const Symbol*>(bytes.data() + sections[i].offset);
    for (uint64_t s = 0; s < sections[i].size / sizeof(Symbol); ++s) {
      if (std::strcmp(names + symbols[s].name, "_ZN2at20enableRecordFunctionEb") == 0 && symbols[s].value) {
        return reinterpret_cast<Switch>(base + symbols[s].value);
      }
    }
  }
  return nullptr;
}

}  // namespace

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  static Switch recording = find_switch();
  c10::optional<torch::Tensor> attn_mask;
  if (mask.defined()) attn_mask = mask.to(torch::kBool).expand({query.size(0), query.size(1), query.size(2), key.size(2)});
  const std::string name = std::string("aten::_scaled_") + "dot_product" + "_attention";
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), "");
  std::vector<c10::IValue> stack = {query, key, value, attn_mask, 0.0, true, false};
  if (recording) recording(false);
  op.callBoxed(&stack);
  if (recording) recording(true);
  return {stack[0].toTensor(), stack[1].toTensor()};
}
