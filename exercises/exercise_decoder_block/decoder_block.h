// Fixed interface for exercise_decoder_block. Do not edit: the grader compiles
// your decoder_block.cpp against this header.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

// A transformer decoder block: the decoder layer of the 2017 paper ("Attention
// Is All You Need"), with the paper's arrangement of attention, feed-forward
// network, residual connections, LayerNorms and dropout, and the exact GELU
// (torch::gelu) as the feed-forward activation instead of ReLU. x is the
// decoder's input, memory the encoder's output: no position of x may read a
// later one, and no position may attend to the memory's padding.
// Built from LibTorch's modules, registered under exactly these names (the
// grader loads weights by name, as torch::nn::TransformerDecoderLayer names them):
//   self_attn                   MultiheadAttention(d_model, num_heads), the self-attention
//   multihead_attn              MultiheadAttention(d_model, num_heads), the cross-attention
//                               (both with their own dropout left at 0)
//   linear1, linear2            Linear(d_model, d_ff), Linear(d_ff, d_model)
//   norm1, norm2, norm3         LayerNorm over d_model, eps 1e-5
//   dropout, dropout1, dropout2, dropout3   Dropout(dropout)
// With the same weights it computes what torch::nn::TransformerDecoderLayer
// (not allowed here) with activation kGELU computes given a causal mask and the
// memory's padding, except for the attentions' internal dropout.
struct DecoderBlockImpl : torch::nn::Module {
  DecoderBlockImpl(int64_t d_model, int64_t num_heads, int64_t d_ff, double dropout = 0.1);

  // x: (B, N, d_model), memory: (B, M, d_model) -> (B, N, d_model).
  // memory_mask: undefined (no padding) or (B, 1, 1, M) with 1 for a real
  // memory position and 0 for padding (the convention of exercise_sdpa).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& memory_mask = {});

  torch::nn::MultiheadAttention self_attn{nullptr};
  torch::nn::MultiheadAttention multihead_attn{nullptr};
  torch::nn::Linear linear1{nullptr};
  torch::nn::Linear linear2{nullptr};
  torch::nn::LayerNorm norm1{nullptr};
  torch::nn::LayerNorm norm2{nullptr};
  torch::nn::LayerNorm norm3{nullptr};
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Dropout dropout1{nullptr};
  torch::nn::Dropout dropout2{nullptr};
  torch::nn::Dropout dropout3{nullptr};
};
TORCH_MODULE(DecoderBlock);
