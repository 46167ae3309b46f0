// The grader's trusted post-LayerNorm transformer encoder block, in eval mode
// (every dropout is the identity there) or with a dropout dropping everything
// at one place (the variant's drop_*):
//
//   x = norm1(x + self_attn(x, x, x, mask))
//   x = norm2(x + linear2(GELU(linear1(x))))
//
// Parameters by the names torch::nn::TransformerEncoderLayer (and the
// learner's module) registers: self_attn.in_proj_weight (3D, D),
// self_attn.in_proj_bias, self_attn.out_proj.{weight,bias}, linear1.*,
// linear2.*, norm1.*, norm2.*. mask: undefined or broadcastable to
// (B, H, N, N), 0 meaning "do not attend". Tested in tests/reference_test.cpp
// against TransformerEncoderLayer. The variant defaults to the correct block;
// the grader bends one field at a time to replay a known learner mistake.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>

#include "attention.h"
#include "ffn_reference.h"

namespace reference {

// What the post-LN block's FFN is given: h = norm1(x + attention(x)) (right),
// the block's input x, or the residual sum before norm1.
enum class FfnInput { normed_sum, block_input, unnormed_sum };

struct EncoderBlockVariant {
  bool pre_ln = false;  // x + sublayer(norm(x)) for both sub-layers, no norm after
  bool attention_residual = true;
  bool ffn_residual = true;
  double eps = 1e-5;  // LayerNorm's epsilon
  FfnInput ffn_input = FfnInput::normed_sum;  // post-LN only; the residual still adds h
  Activation activation = Activation::gelu;
  MaskStage mask_stage = MaskStage::before_softmax;
  // Dropout at p = 1 at one of its three places (a zero tensor there), as
  // training mode gives when that Dropout's p is 1: the attention output
  // (dropout1), the FFN's hidden activations (dropout), the FFN output (dropout2).
  bool drop_attention_output = false;
  bool drop_ffn_hidden = false;
  bool drop_ffn_output = false;
};

at::Tensor encoder_block(const at::Tensor& x, const at::Tensor& mask, const std::map<std::string, at::Tensor>& p,
                         int64_t num_heads, const EncoderBlockVariant& variant = {});

}  // namespace reference
