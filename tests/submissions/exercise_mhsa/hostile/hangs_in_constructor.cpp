// Hostile: the constructor waits forever.
#include "mhsa.h"

#include <chrono>
#include <thread>

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(dim / num_heads) {
  while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) { return x; }
