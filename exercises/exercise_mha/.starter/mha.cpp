// exercise_mha: implement multi-head attention (self- and cross-attention, with
// an optional mask) as a LibTorch module.
// Read README.md in this folder, then run:  ./grade exercise_mha
#include "mha.h"

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t d_model, int64_t num_heads)
    : d_model(d_model), num_heads(num_heads), d_k(num_heads > 0 ? d_model / num_heads : 0) {
  // 1. refuse a d_model that num_heads does not divide (TORCH_CHECK, with a message
  //    that says why).
  // 2. create and register q_linear, k_linear, v_linear and out_linear, each a
  //    Linear(d_model, d_model), under exactly those names.
  TORCH_CHECK(false, "not implemented yet: MultiHeadAttentionImpl constructor (edit exercises/exercise_mha/mha.cpp)");
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& key,
                                              const torch::Tensor& value, const torch::Tensor& mask) {
  // 1. project: q_linear(query), k_linear(key), v_linear(value).
  // 2. split into heads: (B, N, d_model) -> (B, N, H, d_k) -> (B, H, N, d_k).
  //    The queries have Nq = query.size(1) tokens, the keys and values
  //    Nk = key.size(1), which may differ (cross-attention).
  // 3. scores = Q K^T / sqrt(d_k), shape (B, H, Nq, Nk).
  // 4. if mask.defined(): scores where mask == 0 become -inf, before the softmax.
  //    The mask broadcasts: (B, 1, 1, Nk), (Nq, Nk), (B, H, Nq, Nk), ...
  // 5. softmax over the keys, then weights times values: (B, H, Nq, d_k).
  // 6. merge the heads back to (B, Nq, d_model) (transpose, then contiguous()
  //    before view()), and apply out_linear.
  TORCH_CHECK(false, "not implemented yet: MultiHeadAttentionImpl::forward (edit exercises/exercise_mha/mha.cpp)");
}
