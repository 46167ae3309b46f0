// Fixed interface for exercise_encoder_block. Do not edit: the grader compiles
// your encoder_block.cpp against this header.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

// A transformer encoder block: the encoder layer of the 2017 paper, in the
// paper's own order, with the feed-forward sub-layer of exercise_feed_forward.
//
// You wrote attention and the FFN in earlier exercises; here the block is built
// from LibTorch's modules, registered under exactly these names (the grader
// loads weights by name, as torch::nn::TransformerEncoderLayer names them):
//   self_attn        MultiheadAttention(d_model, num_heads), its own dropout left at 0
//   linear1, linear2 Linear(d_model, d_ff), Linear(d_ff, d_model), with bias
//   norm1, norm2     LayerNorm({d_model})
//   dropout, dropout1, dropout2   Dropout(dropout), active in training mode only
// torch::nn::TransformerEncoderLayer and TransformerEncoder are not allowed.
struct EncoderBlockImpl : torch::nn::Module {
  EncoderBlockImpl(int64_t d_model, int64_t num_heads, int64_t d_ff, double dropout = 0.1);

  // x: (B, N, d_model) -> (B, N, d_model), in x's dtype and on x's device.
  // mask: undefined (no mask) or (B, 1, 1, N) with 1 for a real token and 0 for
  // padding, which no query may attend to (the convention of exercise_sdpa).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask = {});

  torch::nn::MultiheadAttention self_attn{nullptr};
  torch::nn::Linear linear1{nullptr};
  torch::nn::Linear linear2{nullptr};
  torch::nn::LayerNorm norm1{nullptr};
  torch::nn::LayerNorm norm2{nullptr};
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Dropout dropout1{nullptr};
  torch::nn::Dropout dropout2{nullptr};
};
TORCH_MODULE(EncoderBlock);
