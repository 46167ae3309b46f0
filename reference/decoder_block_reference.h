// The grader's trusted post-LayerNorm transformer decoder block, in eval mode
// (every dropout the identity) or with a dropout dropping everything at one
// place (the variant's drop_*):
//
//   x = norm1(x + self_attn(x, x, x, causal))
//   x = norm2(x + multihead_attn(x, memory, memory, memory_mask))
//   x = norm3(x + linear2(GELU(linear1(x))))
//
// Parameters by the names torch::nn::TransformerDecoderLayer (and the
// learner's module) registers: self_attn.{in_proj_weight, in_proj_bias,
// out_proj.weight, out_proj.bias}, multihead_attn.* likewise, linear1.*,
// linear2.*, norm1.*, norm2.*, norm3.*. memory_mask: undefined or (B, 1, 1, M),
// 0 meaning "padding, do not attend". Tested in tests/reference_test.cpp
// against TransformerDecoderLayer. The variant defaults to the correct block;
// the grader bends one field at a time to replay a known learner mistake.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>

#include "attention.h"
#include "ffn_reference.h"

namespace reference {

struct DecoderBlockVariant {
  bool causal = true;                 // self-attention sees no later token
  bool causal_inverted = false;       // the causal mask the wrong way round (later tokens only)
  // A bool causal mask given to LibTorch's C++ MultiheadAttention, which adds
  // attn_mask to the scores: +1 at every later key, nothing masked.
  bool causal_bool_added = false;
  bool causal_on_cross = false;       // the causal mask (top-left aligned) on cross-attention too
  bool cross_from_self = false;       // cross-attention's keys and values from x, not the memory
  MaskStage memory_mask_stage = MaskStage::before_softmax;  // ignored, inverted, ...
  bool pre_ln = false;                // x + sublayer(norm(x)) for all three, no norm after
  bool cross_residual = true;
  Activation activation = Activation::gelu;  // the FFN's (ReLU: the 2017 paper's habit)
  // Dropout at p = 1 at one of its four places (a zero tensor there): the
  // self-attention output (dropout1), the cross-attention output (dropout2),
  // the FFN's hidden activations (dropout), the FFN output (dropout3).
  bool drop_self_output = false;
  bool drop_cross_output = false;
  bool drop_ffn_hidden = false;
  bool drop_ffn_output = false;
};

at::Tensor decoder_block(const at::Tensor& x, const at::Tensor& memory, const at::Tensor& memory_mask,
                         const std::map<std::string, at::Tensor>& p, int64_t num_heads,
                         const DecoderBlockVariant& variant = {});

}  // namespace reference
