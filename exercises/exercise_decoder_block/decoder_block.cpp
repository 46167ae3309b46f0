// exercise_decoder_block: the post-LayerNorm transformer decoder block.
// Read README.md in this folder, then run:  ./grade exercise_decoder_block
#include "decoder_block.h"

DecoderBlockImpl::DecoderBlockImpl(int64_t d_model, int64_t num_heads, int64_t d_ff, double dropout) {
  // 1. register self_attn and multihead_attn (MultiheadAttention), linear1, linear2,
  //    norm1..norm3 (LayerNorm over d_model) and the four Dropouts, under the header's names.
  TORCH_CHECK(false, "not implemented yet: DecoderBlockImpl (edit exercises/exercise_decoder_block/decoder_block.cpp)");
}

torch::Tensor DecoderBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& memory,
                                        const torch::Tensor& memory_mask) {
  // 1. the causal mask for self-attention: (N, N) float, -inf where a query may not attend, 0 elsewhere.
  // 2. the memory's key_padding_mask (B, M) from memory_mask, if it is defined.
  // 3. self-attention, dropout1, residual, norm1 (in (length, B, d_model) layout).
  // 4. cross-attention: queries from step 3, keys and values from the memory; dropout2, residual, norm2.
  // 5. the FFN, dropout3, residual, norm3; back to (B, N, d_model).
  TORCH_CHECK(false, "not implemented yet: DecoderBlockImpl::forward");
}
