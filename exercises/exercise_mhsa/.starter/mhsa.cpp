// exercise_mhsa: implement multi-head self-attention as a LibTorch module.
// Read README.md in this folder, then run:  ./grade exercise_mhsa
#include "mhsa.h"

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  // 1. refuse a dim that num_heads does not divide, with a clear message.
  // 2. create and register q_proj, k_proj, v_proj, out_proj (Linear(dim, dim))
  //    and dropout (Dropout(dropout)) under exactly those names.
  TORCH_CHECK(false, "not implemented yet: MultiHeadSelfAttentionImpl constructor (edit exercises/exercise_mhsa/mhsa.cpp)");
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  // 1. project x to queries, keys and values.
  // 2. split the last dimension into heads: (B, N, D) -> (B, H, N, head_dim).
  // 3. scores = q k^T / sqrt(head_dim); softmax over the keys; dropout on the weights.
  // 4. weights times values, merge the heads back to (B, N, D), output projection.
  TORCH_CHECK(false, "not implemented yet: MultiHeadSelfAttentionImpl::forward (edit exercises/exercise_mhsa/mhsa.cpp)");
}
