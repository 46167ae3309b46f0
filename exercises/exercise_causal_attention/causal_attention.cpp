// exercise_causal_attention: implement causal (decoder) self-attention.
// Read README.md in this folder, then run:  ./grade exercise_causal_attention
#include "causal_attention.h"

std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value) {
  // 1. scores: query times key transposed over the last two dimensions, scaled by 1 / sqrt(d_k).
  // 2. build the causal mask for N = query.size(-2) positions, on the inputs' device
  //    (torch::ones(..., query.options()...) or arange with options): key j is hidden from query i when j > i.
  // 3. give hidden scores a value whose softmax weight is exactly 0, safe in every dtype.
  // 4. softmax over the keys; output = weights times value. Return {output, weights}.
  TORCH_CHECK(false,
              "not implemented yet: causal_self_attention (edit exercises/exercise_causal_attention/causal_attention.cpp)");
}
