// exercise_sdpa: implement scaled dot-product attention.
// Read README.md in this folder, then run:  ./grade exercise_sdpa
#include "sdpa.h"

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  // 1. scores: query times key transposed over the last two dimensions.
  // 2. scale the scores by 1 / sqrt(d_k), where d_k = query.size(-1).
  // 3. if mask is defined, make every position where mask == 0 impossible to attend.
  // 4. softmax over the key dimension gives the attention weights.
  // 5. output = weights times value. Return {output, weights}.
  TORCH_CHECK(false, "not implemented yet: scaled_dot_product_attention (edit exercises/exercise_sdpa/sdpa.cpp)");
}
