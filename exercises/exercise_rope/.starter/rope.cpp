// exercise_rope: implement rotary position embeddings and attention with them.
// Read README.md in this folder, then run:  ./grade exercise_rope
#include "rope.h"

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  // 1. d = x.size(-1), half = d / 2; positions offset, offset + 1, ... for the N tokens.
  // 2. theta_i = 10000^(-2i / d) for i = 0 .. half - 1, and the angles position * theta_i: (N, half).
  // 3. split x into its halves x1 = x[..., :half] and x2 = x[..., half:].
  // 4. return cat(x1 * cos - x2 * sin, x2 * cos + x1 * sin) along the last dimension.
  //    Make every tensor you create with x's dtype and device (x.options()).
  TORCH_CHECK(false, "not implemented yet: apply_rope (edit exercises/exercise_rope/rope.cpp)");
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  // 1. rotate query at query_offset and key at key_offset (value stays as it is).
  // 2. scores = q k^T / sqrt(d); weights = softmax over the keys; output = weights @ value.
  TORCH_CHECK(false, "not implemented yet: rope_attention (edit exercises/exercise_rope/rope.cpp)");
}
