// WRONG: looks block-wise, but the blocks of scores are concatenated back
// into the full (B, H, Nq, Nk) matrix before one ordinary softmax.
#include "flash_attention.h"

#include <cmath>
#include <vector>

torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size) {
  const auto Nq = query.size(2), Nk = key.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  auto qpos = torch::arange(Nq, query.options().dtype(torch::kLong)).unsqueeze(1) + (Nk - Nq);
  std::vector<torch::Tensor> blocks;
  for (int64_t start = 0; start < Nk; start += block_size) {
    const auto end = std::min(Nk, start + block_size);
    auto s = torch::matmul(query, key.slice(2, start, end).transpose(-2, -1)) * scale;
    if (causal) s = s.masked_fill(torch::arange(start, end, qpos.options()).unsqueeze(0) > qpos, -INFINITY);
    blocks.push_back(s);
  }
  return torch::matmul(torch::softmax(torch::cat(blocks, -1), -1), value);
}
