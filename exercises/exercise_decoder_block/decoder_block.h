// Fixed interface for exercise_decoder_block. Do not edit: the grader compiles
// your decoder_block.cpp against this header.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

// A transformer decoder block with post-LayerNorm, the order of the 2017 paper:
//
//   x = norm1(x + dropout1(self_attn(x, x, x, causal mask)))
//   x = norm2(x + dropout2(multihead_attn(x, memory, memory, memory_mask)))
//   x = norm3(x + dropout3(linear2(dropout(GELU(linear1(x))))))
//
// Self-attention is causal: position i attends to positions 0..i only.
// Cross-attention takes its queries from the decoder and its keys and values
// from the encoder's output (memory), whose padding it must not attend to.
// Built from LibTorch's modules, registered under exactly these names (the
// grader loads weights by name, as torch::nn::TransformerDecoderLayer names them):
//   self_attn, multihead_attn   MultiheadAttention(d_model, num_heads), their own dropout left at 0
//   linear1, linear2            Linear(d_model, d_ff), Linear(d_ff, d_model)
//   norm1, norm2, norm3         LayerNorm over d_model, eps 1e-5
//   dropout, dropout1, dropout2, dropout3   Dropout(dropout)
// GELU is the exact one (torch::gelu). torch::nn::MultiheadAttention takes
// (length, B, d_model) tensors; a key_padding_mask (B, M), bool, true where a
// key must be ignored; and an attn_mask (N, N) that LibTorch's C++ module ADDS
// to the scores: a float mask, -inf where a query may not attend and 0
// elsewhere (a bool one would add 1 and mask nothing).
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
