// exercise_gqa: implement grouped-query attention as a LibTorch module.
// Read README.md in this folder, then run:  ./grade exercise_gqa
#include "gqa.h"

GroupedQueryAttentionImpl::GroupedQueryAttentionImpl(int64_t dim, int64_t num_heads, int64_t num_kv_heads)
    : dim(dim), num_heads(num_heads), num_kv_heads(num_kv_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  // 1. refuse a dim that num_heads does not divide, and a num_heads that
  //    num_kv_heads does not divide, with clear messages.
  // 2. create and register q_proj, k_proj, v_proj and out_proj (Linear without
  //    bias; k_proj and v_proj are only num_kv_heads * head_dim wide).
  TORCH_CHECK(false, "not implemented yet: GroupedQueryAttentionImpl constructor (edit exercises/exercise_gqa/gqa.cpp)");
}

torch::Tensor GroupedQueryAttentionImpl::forward(const torch::Tensor& x) {
  // 1. project x: queries (B, H, N, head_dim), keys and values (B, KV, N, head_dim).
  // 2. give every query head its group's kv head: (B, KV, N, hd) -> (B, H, N, hd),
  //    query head h reading kv head h / (num_heads / num_kv_heads).
  // 3. softmax(q k^T / sqrt(head_dim)) over the keys, times the values.
  // 4. merge the heads back to (B, N, D) and apply out_proj.
  TORCH_CHECK(false, "not implemented yet: GroupedQueryAttentionImpl::forward (edit exercises/exercise_gqa/gqa.cpp)");
}
