// Hostile: allocates and touches memory without bound, 64 MiB at a time, and
// never frees it. The memory cgroup kills the process: verdict memory_limit.
#include "sdpa.h"

#include <cstring>
#include <memory>
#include <vector>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  constexpr size_t kBlock = size_t{64} << 20;
  static std::vector<std::unique_ptr<char[]>> hoard;
  while (true) {
    hoard.emplace_back(new char[kBlock]);
    std::memset(hoard.back().get(), 0x5a, kBlock);
  }
}
