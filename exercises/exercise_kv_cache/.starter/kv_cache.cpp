// exercise_kv_cache: implement decoder self-attention with a key/value cache.
// Read README.md in this folder, then run:  ./grade exercise_kv_cache
#include "kv_cache.h"

CachedSelfAttentionImpl::CachedSelfAttentionImpl(int64_t dim, int64_t num_heads)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  // 1. refuse a dim that does not split into num_heads heads of even width.
  // 2. create and register q_proj, k_proj, v_proj and out_proj (Linear D -> D, no bias).
  TORCH_CHECK(false, "not implemented yet: CachedSelfAttentionImpl constructor (edit exercises/exercise_kv_cache/kv_cache.cpp)");
}

torch::Tensor CachedSelfAttentionImpl::forward(const torch::Tensor& x) {
  // 1. project the T new tokens only, split into heads: (B, H, T, head_dim).
  // 2. P = tokens already cached: rotate q and k at positions P .. P + T - 1.
  // 3. append the new keys and values to k_cache and v_cache.
  // 4. scores of the new queries against every cached key, scaled by
  //    1/sqrt(head_dim); hide key j from new token t when j > P + t.
  // 5. softmax over the keys, times the values, merge the heads, out_proj.
  TORCH_CHECK(false, "not implemented yet: CachedSelfAttentionImpl::forward (edit exercises/exercise_kv_cache/kv_cache.cpp)");
}

void CachedSelfAttentionImpl::reset_cache() {
  // Forget the cached keys and values.
  TORCH_CHECK(false, "not implemented yet: CachedSelfAttentionImpl::reset_cache (edit exercises/exercise_kv_cache/kv_cache.cpp)");
}
