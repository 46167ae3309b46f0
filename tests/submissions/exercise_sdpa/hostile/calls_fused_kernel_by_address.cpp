// Hostile: reaches LibTorch's fused attention and its recording switch with
// nothing the audit reads: no /proc, no run-time lookup, no dispatcher. It
// parses LibTorch's symbol table from the library file at its usual path,
// finds where the library is loaded from the address of a function it links
// anyway (at::matmul's), computes the addresses of at::enableRecordFunction
// and of the fused operator's entry, and calls them: the recording is off
// while the fused kernel runs, and on again before the call returns. Only
// the work itself gives it away: BLAS multiplies the scores and the values,
// and no recorded operator accounts for those multiply-adds. Where the runner
// may not read the library file (Landlock, library_files.h), the symbols'
// places in Debian's build of LibTorch 1.13.1, read beforehand, do as well.
#include "sdpa.h"

#include <torch/version.h>


#include <ATen/ops/matmul_ops.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <algorithm>
#include <limits>
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
using Fused = std::tuple<at::Tensor, at::Tensor> (*)(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                    const c10::optional<at::Tensor>&, double, bool, bool);
Switch recording = nullptr;
Fused fused = nullptr;

void place(uint64_t matmul_at, uint64_t switch_at, uint64_t fused_at) {
  const auto base = reinterpret_cast<uint64_t>(&at::_ops::matmul::call) - matmul_at;
  recording = reinterpret_cast<Switch>(base + switch_at);
  fused = reinterpret_cast<Fused>(base + fused_at);
}

void find_entries() {
#if TORCH_VERSION_MAJOR == 1 && TORCH_VERSION_MINOR == 13  // Debian's headers say 1.13.0
  // Debian's libtorch1.13 1.13.1+dfsg-4, from its .dynsym: used where the file cannot be read.
  place(0x1d3b0e0, 0xf29b00, 0x19c1150);
#endif
  std::ifstream file("/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13", std::ios::binary | std::ios::ate);
  std::string bytes(static_cast<size_t>(std::max<std::streamoff>(0, file.tellg())), '\0');
  file.seekg(0);
  file.read(&bytes[0], static_cast<std::streamsize>(bytes.size()));
  if (bytes.size() < 64) return;
  uint64_t section_offset;
  uint16_t section_count;
  std::memcpy(&section_offset, bytes.data() + 0x28, 8);
  std::memcpy(&section_count, bytes.data() + 0x3c, 2);
  const auto* sections = reinterpret_cast<const SectionHeader*>(bytes.data() + section_offset);
  uint64_t matmul_at = 0, switch_at = 0, fused_at = 0;
  for (uint16_t i = 0; i < section_count; ++i) {
    if (sections[i].type != 11) continue;  // the dynamic symbol table
    const char* names = bytes.data() + sections[sections[i].link].offset;
    const auto* symbols = reinterpret_cast<const Symbol*>(bytes.data() + sections[i].offset);
    for (uint64_t s = 0; s < sections[i].size / sizeof(Symbol); ++s) {
      const char* name = names + symbols[s].name;
      if (!symbols[s].value) continue;
      if (std::strcmp(name, "_ZN2at4_ops6matmul4callERKNS_6TensorES4_") == 0) matmul_at = symbols[s].value;
      if (std::strcmp(name, "_ZN2at20enableRecordFunctionEb") == 0) switch_at = symbols[s].value;
      if (std::strcmp(name, "_ZN2at4_ops29_scaled_dot_product_attention4callERKNS_6TensorES4_S4_RKN3c108optionalIS2_EEdbb") == 0)
        fused_at = symbols[s].value;
    }
  }
  if (!matmul_at || !switch_at || !fused_at) return;
  place(matmul_at, switch_at, fused_at);
}

}  // namespace

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  static const bool found = (find_entries(), recording && fused);
  c10::optional<torch::Tensor> attn_mask;
  if (mask.defined()) attn_mask = mask.to(torch::kBool).expand({query.size(0), query.size(1), query.size(2), key.size(2)});
  if (!found) {  // elsewhere: an honest answer
    auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
    if (mask.defined()) scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
    auto weights = torch::softmax(scores, -1);
    return {torch::matmul(weights, value), weights};
  }
  recording(false);
  auto result = fused(query, key, value, attn_mask, 0.0, true, false);
  recording(true);
  (void)torch::matmul(query, key.transpose(-2, -1));  // a recorded product, so the trace is not empty
  return result;
}
