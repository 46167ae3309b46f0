// Fixed interface for exercise_causal_attention. Do not edit: the grader
// compiles your causal_attention.cpp against this header.
#pragma once

#include <torch/types.h>

#include <tuple>

// Causal (decoder) self-attention: no position may receive any information
// from a later position.
//
//   query: (B, H, N, d_k)    key: (B, H, N, d_k)    value: (B, H, N, d_v)
//   in any floating dtype (float64, float32, bfloat16, float16) on any device
//
// Returns (output, attention_weights), in the inputs' dtype and on their device:
//   output: (B, H, N, d_v)    attention_weights: (B, H, N, N), the weights output
//   was computed from; a position's weight on any later position is exactly 0
std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value);
