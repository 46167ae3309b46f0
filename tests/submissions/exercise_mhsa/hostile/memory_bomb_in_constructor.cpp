// Hostile: the constructor registers every module correctly, then allocates and
// touches memory without bound (64 MiB blocks, never freed). The memory cgroup
// kills the process: verdict memory_limit.
#include "mhsa.h"

#include <cstring>
#include <memory>
#include <vector>

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim must be divisible by num_heads");
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));

  constexpr size_t kBlock = size_t{64} << 20;
  static std::vector<std::unique_ptr<char[]>> hoard;
  while (true) {
    hoard.emplace_back(new char[kBlock]);
    std::memset(hoard.back().get(), 0x5a, kBlock);
  }
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) { return x; }
